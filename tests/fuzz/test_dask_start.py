"""The Dask engine's start (issue 31.2, `fuzz/engines/dask_start.py`): the local
cluster's workers are forked from a forkserver that imported a piece's modules, each
with the client's environment as it is when its cluster is made, and the preflight
is asked of one worker of each kind, not of every worker."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from gpusem.fuzz.client import run_campaign
from gpusem.fuzz.engines.dask import DaskEngine, local_cluster
from gpusem.fuzz.engines.dask_start import representatives
from gpusem.fuzz.targets import register_target

from tests.fuzz.test_campaign import ToyTarget

PROBED = "GPUSEM_TEST_PROBED_DIR"


class CountsProbes(ToyTarget):
    """The toy, whose preflight probe leaves a file per asking process, and whose
    warm-up one per warmed process."""

    name = "counts-probes"

    def probe(self, prop):
        Path(os.environ[PROBED], str(os.getpid())).write_text(prop)

    def warm(self, prop):
        Path(os.environ[PROBED], f"warm-{os.getpid()}").write_text(prop)


register_target(CountsProbes.name, CountsProbes)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    probed = tmp_path_factory.mktemp("probed")
    os.environ[PROBED] = str(probed)  # set before the cluster: its workers have it
    c = local_cluster("cpu", jobs=2, targets=("bundl",))
    try:
        yield c, probed
    finally:
        c.close()
        os.environ.pop(PROBED, None)


def _loaded(name: str) -> bool:
    return name in sys.modules


def test_workers_begin_with_a_pieces_modules_imported(cluster):
    """Before any task, every worker has the campaign's and the named target's
    modules: it was forked from a forkserver that imported them (spawned, each one
    imported them at its first piece: ~1 s of CPU a worker)."""
    from distributed import Client

    with Client(cluster[0]) as client:
        client.wait_for_workers(3)
        for mod in ("gpusem.fuzz.campaign", "gpusem.fuzz.bundl.target"):
            assert set(client.run(_loaded, mod).values()) == {True}, mod
        assert all(pid != os.getpid() for pid in client.run(os.getpid).values())


def _profiling(dask_worker) -> tuple[bool, bool]:  # client.run passes the worker
    import dask

    return (dask.config.get("distributed.worker.profile.enabled"),
            "profile" in dask_worker.periodic_callbacks)


def test_the_workers_run_without_dasks_statistical_profiler(cluster):
    """Dask samples each worker's task stack every 10 ms unless told not to; the local
    cluster tells it not to (issue 31.2: ~10% of a piece's CPU on a busy host)."""
    from distributed import Client

    assert "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED" not in os.environ
    with Client(cluster[0]) as client:
        client.wait_for_workers(3)
        assert set(client.run(_profiling).values()) == {(False, False)}


def test_the_preflight_is_asked_of_one_worker_of_each_kind(cluster, tmp_path):
    """Three workers alike (two fuzzing, one shrinking: one host, interpreter and
    environment): the target's probe runs in one of them, not in all three."""
    c, probed = cluster
    engine = DaskEngine(scheduler=c.scheduler_address)
    total = run_campaign({"target_name": CountsProbes.name, "backend": "cpu",
                          "prop": "compile", "budget_s": 60, "seed": 1,
                          "shard": (0, 1), "out_dir": str(tmp_path / "o"),
                          "round_size": 5, "max_programs": 10}, engine)
    assert total.programs == 10 and not total.failed
    asked = [p for p in probed.iterdir() if not p.name.startswith("warm-")]
    assert len(asked) == 1


def test_every_worker_warms_once_the_preflight_passed(cluster, tmp_path):
    """After the preflight, each of the three workers warms the target (`warm`:
    the cuda backend's worker process started before the first piece)."""
    c, probed = cluster
    for p in probed.glob("warm-*"):  # the earlier tests' campaigns warmed them too
        p.unlink()
    run_campaign({"target_name": CountsProbes.name, "backend": "cpu",
                  "prop": "compile", "budget_s": 60, "seed": 2, "shard": (0, 1),
                  "out_dir": str(tmp_path / "o"), "round_size": 5,
                  "max_programs": 5}, DaskEngine(scheduler=c.scheduler_address))
    warmed = {p.name for p in probed.iterdir() if p.name.startswith("warm-")}
    assert len(warmed) == 3, warmed


def test_the_cuda_backend_starts_its_worker_once_without_waiting():
    """`CudaBackend.start` spawns the worker process and returns (no GPU needed:
    the worker's CuPy import happens in it, later); asked again, it starts none."""
    from gpusem.compiler.backends.cuda import CudaBackend

    b = CudaBackend()
    try:
        b.start()
        assert b._worker is not None
        proc = b._worker[0]
        b.start()
        assert b._worker is not None and b._worker[0] is proc
    finally:
        b.close()


def test_a_later_clusters_workers_have_the_environment_of_then(tmp_path):
    """The forkserver keeps the environment of the process's first cluster; a later
    cluster's workers still get the client's environment as it is when it is made
    (as a spawned worker inherited it)."""
    from distributed import Client

    first = local_cluster("cpu", jobs=1)
    first.close()
    os.environ["GPUSEM_TEST_LATER"] = "yes"
    try:
        later = local_cluster("cpu", jobs=1)
        with later, Client(later) as client:
            client.wait_for_workers(2)
            got = client.run(os.environ.get, "GPUSEM_TEST_LATER")
        assert set(got.values()) == {"yes"}
    finally:
        os.environ.pop("GPUSEM_TEST_LATER", None)


def test_representatives_one_of_each_kind():
    kinds = {"tcp://b:2": "k1", "tcp://a:1": "k1", "tcp://c:3": "k2"}
    assert representatives(kinds) == ["tcp://a:1", "tcp://c:3"]
    assert representatives({}) == []
