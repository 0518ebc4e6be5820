"""The Dask engine's local cluster (`engines/dask.py`): its start, this machine's
workers with their resources, and its stop.

The stop is quick (issue 31.1: a `--budget 90s` command ends within ~95 s, timed
from the shell). At a campaign's end every result the client waits for is in, or
was given up at the budget's end (`DaskEngine._cut`); a worker may still run a
piece cut there (a batch compile far past the budget). Dask's own close gives each
worker 4 s (`Nanny.close`'s 5 s timeout, 80% of it for the worker to end by itself)
before it kills it, and a worker whose thread still runs a piece never ends by
itself: its interpreter waits for that thread at exit. So a command whose last
piece was cut ended those 4 s (more on a loaded machine) after its report
(stop 31, H200 x2: report 96.4 s, wall 101.8 s; here, a worker in a 30 s task:
close 4.0 s, 0.4 s with `stop_workers`). Nothing is lost by not waiting: pieces and
shrinks write their bundles and the client its records before the end; a worker's
backend processes die with it (`compiler/backends/lifetime.py`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
from typing import Any

from gpusem.calculus.errors import BadInput
from gpusem.fuzz.engines import dask_start

ALLOWED_FAILURES = 1  # retries of a piece whose worker died (local cluster)
# a worker's time to close by itself at the campaign's end: 80% of it to end its
# tasks, then it is terminated (`Nanny.kill`): an idle worker took 0.4-0.9 s to
# close by itself on 2 cores, 6 workers 0.9 s at 1.0, 0.4 s at 0.5 (close_exp)
WORKER_CLOSE_S = 0.5


def local_cluster(backend: str = "cpu", jobs: int = 1, gpus: str | None = None,
                  targets: tuple[str, ...] = ()) -> Any:
    """A Dask cluster of this machine for the engine's pieces: for the cuda backend
    `jobs` workers per GPU (`gpu_ids(gpus)`), each with CUDA_VISIBLE_DEVICES of its GPU
    and the resource GPU=1; else `jobs` workers with CPU=1. One thread per worker (a
    piece is Python work: one core); each worker under a nanny, which starts a new one
    when a worker dies; forked (`dask_start.use_forkserver`: issue 31.2)."""
    import dask

    distributed = distributed_module()
    # A piece starts processes (the cpu harness worker, the CUDA worker): a daemonic
    # worker process may not have children.
    dask.config.set({"distributed.worker.daemon": False})
    # a piece that killed its worker twice is reported (`worker_deaths`), not run
    # again and again while the budget lasts (issue 31.5)
    dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES})
    # Dask's statistical profiler walks each worker's task stack every 10 ms; nobody
    # reads it here (no dashboard), and on a host whose every core is busy it cost
    # the pieces ~10% (issue 31.2: H200 x2, results/scale/h200x2_2026-11-30p). Dask's
    # own variable, where set, decides.
    if "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED" not in os.environ:
        dask.config.set({"distributed.worker.profile.enabled": False})
    if backend == "cuda":
        envs = [{"CUDA_VISIBLE_DEVICES": g} for g in gpu_ids(gpus) for _ in range(jobs)]
        resource = {"GPU": 1}
    else:
        envs, resource = [{} for _ in range(max(1, jobs))], {"CPU": 1}
    envs = dask_start.forked(envs, targets)
    # Workers log only CRITICAL: at the campaign's end the scheduler can close before
    # a worker's next heartbeat, which distributed logs as an ERROR with a traceback
    # ("Failed to communicate with scheduler during heartbeat") into the campaign's
    # output (stop 31, on the H200s); a worker's real failures reach the report as
    # worker deaths and internal findings (`worker_deaths`), not through its log.
    # Beside them, one worker that only shrinks (SHRINK=1): a finding's shrink task
    # starts on it at once, beside the pieces, not when a fuzzing worker's piece
    # ends (issue 31.1).
    workers = {f"gpusem-{i}": {"cls": distributed.Nanny, "options": {
        "nthreads": 1, "resources": dict(r), "env": env, "memory_limit": 0,
        "silence_logs": logging.CRITICAL}} for i, (env, r) in enumerate(
            [(env, resource) for env in envs] + [(envs[0], {"SHRINK": 1})])}
    scheduler = {"cls": distributed.Scheduler, "options": {
        "dashboard_address": ":0", "dashboard": False}}  # any free port: never 8787
    return distributed.SpecCluster(workers=workers, scheduler=scheduler,
                                   silence_logs=logging.ERROR)


def distributed_module() -> Any:
    try:
        import distributed
    except ImportError:
        raise BadInput("the dask engine needs Dask: pip install 'gpusem[dask]'") from None
    return distributed


def gpu_ids(gpus: str | None) -> list[str]:
    """The GPUs the local cluster's workers use: "0,1" as given, a count N (the first
    N found), or all ("all"/None): CUDA_VISIBLE_DEVICES if set, else `nvidia-smi -L`."""
    text = (gpus or "all").strip()
    if text not in ("all", "") and not text.isdigit():
        return [g.strip() for g in text.split(",") if g.strip()]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        found = [g.strip() for g in visible.split(",") if g.strip()]
    else:
        try:
            listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                     text=True, timeout=30, check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            listing = ""
        found = [str(i) for i, ln in enumerate(listing.splitlines())
                 if ln.startswith("GPU ")]
    if text.isdigit():
        found = found[:int(text)]
    if not found:
        raise BadInput("the dask engine's cuda workers need a GPU: none found "
                       "(nvidia-smi -L lists none; or pass --gpus)")
    return found


def stop_workers(cluster: Any, timeout: float = WORKER_CLOSE_S) -> None:
    """Close the local cluster's workers at once, each given `timeout` seconds (see
    the module docstring); the cluster's own close then finds them closed."""
    nannies = [w for w in getattr(cluster, "workers", {}).values()
               if hasattr(w, "close")]

    async def close_all() -> None:
        await asyncio.gather(*(n.close(timeout=timeout) for n in nannies),
                             return_exceptions=True)

    try:
        cluster.sync(close_all)
    except Exception:  # noqa: BLE001, S110 - closing: the cluster's close goes on
        pass


__all__ = ["ALLOWED_FAILURES", "WORKER_CLOSE_S", "distributed_module", "gpu_ids",
           "local_cluster", "stop_workers"]
