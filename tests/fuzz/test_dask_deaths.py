"""Issue 31.1 and 31.5 on the Dask engine: a piece that kills its workers is
reported at once as an internal finding naming its programs, within the budget
(never resubmitted by the client, never dropped past the budget); and a shrink task
still running at the campaign's end is cut there, its finding reported with the
best bundle it published, marked as cut.

The toy target is tests/fuzz/test_campaign.py's (its bugs, `big7` and `long0`,
are known exactly). The cluster is shared by the tests of this module."""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
from pathlib import Path

import pytest
from distributed import Client

from gpusem.fuzz.bundle import read_bundle
from gpusem.fuzz.campaign import round_seed
from gpusem.fuzz.client import run_campaign, shard_tasks
from gpusem.fuzz.engines.dask import DaskEngine
from gpusem.fuzz.engines.dask_cluster import (
    ALLOWED_FAILURES,
    local_cluster,
    stop_workers,
)
from gpusem.fuzz.engines.pieces import Piece
from gpusem.fuzz.hunt import generate_round
from gpusem.fuzz.targets import register_target
from tests.fuzz.test_campaign import ToyTarget

SEED, ROUND, BUDGET = 5, 25, 10.0


class ExitToy(ToyTarget):
    """The toy, except that one program (env GPUSEM_TEST_EXIT, JSON) ends the worker
    that checks it with os._exit (no finally, no goodbye), and says so in the file
    GPUSEM_TEST_EXIT_LOG (one line per death)."""

    def check(self, program, prop="compile"):
        poison = os.environ.get("GPUSEM_TEST_EXIT", "")
        if poison and list(program) == json.loads(poison):
            with open(os.environ["GPUSEM_TEST_EXIT_LOG"], "a") as log:
                log.write(f"{os.getpid()}\n")
            os._exit(1)
        return super().check(program, prop)


class SlowReducer(ToyTarget):
    """The toy, with a reducer that outlasts its deadline (it ignores its cap):
    only the client's end of the campaign stops waiting for it."""

    def minimise(self, program, res, prop="compile"):
        time.sleep(1.1 * BUDGET)  # past the client's end of waiting (budget + 7%)
        return res


register_target("exittoy", ExitToy)
register_target("slowreducer", SlowReducer)


def poison() -> list[int]:
    """A program of round 0 (the first piece) that no other of the first 40 rounds
    draws."""
    strategy = ToyTarget().strategy("compile")
    rounds = [[list(d.program) for d in generate_round(strategy, round_seed(SEED, r),
                                                        ROUND)] for r in range(40)]
    others = [p for r in rounds[1:] for p in r]
    return next(p for p in rounds[0] if rounds[0].count(p) == 1 and p not in others)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    log = tmp_path_factory.mktemp("exit") / "deaths"
    saved = {k: os.environ.get(k) for k in ("GPUSEM_TEST_EXIT", "GPUSEM_TEST_EXIT_LOG")}
    os.environ["GPUSEM_TEST_EXIT"] = json.dumps(poison())  # the workers inherit it
    os.environ["GPUSEM_TEST_EXIT_LOG"] = str(log)
    c = local_cluster("cpu", jobs=3)  # one survives the piece and its retry
    try:
        # each worker imports what a piece needs now, not within a test's budget
        # (seconds under load: every module is compiled again, no bytecode cache)
        with Client(c) as client:
            client.run(importlib.import_module, "tests.fuzz.test_dask_deaths")
        yield c, log
    finally:
        stop_workers(c)  # as the engine stops its own (a reducer still asleep)
        c.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def spec(out: Path, **kw) -> dict:
    return {"target_name": "exittoy", "backend": "cpu", "prop": "compile",
            "budget_s": BUDGET, "seed": SEED, "shard": (0, 1), "out_dir": str(out),
            "round_size": ROUND} | kw


