"""Seeded faults: deliberate miscompilations, off unless `GPUSEM_FAULT=name[,name]`.

They measure whether the fuzzer finds real compiler bugs (issue 5): each is a mistake a
person writing this compiler could make, planted at the pass where it would live. The
README lists them. There is no command-line option: set the environment variable,
e.g. `GPUSEM_FAULT=floor-division gpusem fuzz --target bundl`; a bundle records the
fault it was found with, and `gpusem replay` switches it on again (unless the
variable is already set).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

FAULTS: dict[str, str] = {
    "drop-partition-barrier":
        "lower_data: the barrier that ends a partition is not emitted",
    "split-offset-off-by-one":
        "lower_code: S-Split-Right shifts p by n1 - 1 instead of n1",
    "group-modulus":
        "lower_code: S-Group computes p mod q (the group count) instead of p mod n",
    "partition-offset-c-times-p":
        "lower_data: piece offset c*p (the paper's printed S-Partition) instead of "
        "(p div (n/c)) * (len div c)",
    "syncwarp-for-block":
        "lower_barriers: a block-wide barrier lowered to __syncwarp()",
    "named-barrier-count":
        "lower_barriers: bar.sync counts half the participating threads",
    "mbarrier-phase":
        "lower_barriers: the mbarrier phase bit is never flipped after a wait",
    "wait-below-first-use":
        "place_sync: wait motion does not look inside nested blocks, sinking a wait "
        "past the reads they contain",
    "arrive-above-last-use":
        "place_sync: the arrive of a split barrier is hoisted above the construct's "
        "last statement",
    "prism-drop-rule-1":
        "place_sync_prism: rule 1 of Prism Sec. 5 is never applied (no barrier after "
        "a write partition unless the next one writes)",
    "prism-drop-rule-2":
        "place_sync_prism: rule 2 of Prism Sec. 5 is never applied (no barrier before "
        "a write partition unless the one before wrote)",
    "claim-all-threads":
        "lower_data: the claim guard is dropped, every thread runs the claimed body",
    "shared-not-zeroed":
        "pipeline: shared arrays are not zeroed at allocation",
    "floor-division":
        "emit: int / and % round toward negative infinity instead of toward zero",
    "signed-overflow-ub":
        "emit: int + - * emitted as plain C++ signed arithmetic (undefined on overflow)",
    "fma-contraction":
        "emit: float a*b+c emitted as fmaf(a, b, c) (contracted, one rounding)",
    "fma-unfused":
        "emit: an explicit fma(a, b, c) emitted as a*b + c (two roundings)",
    "index-at-code-perspective":
        "from_bundl: an array index is evaluated against the code perspective instead "
        "of the enclosing target's (E-Arr-Access), so partition_id in it counts the "
        "wrong units",
    "global-alloc-per-thread":
        "from_bundl: `alloc in Global` gives every thread its own array instead of one "
        "per unit of the code perspective (S-Alloc-Global)",
}


def active(name: str) -> bool:
    """Whether the fault `name` is switched on in this process."""
    assert name in FAULTS, name
    return name in _enabled()


def _enabled() -> frozenset[str]:
    # read at every call (tests and campaigns switch faults on in-process), parsed
    # once per value: the passes ask ~60 times a program (issue 31.3); within
    # `read_once`, the value it read
    raw = _READ.get()
    return _parse(os.environ.get("GPUSEM_FAULT", "") if raw is None else raw)


# the switch as `read_once` read it (None: outside, read at every call)
_READ: ContextVar[str | None] = ContextVar("gpusem_bundl_faults", default=None)


@contextmanager
def read_once() -> Iterator[None]:
    """Within (one compile: `pipeline.compile_program`): the variable is read once, not
    at each of the ~60 questions a program's passes ask (~2 us each, issue 31.3). An
    unknown name is still refused where a pass first asks, as before."""
    if _READ.get() is not None:  # an enclosing compile read it
        yield
        return
    token = _READ.set(os.environ.get("GPUSEM_FAULT", ""))
    try:
        yield
    finally:
        _READ.reset(token)


@lru_cache(maxsize=64)
def _parse(raw: str) -> frozenset[str]:
    # `gpuir-*` names belong to the GPU IR compiler's faults (compiler/gpuir_cuda).
    names = {n.strip() for n in raw.split(",")
             if n.strip() and not n.strip().startswith("gpuir-")}
    unknown = names - FAULTS.keys()
    if unknown:  # raised, so not cached: every compile under it says so
        from gpusem.compiler.bundl_cuda.errors import CompileError

        raise CompileError(f"unknown fault: {', '.join(sorted(unknown))} (known: "
                           f"{', '.join(FAULTS)})")
    return frozenset(names)
