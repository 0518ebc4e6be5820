"""The Dask engine (issue 19) on a local cluster of two workers: the local engine's
results for the same seeds, a worker killed mid-piece (its piece retried, every
finding still reported, nothing written twice), and --resume.

The toy target is tests/fuzz/test_campaign.py's: its bugs are known exactly (`big7`,
`long0`), so the findings a campaign must report are known independently of the
engine. The cluster is shared by the tests of this module (starting one costs seconds
on the 2-core CI machine)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from gpusem.calculus.errors import BadInput
from gpusem.fuzz.bundle import list_bundles
from gpusem.fuzz.client import run_campaign
from gpusem.fuzz.engines import pieces
from gpusem.fuzz.engines.dask import DaskEngine
from gpusem.fuzz.engines.dask_cluster import gpu_ids, local_cluster, stop_workers
from gpusem.fuzz.engines.local import LocalEngine
from gpusem.fuzz.targets import CheckResult, register_target

from tests.fuzz.test_by_configuration import ConfigToy
from tests.fuzz.test_campaign import ToyTarget

ROUND, PROGRAMS = 25, 250  # ten rounds: ten pieces of one round


class KillerToy(ToyTarget):
    """The toy, except that the 12th program a worker checks kills that worker
    (SIGKILL: no finally, no goodbye), once per campaign: whoever removes the flag
    file first is the one that dies."""

    checks = 0

    def check(self, program, prop="compile"):
        KillerToy.checks += 1
        flag = os.environ.get("GPUSEM_TEST_KILL_FLAG", "")
        if KillerToy.checks == 12 and flag:
            try:
                os.unlink(flag)
            except FileNotFoundError:
                pass
            else:
                Path(flag + ".killed").write_text(str(os.getpid()))
                os.kill(os.getpid(), signal.SIGKILL)
        return super().check(program, prop)


register_target("toy", ToyTarget)
register_target("killertoy", KillerToy)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    flag = tmp_path_factory.mktemp("kill") / "flag"
    os.environ["GPUSEM_TEST_KILL_FLAG"] = str(flag)  # the workers inherit it
    c = local_cluster("cpu", jobs=2)
    try:
        yield c, flag
    finally:
        stop_workers(c)  # as the engine stops its own (a hung piece: 4 s)
        c.close()
        os.environ.pop("GPUSEM_TEST_KILL_FLAG", None)


def spec(out, **kw) -> dict:
    return {"target_name": "toy", "backend": "cpu", "prop": "compile", "budget_s": 120,
            "seed": 5, "shard": (0, 1), "out_dir": str(out), "round_size": ROUND,
            "max_programs": PROGRAMS} | kw


def dask(cluster) -> DaskEngine:
    return DaskEngine(scheduler=cluster[0].scheduler_address, rounds_per_piece=1)


def found(summary) -> dict[str, tuple[int, bool]]:
    return {f.signature: (f.size, f.shrunk) for f in summary.findings}


def record_lines(out) -> list[dict]:
    path = pieces.record_path(out, "compile", (0, 1))
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_the_local_engines_results_for_the_same_seeds(cluster, tmp_path):
    local = run_campaign(spec(tmp_path / "local"), LocalEngine(), 1)
    remote = run_campaign(spec(tmp_path / "dask"), dask(cluster), 1)
    assert not remote.failed
    assert (remote.programs, remote.invalid) == (local.programs, local.invalid) == (
        PROGRAMS, local.invalid)
    assert local.invalid > 0
    assert found(remote) == found(local) == {"wrong:big7": (2, True),
                                             "crash:long0": (7, True)}
    bundles = list_bundles(tmp_path / "dask")
    assert sorted(b.signature for b in bundles) == ["crash:long0", "wrong:big7"]
    lines = record_lines(tmp_path / "dask")
    assert sorted(tuple(x["window"]) for x in lines) == [(k, k + 1) for k in range(10)]
    assert len({x["worker"] for x in lines}) == 2  # both workers took pieces


def test_a_worker_killed_mid_piece_loses_nothing_and_writes_nothing_twice(
        cluster, tmp_path):
    _, flag = cluster
    clean = run_campaign(spec(tmp_path / "clean", target_name="toy"), dask(cluster), 1)
    flag.write_text("armed")
    killed = run_campaign(spec(tmp_path / "killed", target_name="killertoy"),
                          dask(cluster), 1)
    assert not flag.exists() and Path(f"{flag}.killed").exists()  # a worker died
    assert not killed.failed
    assert killed.programs == clean.programs == PROGRAMS
    assert set(found(killed)) == set(found(clean)) == {"wrong:big7", "crash:long0"}
    lines = record_lines(tmp_path / "killed")
    windows = sorted(tuple(x["window"]) for x in lines)
    assert windows == [(k, k + 1) for k in range(10)]  # the lost piece ran again, once
    wrote = [s for x in lines for s in x["wrote"]]
    assert sorted(wrote) == ["crash:long0", "wrong:big7"]  # each bundle written once
    assert len(list_bundles(tmp_path / "killed")) == 2


def test_resume_runs_only_the_pieces_not_finished(cluster, tmp_path):
    out = tmp_path / "resumed"
    ticks = []

    def stop_after_four(task, s):  # Ctrl-C in the client after four pieces
        ticks.append(s.programs)
        if len(ticks) == 4:
            raise KeyboardInterrupt

    interrupted = _run_interrupted(spec(out), dask(cluster), stop_after_four)
    assert interrupted.interrupted == "SIGINT"
    done_before = {tuple(x["window"]) for x in record_lines(out)}
    assert 4 <= len(done_before) < 10
    rest = run_campaign(spec(out, resume=True), dask(cluster), 1)
    lines = record_lines(out)
    again = [tuple(x["window"]) for x in lines][len(done_before):]
    assert set(again).isdisjoint(done_before)  # nothing finished runs again
    assert sorted(done_before | set(again)) == [(k, k + 1) for k in range(10)]
    whole = run_campaign(spec(tmp_path / "whole"), dask(cluster), 1)
    assert rest.programs == whole.programs == PROGRAMS
    assert rest.invalid == whole.invalid
    assert set(found(rest)) == set(found(whole))
    wrote = [s for x in lines for s in x["wrote"]]
    assert sorted(wrote) == sorted(set(wrote))  # no bundle written twice


def _run_interrupted(s, engine, on_progress):
    """run_campaign with a progress hook that raises (as Ctrl-C would)."""
    from gpusem.fuzz.client import shard_tasks
    from gpusem.fuzz.summary import Summary

    total = Summary()
    events = engine.run(shard_tasks(s, 1), on_progress)
    try:
        for event in events:
            total.merge(event.summary)
    except KeyboardInterrupt:
        total.interrupted = "SIGINT"
    finally:
        events.close()
        engine.close()
    return total


def test_the_bundl_target_on_dask_checks_what_the_local_engine_checks(
        cluster, tmp_path):
    """The real target (g++ and the harness inside the Dask workers): the same
    programs with the same verdicts as on the local engine."""
    s = spec(tmp_path / "l", target_name="bundl", round_size=20, max_programs=60,
             seed=2)
    local = run_campaign(s, LocalEngine(), 1)
    remote = run_campaign(dict(s, out_dir=str(tmp_path / "d")), dask(cluster), 1)
    assert not remote.failed and not local.findings
    assert remote.outcomes == local.outcomes and remote.programs == 60
    assert local.outcomes["compile"]["pass"] >= 40


class EnvToy(ToyTarget):
    """A finding that names the seeded fault the worker sees."""

    def check(self, program, prop="compile"):
        if 7 in program:
            return CheckResult("finding", f"env:{os.environ.get('GPUSEM_FAULT')}",
                               "env", "", {"program.json": "[]"}, 1)
        return CheckResult("pass")


register_target("envtoy", EnvToy)


def test_the_clients_fault_setting_reaches_the_workers(cluster, tmp_path, monkeypatch):
    """GPUSEM_FAULT set in the client after the workers started: the pieces carry it
    (a fault switched on only in the client would make a campaign find nothing)."""
    monkeypatch.setenv("GPUSEM_FAULT", "group-modulus")
    s = run_campaign(spec(tmp_path, target_name="envtoy", max_programs=50),
                     dask(cluster), 1)
    assert set(found(s)) == {"env:group-modulus"}


register_target("configtoy-dask", ConfigToy)


def test_the_counts_per_configuration_merge_and_resume_on_dask(cluster, tmp_path):
    """Programs compared per configuration (the toy's `b`: its even rounds only, as
    nvcc-G on every K-th): the same from the pieces of the Dask engine as from the
    local one, and in the pieces' record that --resume starts from."""
    s = spec(tmp_path / "l", target_name="configtoy-dask")
    local = run_campaign(s, LocalEngine(), 1)
    remote = run_campaign(dict(s, out_dir=str(tmp_path / "d")), dask(cluster), 1)
    assert not remote.failed
    assert remote.by_configuration == local.by_configuration
    per = remote.by_configuration["compile"]
    assert per["a"] == remote.compared > per["b"] > 0
    _, restored = pieces.finished(tmp_path / "d", "compile", (0, 1))
    assert restored.by_configuration == remote.by_configuration


