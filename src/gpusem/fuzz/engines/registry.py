"""Choosing a campaign engine by name (issue 19): `local` (processes of this machine,
`fuzz/engines/local.py`), `dask` (`fuzz/engines/dask.py`), or a plugin registered in
the `gpusem.engines` entry-point group, as targets are (`fuzz/targets.py`):

    [project.entry-points."gpusem.engines"]
    ray = "gpusem_ray.engine:RayEngine"

An engine other than `local` is made as `factory(backend=..., jobs=..., scheduler=...,
gpus=...)` and gets the machine's part of the campaign as ONE shard, which it cuts as
it likes (`fuzz/engines/pieces.py`); `jobs` sizes its own workers. The local engine
gets `jobs` shards, one process each.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from gpusem.calculus.errors import BadInput
from gpusem.fuzz.engines.base import Engine

ENTRY_POINT_GROUP = "gpusem.engines"
BUILT_IN = {"local": "gpusem.fuzz.engines.local:LocalEngine",
            "dask": "gpusem.fuzz.engines.dask:DaskEngine"}


def known_engines() -> dict[str, str]:
    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return BUILT_IN | found


def load_engine(name: str, backend: str = "cpu", jobs: int = 1,
                scheduler: str | None = None, gpus: str | None = None
                ) -> tuple[Engine, int]:
    """(the engine, how many shards to give it) for `gpusem fuzz --engine NAME`."""
    engines = known_engines()
    if name not in engines:
        raise BadInput(f"unknown engine: {name} (known: {', '.join(sorted(engines))})")
    if name == "local":
        if scheduler or gpus:
            raise BadInput("--scheduler and --gpus are for a cluster engine "
                           "(--engine dask)")
        from gpusem.fuzz.engines.local import LocalEngine

        return LocalEngine(), max(1, jobs)
    module, _, attr = engines[name].partition(":")
    factory: Any = getattr(importlib.import_module(module), attr)
    return factory(backend=backend, jobs=jobs, scheduler=scheduler, gpus=gpus), 1
