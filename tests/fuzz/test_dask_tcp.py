"""The Dask engine on a cluster as it is on several machines (issue 31.4): a scheduler
and workers started as separate processes by Dask's own command lines (`dask
scheduler`, `dask worker`), talking over TCP; the campaign connects with `--scheduler`
as a user would. A worker killed mid-piece loses nothing (its piece runs again); a
piece that kills every worker it runs on is reported as an internal finding naming
its programs, once its retries are spent, and the campaign goes on and ends
(issue 31.5: such pieces were retried while the budget lasted and reported as
nothing)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusem.fuzz.bundle import list_bundles, read_bundle
from gpusem.fuzz.campaign import round_seed
from gpusem.fuzz.client import run_campaign
from gpusem.fuzz.engines.dask import DaskEngine
from gpusem.fuzz.hunt import generate_round
from gpusem.fuzz.targets import register_target
from tests.fuzz.test_campaign import ToyTarget
from tests.fuzz.test_dask_engine import KillerToy, found, record_lines, spec

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
SEED, ROUND, PROGRAMS = 5, 25, 250


class PoisonToy(ToyTarget):
    """The toy, except that one program (env GPUSEM_TEST_POISON, JSON) kills the
    worker that checks it, every time: its piece can never finish."""

    def check(self, program, prop="compile"):
        poison = os.environ.get("GPUSEM_TEST_POISON", "")
        if poison and list(program) == json.loads(poison):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().check(program, prop)


register_target("poisontoy", PoisonToy)


def poison() -> list[int]:
    """A program of round 0 (the first piece of shard 0/1) that no other round of
    the campaign draws."""
    strategy = ToyTarget().strategy("compile")
    rounds = [[list(d.program) for d in generate_round(strategy, round_seed(SEED, r),
                                                        ROUND)]
              for r in range(PROGRAMS // ROUND)]
    others = [p for r in rounds[1:] for p in r]
    return next(p for p in rounds[0] if rounds[0].count(p) == 1 and p not in others)


@pytest.fixture(scope="module")
def tcp_cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tcp")
    flag, address_file = tmp / "flag", tmp / "scheduler.json"
    env = dict(os.environ, GPUSEM_TEST_KILL_FLAG=str(flag),
               GPUSEM_TEST_POISON=json.dumps(poison()),
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
               DASK_DISTRIBUTED__WORKER__DAEMON="False",
               DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES="1")
    procs = [subprocess.Popen(
        [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
         "--no-dashboard", "--scheduler-file", str(address_file)],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)]
    try:
        deadline = time.monotonic() + 60
        while not address_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(address_file.read_text())["address"]
        assert address.startswith("tcp://")
        for _ in range(2):  # two machines' worth: one worker process each
            procs.append(subprocess.Popen(
                [str(BIN / "dask"), "worker", address, "--nworkers", "1",
                 "--nthreads", "1", "--resources", "CPU=1", "--memory-limit", "0",
                 "--no-dashboard"],
                env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True))
        yield address, flag
    finally:
        for p in reversed(procs):
            p.terminate()
        # A worker's nanny given SIGTERM took the whole 10 s it was waited for (then
        # SIGKILL, which could leave its worker process behind): each is a session of
        # its own, so what has not ended 3 s after the SIGTERMs is killed with its
        # children (issue 32.11: the module's teardown took 10.7 s).
        deadline = time.monotonic() + 3
        for p in reversed(procs):
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)


def engine(address: str) -> DaskEngine:
    return DaskEngine(scheduler=address, rounds_per_piece=1)


def test_a_worker_killed_mid_piece_over_tcp_loses_no_finding(tcp_cluster, tmp_path):
    address, flag = tcp_cluster
    flag.write_text("armed")
    killed = run_campaign(spec(tmp_path / "killed", target_name="killertoy"),
                          engine(address), 1)
    assert Path(f"{flag}.killed").exists() and not flag.exists()  # a worker died
    assert not killed.failed
    assert killed.programs == PROGRAMS
    assert found(killed) == {"wrong:big7": (2, True), "crash:long0": (7, True)}
    lines = record_lines(tmp_path / "killed")
    assert sorted(tuple(x["window"]) for x in lines) == [(k, k + 1) for k in range(10)]
    assert sorted(s for x in lines for s in x["wrote"]) == ["crash:long0", "wrong:big7"]
    assert KillerToy.checks == 0  # nothing ran in this process


def test_a_piece_that_kills_its_workers_is_reported_not_retried(tcp_cluster, tmp_path):
    address, _ = tcp_cluster
    t0 = time.monotonic()
    out = run_campaign(spec(tmp_path / "poison", target_name="poisontoy"),
                       engine(address), 1)
    assert time.monotonic() - t0 < 120  # it ended, well before its 120 s budget
    died = [f for f in out.findings if f.kind == "internal"]
    assert [f.signature for f in died] == ["internal:worker-died:poisontoy:compile"]
    piece = json.loads(read_bundle(died[0].bundle).files["piece.json"])
    assert piece["rounds"] == [0] and piece["seed"] == SEED
    # every other piece ran: the campaign's programs less the poisoned piece's
    assert out.programs == PROGRAMS - ROUND
    assert "internal" in {b.meta["kind"] for b in list_bundles(tmp_path / "poison")}