def test_a_cluster_without_the_resource_is_one_line(tmp_path):
    c = local_cluster("cpu", jobs=1)
    try:
        engine = DaskEngine(backend="cuda", scheduler=c.scheduler_address)
        with pytest.raises(BadInput, match="resource GPU"):
            engine.connect()
    finally:
        c.close()


def test_an_unreachable_scheduler_is_bad_input_in_one_line(tmp_path, monkeypatch):
    """Issue 32.12: no scheduler at the address is the user's mistake (exit 2, one
    line, after a short timeout), not gpusem's bug (exit 3 after 30 s)."""
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr("gpusem.fuzz.engines.dask.SCHEDULER_TIMEOUT_S", 2.0)
    engine = DaskEngine(scheduler=f"tcp://127.0.0.1:{port}")
    t0 = time.monotonic()
    with pytest.raises(BadInput, match=f"^dask scheduler unreachable: "
                                       f"tcp://127.0.0.1:{port} "):
        engine.connect()
    assert time.monotonic() - t0 < 20
    engine.close()
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.toys", "fuzz", "--target", "toys",
         "--engine", "dask", "--scheduler", f"tcp://127.0.0.1:{port}",
         "--max-programs", "10", "--out", str(tmp_path / "o")],
        cwd=root, env=dict(os.environ, PYTHONPATH=str(root / "src")),
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dask scheduler unreachable: "), (
        proc.stderr)
    # a refused port is said at once, not after the client's timeout of retries
    assert "connection refused" in lines[0], proc.stderr


