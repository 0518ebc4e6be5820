"""Issue 31.1: a campaign keeps its budget (within 10%) whatever it finds. A finding is
shrunk beside the fuzzing (a process of its own on the local engine, a task of its
own on Dask) and every shrink ends by the budget + 4%; the reports give fuzzing time
and shrinking time apart.

Before the shrinker, a `--budget 20s` campaign with the floor-division fault ran 40 s
(the round stopped while its finding shrank for 34 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusem.fuzz.bundle import read_bundle
from gpusem.fuzz.client import run_campaign
from gpusem.fuzz.engines.local import LocalEngine
from gpusem.fuzz.shrink_jobs import JOB_MARGIN_S
from gpusem.fuzz.targets import register_target
from tests.backends.test_lifetime import gone_within
from tests.fuzz.test_campaign import ToyTarget

BIN = Path(sys.executable).parent
BUDGET = 20

# One xdist worker runs this module's campaigns one after another (`-n` means
# --dist loadgroup: tests/conftest.py): spread over both, two 20 s campaigns (one of them a Dask
# cluster of three workers) ran at once beside each other on two cores, and the
# `command` fixture ran the Dask campaign once per worker. Run alone with -n 2, the
# file failed so on main (stop 39): a finding met at 17.8 s, a shrink never begun.
pytestmark = pytest.mark.xdist_group("budget_wall")


REDUCER_ENTERED = "GPUSEM_TEST_REDUCER_ENTERED"  # a file the endless reducer makes


class EndlessReducer(ToyTarget):
    """The toy, with a reducer that never ends by itself (it ignores its cap and
    SIGTERM's flag): only the shrinker's deadline stops it. It says it was entered (a
    file named by $GPUSEM_TEST_REDUCER_ENTERED, inherited by the spawned shrinker),
    and, as a candidate's g++ would, it starts a process of its own and waits for it
    (its pid written beside that file)."""

    def minimise(self, program, res, prop="compile"):
        if os.environ.get(REDUCER_ENTERED):
            entered = Path(os.environ[REDUCER_ENTERED])
            child = subprocess.Popen(["sleep", "120"])
            entered.with_suffix(".child").write_text(str(child.pid))
            entered.touch()
        while True:
            time.sleep(0.05)


register_target("endless", EndlessReducer)


def fuzz(tmp_path: Path, *extra: str, seed: int = 0) -> tuple[float, dict, str]:
    out = tmp_path / "out"
    env = dict(os.environ, GPUSEM_FAULT="floor-division")
    cmd = [str(BIN / "gpusem"), "fuzz", "--target", "bundl", "--budget", f"{BUDGET}s",
           "--seed", str(seed), "--out", str(out), "--json", str(tmp_path / "r.json"),
           *extra]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    wall = time.monotonic() - t0
    assert proc.returncode == 1, proc.stderr[-2000:]
    return wall, json.loads((tmp_path / "r.json").read_text()), proc.stdout


def times(report: dict) -> dict:
    """What a failed bound names: the report's clocks and the machine's load."""
    return {k: report.get(k) for k in ("seconds", "fuzz_s", "shrink_s")} | {
        "programs": report.get("programs"), "loadavg": os.getloadavg()}


def check_report(report: dict, text: str) -> dict:
    # the report's seconds run from the process's start to the report, the shards'
    # stop included (below: the whole command's wall time)
    assert report["seconds"] <= 1.1 * BUDGET + 2.0, report["seconds"]
    assert report["fuzz_s"] >= BUDGET - 1.0  # the fuzzing went on to the budget
    assert report["shrink_s"] > 0, (report["campaign"].get("engine"),
                                    report["findings"])
    # the wrong value itself; how many programs (and so which other classes of the
    # fault, e.g. a `stale` cell) a 20 s run meets depends on the machine's load and,
    # on Dask, on how the pieces fall (two classes in a loaded suite run of stop 27)
    found = next(f for f in report["findings"]
                 if f["signature"] == "compile:disagree:disagree:out:int:value")
    # found inside the budget, so its shrinking ran beside the fuzzing (shrink_s > 0
    # above); how early depends on the load and the cache (warm_harness)
    assert found["found_after_s"] < report["fuzz_s"]
    assert found["size"] <= found["size_before"]
    assert "s fuzzing, " in text and "s shrinking findings" in text
    return found


def test_a_20s_campaign_that_shrinks_a_finding_ends_within_22s(tmp_path) -> None:
    warm_harness()
    wall, report, text = fuzz(tmp_path)
    check_report(report, text)
    # and the process as a whole: the campaign plus the interpreter's start-up
    assert wall <= 1.1 * BUDGET + 3, (wall, times(report))


DASK_HAND_BACK_S = 3.0
# Seed 1: round 0 meets the wrong value at its 12th program (23 statements; seed 0's
# round 0 has none in its first 20), so the finding comes early even on a cold,
# loaded machine, where a 20 s Dask campaign of seed 0 checked 11-48 programs in all
# and met nothing (stop 31.1, handover: loadavg 6-7.5, both trees); the budget now
# includes the cluster's start, too
DASK_SEED = 1


def warm_harness() -> None:
    """The cpu backend's harness (its precompiled header and runtime object: one per
    harness version in GPUSEM_CACHE_DIR) built before a campaign is timed: cold, they
    took the first batch of the campaigns below seconds past their start, and on a
    loaded 2-core suite run seed 1's finding (round 0, program 12) came 16.5 s into the
    20 s Dask campaign, leaving its shrink 4 s and no step (two cold suite runs of
    stop 39; the report said 8 s then: a piece counted from its own start, fixed in
    tests/fuzz/test_piece_clock.py). Quiet, cold: met at 8.9-11.0 s; warm: 5.4 s.
    What these tests claim is the budget and the shrink beside the fuzzing, not a
    cold harness's build time (tests/backends/test_cpu_runtime_object.py has that)."""
    from gpusem.fuzz.bundl.sample import draw
    from gpusem.fuzz.bundl.target import BundlTarget

    target = BundlTarget()
    try:
        target.prefetch(draw(target.strategy("compile"), 2, seed=3), "compile")
    finally:
        target.close()


