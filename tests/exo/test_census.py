"""The verdict census's folders, jobs and merging without Exo (CI): a stand-in worker
(fake_worker.py) answers from a hash of each emitted proc, one per branch label, and
gpusem's checker runs for real. Two branches at once on two jobs, resumed over two
runs, must tally exactly what one process checking the same rounds in order tallies:
every count, every verdict pair per program, the same first program per finding;
folders merged with a round in both count it once; a folder of another census (seed,
Exo sources, the generator that draws the programs) is refused with one line (exit
2)."""

from __future__ import annotations

import fcntl
import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gpusem.calculus.errors import BadInput
from gpusem.compiler.gpuir_exo.driver import ExoDriver
from gpusem.fuzz.exo.census_folder import CensusFolder, merge_folders
from gpusem.fuzz.exo.census_jobs import run_census
from gpusem.fuzz.exo.census_tally import census_round, merge, summarise

FAKE = Path(__file__).with_name("fake_worker.py")
SEED, PER_ROUND, ROUNDS = 5, 6, [0, 1, 2]
COUNTS = ("programs", "unexpressible", "exo", "paper", "fixed", "pairs", "coverage",
          "coverage_compared", "by_construct", "mutations", "by_round",
          "unexpressible_constructs", "checked_by_both", "agreement", "coverage_share")


def fake_python(tmp: Path, dialect: str) -> str:
    path = tmp / f"python-{dialect}"
    path.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} {dialect} "$@"\n')
    path.chmod(0o755)
    return str(path)


def plain(x):
    """Counters and dicts alike, as JSON reads them back."""
    return json.loads(json.dumps(x))


def sequential(python: str) -> tuple[dict, dict]:
    """The rounds checked one after another in this process: the census and the
    verdict pair of every program per round."""
    total: dict = {}
    with ExoDriver(python) as d:
        for r in ROUNDS:
            t = census_round(d, SEED, r, PER_ROUND)
            total = merge(total, t) if total else t
    return summarise(total, SEED), total["program_verdicts"]


@pytest.fixture(scope="module")
def censuses(tmp_path_factory, worker_id):
    """The two runs of the census, once a pytest run: under xdist each worker that
    draws a test of this module sets the fixture up (this morning's run: both,
    each starting 4 job processes on 2 cores), so it is built in the run's shared
    temporary folder under a lock by the first and read back (pickled) by the
    others; the tests only read the folders."""
    base = tmp_path_factory.getbasetemp()
    tmp = (base if worker_id == "master" else base.parent) / "census_fixture"
    tmp.mkdir(exist_ok=True)
    with open(tmp / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = tmp / "runs.pickle"
        if not done.exists():
            branches = {b: fake_python(tmp, b) for b in ("pldi26", "endgame")}
            folders = {b: tmp / "census" / b for b in branches}
            try:
                with open(tmp / "log.txt", "w") as log:
                    first = run_census(branches, folders, SEED, [0, 2], jobs=2,
                                       per_round=PER_ROUND, log=log)
                    second = run_census(branches, folders, SEED, ROUNDS, jobs=2,
                                        per_round=PER_ROUND, log=log)
            except BaseException:  # a worker after this one starts from nothing
                shutil.rmtree(tmp / "census", ignore_errors=True)
                raise
            done.write_bytes(pickle.dumps((branches, folders, first, second)))
        return pickle.loads(done.read_bytes())


@pytest.mark.parametrize("branch", ["pldi26", "endgame"])
def test_two_branches_on_shared_jobs_resumed_tally_as_one_process(censuses, branch):
    branches, folders, first, second = censuses
    want, verdicts = sequential(branches[branch])
    assert first[branch]["programs"] == 2 * PER_ROUND
    got = second[branch]
    assert got["programs"] == len(ROUNDS) * PER_ROUND and got["rounds"] == "0-2"
    for key in COUNTS:
        assert plain(got[key]) == plain(want[key]), key
    assert {s: (f["count"], f["first_program"]) for s, f in got["findings"].items()} \
        == {s: (f["count"], f["first_program"]) for s, f in want["findings"].items()}
    folder = CensusFolder(folders[branch], SEED, PER_ROUND)
    assert {str(r): t["program_verdicts"][str(r)] for r, t in folder.rounds()} \
        == verdicts
    assert [run["rounds_added"] for run in folder.meta()["runs"]] == [2, 1]
    # the fake Exo of each branch, not the other's
    assert folder.meta()["install"]["fingerprint"] == f"fake-{branch}"
    assert json.loads((folders[branch] / "census.json").read_text())["programs"] \
        == got["programs"]


def test_merged_folders_count_a_round_once(censuses, tmp_path):
    _, folders, _, second = censuses
    a, b = tmp_path / "a", tmp_path / "b"
    for dst, keep in ((a, (0, 1)), (b, (1, 2))):
        shutil.copytree(folders["pldi26"], dst)
        for f in (dst / "rounds").glob("*.json"):
            if int(f.stem) not in keep:
                f.unlink()
    merged = merge_folders([a, b])
    assert merged["duplicate_rounds"] == [1] and merged["differing_rounds"] == []
    for key in COUNTS:
        assert merged[key] == second["pldi26"][key], key
    assert len(merged["runs"]) == 4  # both folders' two runs


def test_a_run_past_its_seconds_starts_no_round(censuses, tmp_path):
    branches, _, _, _ = censuses
    with open(tmp_path / "log", "w") as log:
        out = run_census({"pldi26": branches["pldi26"]}, {"pldi26": tmp_path / "p"},
                         SEED, ROUNDS, jobs=1, seconds=0, per_round=PER_ROUND, log=log)
    assert out["pldi26"]["programs"] == 0


def test_another_census_is_refused(censuses, tmp_path):
    _, folders, _, _ = censuses
    with pytest.raises(BadInput, match="seed 5"):
        CensusFolder(folders["pldi26"], SEED + 1, PER_ROUND)
    with pytest.raises(BadInput, match="not one census"):
        merge_folders([folders["pldi26"], folders["endgame"]])  # other Exo sources
    # a round drawn by another hypothesis or generator: other programs
    copy = tmp_path / "copy"
    shutil.copytree(folders["pldi26"], copy)
    folder = CensusFolder(copy, SEED, PER_ROUND)
    r, tally = folder.rounds()[0]
    assert tally["generator"].startswith("hypothesis ")
    with pytest.raises(BadInput, match="not the same programs"):
        folder.add_round(9, tally | {"generator": "hypothesis 0.0, generator x"})
    assert folder.done() == set(ROUNDS)
    proc = subprocess.run([sys.executable, "-m", "gpusem.fuzz.exo.census", "--merge",
                           str(folders["pldi26"]), str(folders["endgame"]), "--out",
                           str(tmp_path / "x.json")], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "not one census" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "gpusem.fuzz.exo.census", "--merge",
                           str(tmp_path), "--out", str(tmp_path / "x.json")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "not a census folder" in proc.stderr