def test_gpu_ids(monkeypatch):
    assert gpu_ids("0,2") == ["0", "2"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert gpu_ids("all") == ["3", "5"] and gpu_ids("1") == ["3"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(BadInput, match="need a GPU"):
        gpu_ids(None)


def test_windows_of_a_program_budget():
    assert pieces.windows(250, 25, 4) == [((0, 4), None), ((4, 8), None),
                                          ((8, 10), None)]
    assert pieces.windows(110, 25, 2) == [((0, 2), None), ((2, 4), None),
                                          ((4, 5), 10)]


def test_a_worker_that_lacks_a_required_module_is_bad_input(cluster, tmp_path):
    """The preflight on every worker (issue 23): one line naming the module, the
    target and the worker, before any piece runs."""
    from tests.fuzz.test_preflight import MISSING, NeedsMissing

    register_target(NeedsMissing.name, NeedsMissing)
    with pytest.raises(BadInput, match=f"needs module {MISSING}.*on dask worker"):
        run_campaign(spec(tmp_path / "o", target_name=NeedsMissing.name),
                     dask(cluster), 1)
    assert list_bundles(tmp_path / "o") == []


def test_the_budget_counts_from_the_campaigns_start_not_the_clusters(cluster,
                                                                     tmp_path):
    """A cluster that took seconds to start (here: said to have begun 10 s before the
    engine's first shard) leaves the campaign that much less to fuzz: its budget
    runs from the command's start (stop 31: 32 workers took ~10 s and a --budget
    90s campaign ended after 109.5 s). 10 s of the 15, not 5: 5 s of fuzzing, not
    10, and the wrong clock (~15 s) is further from the bound (7 s)."""
    import time

    engine = dask(cluster)
    engine.started_at = time.time() - 10.0
    t0 = time.monotonic()
    total = run_campaign(spec(tmp_path / "o", budget_s=15, max_programs=None), engine)
    wall = time.monotonic() - t0
    assert total.programs > 0 and not total.failed  # (a cold worker: seconds)
    assert wall <= 15 - 10 + 2.0, wall  # ~15 s before: the budget from the first shard
    assert 15 - 0.5 <= total.seconds <= 15 * 1.1 + 2.0, total.seconds  # since start


class HangingToy(ToyTarget):
    """Finds nothing; the first program it checks past the time its hang file holds
    (a time.time(); the file beside the cluster's kill flag, which the workers know)
    takes HANG_S, once per campaign (whoever removes the file)."""

    def check(self, program, prop="compile"):
        hang = Path(os.environ.get("GPUSEM_TEST_KILL_FLAG", "") + ".hang")
        try:
            at = float(hang.read_text())
        except (OSError, ValueError):
            at = float("inf")
        if time.time() >= at:
            try:
                hang.unlink()
            except FileNotFoundError:
                pass
            else:
                time.sleep(HANG_S)
        return CheckResult("pass")


HANG_S = 6.0  # from 1.5 s in (below): past the 5.5 s the client may wait
register_target("hangingtoy", HangingToy)


def test_a_piece_hung_past_the_budget_is_not_waited_for_through_the_shrink_tail(
        cluster, tmp_path):
    """Issue 31.1: with no shrink task out, the client waits for a piece past the
    budget's end only for its hand-back (at most 1 s), not through the shrink
    tail (4%) too: a --budget 90s campaign on the H200s waited until 96.3 s for a
    piece that never came (stop 31). Here the budget is 56 s, begun 53 s before the
    engine (its cluster's start, say): 3 s are left, then 1 s of hand-back; the
    shrink tail would have added 2.2 s and the 3% hand-back 0.7 s more (6.9 s,
    past the 5.5 s allowed; 3 s left, not 6: the test and the hung worker that the
    module's teardown waits for are 3 s shorter)."""
    hang = Path(str(cluster[1]) + ".hang")
    began = time.time()
    hang.write_text(str(began + 1.5))  # within the budget
    engine = dask(cluster)
    engine.started_at = began - 53.0
    t0 = time.monotonic()
    total = run_campaign(spec(tmp_path / "o", target_name="hangingtoy", budget_s=56,
                              max_programs=None), engine)
    wall = time.monotonic() - t0
    assert not hang.exists()  # a piece hung (for HANG_S, past the budget's end)
    assert not total.findings and len(total.cut) == 1, total.cut
    assert wall <= 3.0 + 1.0 + 1.5, wall  # the budget left, the hand-back, the rest
