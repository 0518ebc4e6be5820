"""The garbage collector and the C heap while a campaign runs (issue 31.3): CPython's
defaults cost a campaign ~1.5 CPU ms a program (of ~12), mostly in full collections,
and glibc's ~3 ms a program in page faults (`keep_freed_memory`).

A round keeps what it makes alive until it ends: hypothesis's state for the round's
examples (~25,000 choice nodes for 100 programs), the drawn programs, the reference's
compiled closures. The default collector (a young collection every 700 allocations)
scans each such object young, again middle-aged, and again at every full collection,
and each full collection also scans everything the process had before the campaign
(modules, functions, types: ~60,000 objects), which never becomes garbage.

`campaign_gc` moves those start-up objects out of the collector's sight
(`gc.freeze`) and collects the young generation every 20,000 allocations instead of
700, for the campaign's duration; the settings are restored after it, so a process
that runs a campaign (the pytest plugin, a notebook) gets its own back. Nothing else
changes: the same objects are freed (cyclic garbage later, ~35 MB more at the peak
over 1,200 programs), the same programs, verdicts and kernels.

Each z3 race analysis builds a context of its own and frees it after (finding G1,
`typing_rules/bundl/race_context.py`), ~16 MB of C heap. glibc serves blocks that
large by mmap and unmaps them when freed, or trims the heap's free top back to the
kernel, so the next analysis faults the same 16 MB in again: ~4,000 page faults,
4-14 CPU ms a context, ~3 ms a program of the campaign (measured: 1,700 faults and
6.1 ms of reference a program, 107 and 2.9 with the thresholds below). The campaign
keeps that memory in its heap instead (`keep_freed_memory`): the peak is the same
(ru_maxrss, which `MemoryGuard` reads, unchanged over 600 programs), only freed memory
is not handed back.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 20_000  # allocations between young collections (CPython: 700)
# glibc's mallopt parameters (malloc.h) and our values for them
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20  # blocks below this come from the heap (glibc's maximum)
TRIM_THRESHOLD = 64 << 20  # a free heap top larger than this goes back to the kernel


@contextmanager
def campaign_gc() -> Iterator[None]:
    """Within: start-up objects frozen, young collections every YOUNG_THRESHOLD
    allocations; the thresholds before and an unfrozen heap after."""
    before = gc.get_threshold()
    keep_freed_memory()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def keep_freed_memory() -> bool:
    """Freed C heap stays in the process for reuse (up to TRIM_THRESHOLD) instead of
    going back to the kernel; whether the C library took the settings (glibc does;
    elsewhere nothing changes). Not undone after the campaign: glibc has no way back
    to its default, self-adjusting thresholds once they are set, and fixed default
    values would serve the process worse than these."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (macOS, musl without it)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
