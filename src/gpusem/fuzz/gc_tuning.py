"""The garbage collector while a campaign runs (issue 31.3): CPython's defaults cost a
campaign ~1.5 CPU ms a program (of ~12), mostly in full collections.

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
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 20_000  # allocations between young collections (CPython: 700)


@contextmanager
def campaign_gc() -> Iterator[None]:
    """Within: start-up objects frozen, young collections every YOUNG_THRESHOLD
    allocations; the thresholds before and an unfrozen heap after."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
