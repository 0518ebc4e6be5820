"""Against an installed Exo-GPU (marker `exo`: skipped where none; run with
`GPUSEM_EXO_PYTHON=PY pytest -m exo tests/exo`; the logs are in results/exo/)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from gpusem.compiler.gpuir_exo.driver import ExoDriver
from gpusem.fuzz.bundle import list_bundles
from gpusem.fuzz.exo.checking import check_text
from gpusem.fuzz.exo.target import ExoTarget

from tests.exo.fake import RecordedExo
from tests.exo.goldens import PROGRAMS

pytestmark = pytest.mark.exo


@pytest.fixture(scope="module")
def driver():
    with ExoDriver() as d:
        yield d


def test_install_is_a_known_build(driver):
    assert driver.install.commit != "unknown", driver.install.describe()


def test_recorded_answers_still_hold(driver):
    """The live Exo classifies every program as the recorded answers the CI tests use
    (a changed Exo shows here first)."""
    recorded = RecordedExo(driver.install.dialect)
    for p in sorted(PROGRAMS.glob("*.gpuir")):
        live = check_text(driver, p.read_text(), {})
        if live.unexpressible:  # not sent to Exo: nothing recorded either
            continue
        old = check_text(recorded, p.read_text(), {})
        assert live.exo is not None and old.exo is not None
        assert (live.exo.verdict.kind, live.exo.verdict.name) == (
            old.exo.verdict.kind, old.exo.verdict.name), p.stem
        assert live.comparison.signature == old.comparison.signature, p.stem


def test_generated_programs_reach_both_verdicts():
    from gpusem.fuzz.exo.census_tally import census_rounds

    t = census_rounds([0], seed=7, per_round=40)
    assert t["programs"] == 40 and t["unexpressible"] < 20
    assert t["exo"]["accept"] >= 5 and t["exo"]["hazard"] >= 3


def test_compile_property_builds(tmp_path):
    from gpusem.fuzz.exo.census_tally import round_programs

    target = ExoTarget(backend="cpu")
    try:
        progs = round_programs(3, 0, 12)
        assert target.prefetch(progs, "compile")
        results = [target.check(p, "compile") for p in progs]
    finally:
        target.close()
    built = [r for r in results if r.status == "skip" and r.kind == "built"]
    assert len(built) >= 3, [(r.status, r.kind, r.detail[:80]) for r in results]
    assert not [r for r in results if r.status == "finding"]


def test_fuzz_campaign_and_replay(tmp_path):
    out = tmp_path / "bundles"
    proc = subprocess.run([sys.executable, "-m", "gpusem", "fuzz", "--target", "exo",
                           "--budget", "25s", "--out", str(out), "--seed", "1"],
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "programs" in proc.stderr
    for b in list_bundles(out)[:2]:
        assert json.loads((b.path / "verdicts.json").read_text())["rule"]
        rep = subprocess.run([sys.executable, "-m", "gpusem", "replay", str(b.path)],
                             capture_output=True, text=True, timeout=300)
        # exit 1 while the bundle reproduces (`git bisect run gpusem replay DIR`)
        assert rep.returncode == 1 and rep.stdout.startswith("reproduces"), rep.stdout


def test_census_jobs_give_each_program_the_verdicts_of_one_check(tmp_path):
    """30 programs through the census machinery (two jobs sharing (branch, round)
    tasks, the rounds kept in a census folder) get the verdict pairs that checking
    each program alone gives them (issue 26 item 3: the census's cuts change no
    verdict)."""
    from gpusem.compiler.gpuir_exo.driver import find_exo_python
    from gpusem.fuzz.exo.census_folder import CensusFolder
    from gpusem.fuzz.exo.census_jobs import run_census
    from gpusem.fuzz.exo.census_tally import round_programs

    rounds, per_round = [0, 1, 2], 10
    with open(tmp_path / "log", "w") as log:
        run_census({"b": find_exo_python()}, {"b": tmp_path / "b"}, 0, rounds, 2,
                   per_round=per_round, log=log)
    got = {str(r): t["program_verdicts"][str(r)]
           for r, t in CensusFolder(tmp_path / "b", 0, per_round).rounds()}
    want: dict[str, list[str]] = {}
    with ExoDriver() as d:
        for r in rounds:
            for k in round_programs(0, r, per_round):
                c = check_text(d, k.source(), k.defines())
                want.setdefault(str(r), []).append(
                    "unexpressible" if c.unexpressible or c.exo is None else
                    f"exo={c.exo.verdict.kind}|paper={c.gpusem['paper'].kind}|"
                    f"fixed={c.gpusem['fixed'].kind}")
    assert got == want