def test_a_shrink_running_at_the_end_is_cut_with_its_best_so_far(cluster, tmp_path):
    """One piece whose two findings each go to a shrink task whose reducer outlasts
    the deadline: the client stops waiting at the budget + 7% and reports each
    finding with hypothesis's shrunk program (published by the task), marked cut.
    Before, the client waited for the tasks as long as they ran."""
    c, _ = cluster
    engine = DaskEngine(scheduler=c.scheduler_address, rounds_per_piece=1)
    s = spec(tmp_path, target_name="slowreducer", max_programs=50, round_size=50,
             seed=2)  # one piece, one round, both bugs
    done: list = []
    t0 = time.monotonic()
    runner = threading.Thread(target=lambda: done.append(run_campaign(s, engine, 1)),
                              daemon=True)
    runner.start()
    runner.join(45)
    assert done, "the campaign did not end"
    out = done[0]
    assert out.seconds <= 1.1 * BUDGET and time.monotonic() - t0 < 1.1 * BUDGET + 5, (
        out.seconds)
    assert {f.signature: f.size for f in out.findings} == {"wrong:big7": 2,
                                                          "crash:long0": 7}
    for f in out.findings:
        meta = read_bundle(f.bundle).meta
        assert meta["state"] == "done" and meta["shrink_cut"] is True
        # `shrunk`: a step made (hypothesis's), cut or not (docs/reports.md)
        assert meta["size"] == f.size and f.shrunk is meta["shrunk"] is (
            f.size < meta["size_before"])
        assert 0 < f.shrink_s <= BUDGET


def test_a_piece_that_kills_its_workers_is_reported_at_once_within_the_budget(
        cluster, tmp_path):
    c, log = cluster
    engine = DaskEngine(scheduler=c.scheduler_address, rounds_per_piece=1)
    # ten rounds, not the whole budget: the campaign ends once its pieces are done
    # (~10 s of fuzzing before, all after the poisoned piece was reported); a piece
    # the client ran again would still run, and die, before the end (the log below)
    out = run_campaign(spec(tmp_path, max_programs=10 * ROUND), engine, 1)
    assert out.seconds <= 1.1 * BUDGET, out.seconds
    died = [f for f in out.findings if f.kind == "internal"]
    assert [f.signature for f in died] == ["internal:worker-died:exittoy:compile"]
    piece = json.loads(read_bundle(died[0].bundle).files["piece.json"])
    assert piece["rounds"] == [0] and piece["seed"] == SEED
    # the scheduler's retries and no more: the client did not run it again (it
    # used to, killing two more workers; past the budget that run was empty and
    # the piece was reported as nothing)
    assert len(log.read_text().split()) == ALLOWED_FAILURES + 1
    # the poisoned piece's programs never counted (all nine others when not cut
    # by the budget on a loaded machine)
    assert 0 < out.programs <= 9 * ROUND and not out.failed


class _Killed(Exception):
    """What `fut.result()` raises for a piece whose workers died (by its name)."""


_Killed.__name__ = "KilledWorker"


class _Lost:
    key = "gpusem-piece-lost"

    def result(self):
        raise _Killed("gpusem-piece-lost")


def test_a_piece_killed_past_the_budget_is_reported_not_run_again_empty(tmp_path):
    """Defect A of stop 28: a KilledWorker that comes back past the budget was
    submitted once more; the budget spent, that run checked nothing and came back
    clean, and the report had no internal:worker-died."""
    from gpusem.fuzz.bundle import BundleStore

    engine = DaskEngine()
    task = shard_tasks(spec(tmp_path, budget_s=1.0), 1)[0]
    s = engine._shard(task)
    s.deadline = time.monotonic() - 0.1  # the budget is spent
    engine.piece_of[_Lost.key] = Piece(task.spec, (0, 1), (3, 4), until=time.time())
    engine.client = None  # no scheduler: no STARTED event is known
    assert engine._take(_Lost(), s, BundleStore(tmp_path), {}) == []
    assert not s.again and s.next_piece(1) is None
    assert [f.signature for f in s.summary.findings] == [
        "internal:worker-died:exittoy:compile"]
    piece = json.loads(read_bundle(s.summary.findings[0].bundle).files["piece.json"])
    assert piece["rounds"] == [3]


def test_a_resume_skips_rounds_finished_in_pieces_of_another_size(tmp_path):
    """Pieces are one round since stop 28 (a piece hands its findings to their
    shrink tasks only when it ends); a campaign begun with pieces of two rounds
    resumes without checking their rounds again."""
    task = shard_tasks(spec(tmp_path, max_programs=None), 1)[0]
    s = DaskEngine()._shard(task)
    s.done = {(0, 2), (3, 4)}
    windows = []
    while (upcoming := s._upcoming(1)) is not None and len(windows) < 3:
        windows.append(upcoming[0])
        s.next_index += 1
    assert windows == [(2, 3), (4, 5), (5, 6)]