@pytest.fixture(scope="module")
def command(tmp_path_factory):
    """`fuzz(..., "--engine", engine, "--jobs", "2", seed=DASK_SEED)`, run once per
    engine for the tests of this module: the Dask test below and the whole command's
    on Dask asserted the same 20 s command twice (21-22 s each in the suite)."""
    runs: dict[str, tuple[float, dict, str] | Exception] = {}

    warm_harness()

    def run(engine: str) -> tuple[float, dict, str]:
        if engine not in runs:
            try:
                runs[engine] = fuzz(tmp_path_factory.mktemp(engine), "--engine",
                                    engine, "--jobs", "2", seed=DASK_SEED)
            except Exception as err:  # noqa: BLE001 - a failed command fails both, once
                runs[engine] = err
        done = runs[engine]
        if isinstance(done, Exception):
            raise done
        return done
    return run


def test_the_dask_engine_keeps_the_budget_while_a_finding_shrinks(command) -> None:
    """Dask (issue 31.1): the same 10% on the workers, plus Dask's hand-backs as seen
    by the client (below). At stop 25 its 20 s campaign ended at
    26-34 s on this machine (a piece's batch check ran on past the budget while its
    findings were confirmed; the whole run was allowed a 15 s tail); with the batch
    check cut at the deadline (`prefetch_until`) its fuzzing ends at 20.4-20.8 s."""
    _, report, text = command("dask")
    # the pieces stop at the budget on their workers; the client counts the
    # fuzzing as ended when the last piece's result is back: 20.4-20.8 s quiet,
    # 22.3 s in a cold-cache two-worker suite run; the shrink task ends by the
    # budget + 4% on its worker, then is handed back (1.2 s quiet, up to 2.5 s with
    # four busy processes on two cores): 3 s allowed for each hand-back
    assert report["fuzz_s"] <= 1.1 * BUDGET + DASK_HAND_BACK_S, report["fuzz_s"]
    assert report["seconds"] <= 1.1 * BUDGET + 2 * DASK_HAND_BACK_S, report["seconds"]
    found = check_report(report | {"seconds": 0.0}, text)  # the other local checks
    # by a task of its own, on the shrink worker, from within a second or two of the
    # meeting (fuzz/engines/handover.py): a step made, or a shrink that ended by
    # itself (a shrink its deadline stopped before any step is not `shrunk`)
    assert found["shrunk"], (found["found_after_s"], found["shrink_s"], found)


