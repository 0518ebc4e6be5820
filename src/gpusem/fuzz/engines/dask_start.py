"""The Dask engine's start (issue 31.2): how the local cluster's worker processes
come to be, and what every worker is asked before the first piece.

A campaign's rate over its whole run, not only its steady windows, is what a person
waiting sees; on an H200 x2 (results/scale/h200x2_2026-11-29/) the start and the end
took 28% of a 60 s run on one GPU and 34% on two. Two costs of the start grew with
the number of workers:

* Worker processes. Dask's nannies start each worker by `spawn`: a fresh interpreter
  that imports distributed (~1 s of CPU), then, at its first piece, gpusem's campaign
  and target modules (~1 s more). Here every worker is forked from one forkserver
  that imported those modules once (`use_forkserver`): a worker starts in a fraction
  of a second, whatever their number, and its first piece starts at generation. The
  forkserver imports no CUDA library (CuPy is imported by the cuda backend's own
  spawned worker process), so a forked worker's CUDA starts clean.
* The preflight (`targets.preflight`: the target's modules imported in a child
  process). It was asked of every worker: 33 interpreters importing z3 or CuPy at
  once on an H200 x2. Workers alike in what decides its answer (the host, the
  interpreter, its path and environment: `worker_kind`) give the same answer, so one
  worker of each kind is asked (`representatives`). Once it passed, every worker
  starts what its first batch waits for (`warm`: the cuda backend's worker process,
  whose CuPy import and CUDA context take seconds), without waiting for it.

A forked worker's environment is its forkserver's, started with the process's first
local cluster; each worker is handed this process's environment as it is when its
cluster is made (`worker_env`), as a spawned worker inherited it. A variable unset
since the forkserver started stays set in later clusters' workers.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
from collections.abc import Iterable
from typing import Any

# What a worker imports before its first piece can begin: the task's module (the
# piece and its campaign), beside distributed itself; a target's own module is added
# per campaign (`preload_modules`). Not CuPy, not anything that starts a thread.
WORKER_MODULES = ("distributed", "numpy", "gpusem.fuzz.engines.dask",
                  "gpusem.fuzz.campaign", "gpusem.fuzz.targets")


def preload_modules(targets: Iterable[str] = ()) -> list[str]:
    """WORKER_MODULES and the module of each built-in or entry-point target named
    (a target registered at run time is imported by its first piece)."""
    from gpusem.fuzz.targets import known_targets

    known = known_targets()
    mods = list(WORKER_MODULES)
    for name in targets:
        factory = known.get(name)
        if isinstance(factory, str) and ":" in factory:
            mods.append(factory.partition(":")[0])
    return list(dict.fromkeys(mods))


def use_forkserver(modules: Iterable[str]) -> None:
    """Dask's workers of this process forked from a forkserver that imported
    `modules` (see the module docstring); a forkserver already running keeps what it
    imported, and a worker imports the rest as it starts."""
    import dask
    from distributed.utils import get_mp_context

    modules = [m for m in modules if _found(m)]
    dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"})
    ctx = get_mp_context()  # distributed's own preload set first, then ours
    ctx.set_forkserver_preload(modules)
    # and each worker imports them as it starts (Dask's worker preload): nothing
    # where its forkserver did, the target's modules where a forkserver started by
    # an earlier cluster of this process (a test session) did not
    dask.config.set({"distributed.worker.preload": [
        m for m in modules if m.startswith("gpusem.")]})


def _found(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def forked(envs: list[dict[str, str]], targets: Iterable[str] = ()
           ) -> list[dict[str, str]]:
    """The local cluster's workers forked (`use_forkserver` of what a piece of
    `targets` imports), and each one's environment (`worker_env`) for `envs`."""
    use_forkserver(preload_modules(targets))
    return [worker_env(env) for env in envs]


def worker_env(extra: dict[str, str]) -> dict[str, str]:
    """A worker's environment: this process's now, and `extra` over it."""
    return {**os.environ, **extra}


def worker_kind(dask_worker: Any = None) -> str:
    """What decides a preflight's answer where this runs: the host, the interpreter,
    its module path and its environment (the GPU a worker is pinned to included);
    not the worker's own folder, which each one puts on its path (for files
    uploaded to it; `client.run` hands the worker in as `dask_worker`)."""
    own = getattr(dask_worker, "local_directory", None)
    path = [p for p in sys.path if not (own and p.startswith(own))]
    text = repr((socket.gethostname(), sys.executable, path,
                 sorted(os.environ.items())))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def representatives(kinds: dict[str, str]) -> list[str]:
    """One worker address of each kind (`worker_kind` by address), the first by
    address."""
    chosen: dict[str, str] = {}
    for address in sorted(kinds):
        chosen.setdefault(kinds[address], address)
    return sorted(chosen.values())


def ask_once_per_kind(client: Any, fn: Any, name: str, backend: str, prop: str,
                      factory: Any = None) -> dict[str, Any]:
    """The preflight `fn(name, backend, prop, factory)` on one worker of each kind:
    {address: answer}. Where all pass, every worker then warms (`warm`: it starts
    what its first batch waits for and returns at once)."""
    kinds = client.run(worker_kind)
    answers = client.run(fn, name, backend, prop, factory,
                         workers=representatives(kinds))
    if not any(answers.values()):
        client.run(warm, name, backend, prop, factory)
    return answers


def warm(name: str, backend: str, prop: str, factory: Any = None) -> None:
    """On a worker: the target's optional `warm(prop)` (`targets.Target`), e.g. the
    cuda backend's worker process started now, not at the first piece's first
    batch; what fails here is left to the pieces to meet and report."""
    from gpusem.fuzz.targets import load_target, register_target

    if factory is not None:
        register_target(name, factory)
    try:
        hook = getattr(load_target(name, backend), "warm", None)
        if hook is not None:
            hook(prop)
    except Exception:  # noqa: BLE001, S110 - a piece meets it again and says so
        pass


__all__ = ["WORKER_MODULES", "ask_once_per_kind", "forked", "preload_modules",
           "representatives", "use_forkserver", "warm", "worker_env", "worker_kind"]
