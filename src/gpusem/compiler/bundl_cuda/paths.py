"""The lowering paths of the Bundl -> CUDA compiler, named, for coverage (issue 14,
item 7): which cases of which pass a program's compilation takes.

Each pass calls `note(PATH)` where it takes a case; nothing is recorded unless a caller
asks (`recording()`), so compiling costs one context-variable read per case. `PATHS`
lists every path with what it means; `tests/compiler/test_bundl_paths.py` checks that
the passes note exactly these names. A path nobody's generated program takes is a
blind spot of the compiler oracle (fuzz/bundl/coverage.py counts them per campaign).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

PATHS: dict[str, str] = {
    # from_bundl: E-Partition-Id (fixed) at each pair of code / target levels that a
    # well-typed program reaches (T-Partition-Id: code < (Grid, 1), so never grid->*)
    "compile:from_bundl:partition_id same level": "p div n' (target at the code's level)",
    "compile:from_bundl:partition_id block->thread": "(p·T + threadIdx) div n'",
    "compile:from_bundl:index at a narrower target":
        "E-Arr-Access: an index evaluated against a target narrower than the code",
    "compile:from_bundl:pointer offset": "y + k as an array operand (KPtrAdd)",
    "compile:from_bundl:call": "a device function call (S-Function-Call)",
    "compile:from_bundl:call argument at another perspective":
        "an argument for a parameter not at the code's perspective (⊢^π_π all the same)",
    "compile:from_bundl:alloc Local": "a per-thread array (S-Alloc-Local)",
    "compile:from_bundl:alloc Shared": "a per-block array in shared memory",
    "compile:from_bundl:alloc Global": "one array per unit of the code perspective",
    "compile:from_bundl:barrier written by hand": "init ψ; dec ψ; wait ψ in the source",
    "compile:from_bundl:memcpy": "an element-wise copy (S-Memcpy, fixed)",
    "compile:from_bundl:async_memcpy": "a deferred copy (S-Async-Memcpy)",
    # galloc: where an `alloc in Global` lives
    "compile:galloc:zeroed by the launch": "a site met once per unit and launch",
    "compile:galloc:zeroed between barriers": "a site met again (a loop, a second call)",
    # lower_data: data perspectives
    "compile:lower_data:partition": "piece offset (p div (n/c))·(len div c) + barrier",
    "compile:lower_data:claim": "guard p < n' + barrier",
    "compile:lower_data:lower": "the same pointer at ↓π + barrier",
    # lower_async: async_partition scopes
    "compile:lower_async:cp.async": "a copy issued as cp.async, waited at scope end",
    "compile:lower_async:copy at unwind": "a copy performed at the scope's end",
    # pipeline: zero_shared_allocations
    "compile:pipeline:shared array zeroed": "the block zeroes a shared array, then syncs",
    # lower_code: code perspectives
    "compile:lower_code:destruct grid": "p = blockIdx.x (S-Destruct-Grid)",
    "compile:lower_code:destruct block": "p = threadIdx.x (S-Destruct-Block)",
    "compile:lower_code:group": "p = p mod n (S-Group)",
    "compile:lower_code:split": "guards p < n1 and p < n1 + n2 (S-Split-Left/-Right)",
    # place_sync: barrier placement
    "compile:place_sync:barrier dropped at kernel end": "the kernel's end orders all",
    "compile:place_sync:barrier moved": "wait motion past independent statements",
    "compile:place_sync:barriers merged": "two barriers of one instance become one",
    "compile:place_sync:split barrier": "arrive where the construct ends, wait later",
    # lower_barriers: one barrier by shape
    "compile:lower_barriers:one thread": "nothing: program order",
    "compile:lower_barriers:__syncthreads": "the whole block",
    "compile:lower_barriers:__syncwarp": "one whole warp",
    "compile:lower_barriers:__syncwarp(mask)": "fewer lanes of one warp",
    "compile:lower_barriers:bar.sync": "a named barrier over whole warps",
    "compile:lower_barriers:mbarrier": "an mbarrier with a per-thread phase bit",
    # speed
    "compile:speed:merged __syncthreads": "a barrier right after a barrier is dropped",
    "compile:speed:unroll hint": "#pragma unroll on a short counted loop",
}

# Paths of our Bundl extensions for Prism's surface language (errata "Extension:
# partition at an offset"). Bundl's own generators do not write these statements, so
# they are kept apart from PATHS (whose every entry the Bundl generators must reach,
# tests/fuzz/test_bundl_coverage.py); the prism target's programs reach them.
SURFACE_PATHS: dict[str, str] = {
    "compile:from_bundl:partition at an offset":
        "S-Partition-Offset: the offset e lowered at the piece's perspective",
    "compile:lower_data:partition at an offset": "y = x + e, length len - e + barrier",
}

# Paths of `--sync prism` (sync_prism.py, Prism Sec. 5), apart from PATHS for the same
# reason: only the `prism-sync` property of the bundl target compiles in that mode.
SYNC_PRISM_PATHS: dict[str, str] = {
    "compile:place_sync_prism:rule 1": "a barrier after a write node (parent write)",
    "compile:place_sync_prism:rule 2": "a barrier before a write node",
    "compile:place_sync_prism:read after read": "no barrier between two read nodes",
    "compile:place_sync_prism:back edge": "a loop body's last barrier kept in the loop",
    "compile:place_sync_prism:back edge read after read":
        "a loop body's last barrier moved after the loop (reads on both sides)",
}

_SINK: ContextVar[set[str] | None] = ContextVar("gpusem_bundl_paths", default=None)


def note(path: str) -> None:
    """Record that the compilation in progress takes `path` (one of `PATHS`)."""
    sink = _SINK.get()
    if sink is not None:
        sink.add(path)


@contextmanager
def recording() -> Iterator[set[str]]:
    """Collect the paths noted while the block runs."""
    seen: set[str] = set()
    token = _SINK.set(seen)
    try:
        yield seen
    finally:
        _SINK.reset(token)