# Issue 31.1, the command as the shell times it: a --budget 20s command ends within
# 24 s, and its report says how long it took. The clock starts at the process's
# start (`fuzz/clock.py`), so what is inherent past the budget is the shrink tail
# (4%: 0.8 s), on Dask the hand-back (at most 1 s), the last batch's
# overrun (one g++ build, ~0.7 s) and the stop (the --jobs processes' exit or the
# cluster's: 0.2-0.9 s): 20.8-21.8 s at loadavg 3-7 and 23.5 s once at 8.6 in the
# runs of results/scale/budget_wall_cpu_dev.json, so 10% + 2 s leaves room for a
# loaded 2-core machine. Before, the clock started after the imports and the
# spawned shards' start-up and stopped before the shards' and the cluster's stop:
# the report said 20.3-21.0 s of a 22.1-24.7 s command there.
WALL_MARGIN_S = 0.1 * BUDGET + 2.0
# between the report's clock and the shell's: the process's fork and exec before it
# starts, the summary printed and the interpreter's exit after it stops. `fuzz` reads
# the output through pipes, so the command's helper processes count too: CI of stop
# 46 read 1.01 s on Dask, where multiprocessing's forkserver outlived the command
# tearing its interpreter down (0.27 s idle); the command now stops it (0.04 s idle:
# cli/process_exit.py, tests/cli/test_process_exit.py)
OUTSIDE_REPORT_S = 1.0


@pytest.mark.parametrize("engine", ["dask", "local"])  # dask first: beside the above
def test_the_whole_command_ends_within_its_budget_and_reports_its_wall_time(
        command, engine: str) -> None:
    wall, report, text = command(engine)
    check_report(report, text)  # a finding met early, shrunk beside the fuzzing
    assert wall <= BUDGET + WALL_MARGIN_S, (wall, times(report))
    assert report["seconds"] <= wall, (wall, times(report))
    assert wall - report["seconds"] <= OUTSIDE_REPORT_S, (wall, times(report))


def test_a_shrink_that_outlasts_the_budget_is_cut_at_the_deadline(
        tmp_path, monkeypatch) -> None:
    entered = tmp_path / "reducer-entered"
    monkeypatch.setenv(REDUCER_ENTERED, str(entered))
    spec = {"target_name": "endless", "budget_s": 6.0, "seed": 7,
            "out_dir": str(tmp_path), "round_size": 50}
    summary = run_campaign(spec, LocalEngine(), 1)
    assert summary.seconds <= 1.1 * 6.0, (summary.seconds, summary.fuzz_s,
                                          summary.shrink_s, os.getloadavg())
    assert summary.fuzz_s >= 5.5
    assert {f.signature for f in summary.findings} == {"wrong:big7", "crash:long0"}
    for f in summary.findings:
        meta = read_bundle(f.bundle).meta
        # the first one cut at the deadline, the second never begun: both final and
        # both cut, whether the shrinker's process wrote its own end by the deadline
        # or the shrinker cut it (a race at the deadline: CI at stop 43 met the first,
        # which then left `shrink_cut` out where the second put it in)
        assert meta["state"] == "done" and meta["shrink_cut"] is True, meta
        # `shrunk`: a step made (hypothesis's, before the endless reducer), in both
        assert f.shrunk is meta["shrunk"] is (meta["size"] < meta["size_before"]), meta
    first, second = (next(f for f in summary.findings if f.signature == sig)
                     for sig in ("wrong:big7", "crash:long0"))
    assert first.shrink_s > 0.0
    if entered.exists():
        # the first job reached the endless reducer, so it held the shrinker to the
        # cut: the second was never begun (the shrinker says when it takes a job)
        assert not second.shrunk and second.shrink_s == 0.0, second
        # and what the reducer started was killed with it, not left running (an
        # orphaned g++ outlived a 20 s command by 4-7 s, holding its stdout)
        child = int(entered.with_suffix(".child").read_text())
        assert gone_within(child, 5.0), f"the reducer's process {child} outlived the stop"
    else:
        # a loaded machine: the shrinker's process took the first job within the
        # deadline's last second (its start-up: 4+ s of the 6), the reducer got no
        # time and the job ended by itself; the second then had the rest, if any
        # (CI, stop 39: 0.05 s, then reported as begun by a guess)
        assert second.shrink_s <= JOB_MARGIN_S, second


def test_the_bundl_batch_check_stops_at_its_deadline() -> None:
    """A batch given a deadline already past checks nothing (and says so); with time
    to spare it checks all of them: the campaign counts only what was checked."""
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.bundl.sample import draw

    target = BundlTarget()
    programs = draw(target.strategy("compile"), 6, seed=3)
    assert target.prefetch_until(programs, "compile", time.monotonic() - 1) == 0
    assert target.prefetch_until(programs, "compile", time.monotonic() + 600) == 6
    assert target.prefetch_until(programs, "soundness", None) is None
