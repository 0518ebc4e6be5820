"""Fresh-Region-Per-Iteration (errata 8d): the region instance of an S-Alloc-Shared /
-Global site in the body of counted loops; and Counted-Loop-Read (errata 8h): the
identity of a read site there (`per_iteration_site`).

The k-th run of such a site by a thread meets the k-th run by its peers
(interpreter/bundl/small_step_data.py, `_shared_instance`), each run a fresh region.
Where no guard (an if, an uncounted loop, an async body) lies between a counted loop
and the alloc, every thread runs the alloc the same number of times in each of the
loop's iterations, so the run count is one-to-one with the iterations of those
loops: the instance is the unit's and the thread's `iteration` of each of them (the
terms its accesses use). Two threads in iterations k1 != k2 then name two regions
and never conflict; one iteration's accesses are analysed as before. Loops outside
the innermost guard are left out: a guard taken in some iterations only shifts the
run count, so those iterations may meet one region (the merged instance, sound).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

Term = Any  # a z3 expression (z3 ships no type information)
UnitBuilder = Callable[[Any], list[Term]]  # the unit of a symbolic thread (race_accesses.Th)
# ((uid, lo, hi) of a counted loop, the depth of pos at the loop)
Counter = tuple[tuple[int, int, int], int]


def fresh_per_iteration(unit: UnitBuilder, counters: tuple[Counter, ...],
                        guarded: bool, guard_at: int) -> UnitBuilder:
    """The instance of an alloc made by code in `unit`, inside `counters` (outermost
    first), under the innermost guard at depth `guard_at` if `guarded`."""
    kept = tuple(k for k, depth in counters if not guarded or depth > guard_at)
    if not kept:
        return unit
    return lambda th: unit(th) + [iteration(th, *k) for k in kept]


def per_iteration_site(unit: UnitBuilder, counters: tuple[Counter, ...]
                       ) -> UnitBuilder:
    """Counted-Loop-Read (errata 8h): the key of a read site in the body of counted
    loops only (no uncounted loop around it): the code unit and the thread's
    `iteration` of every one of those loops. Unrolling the loops (constant bounds,
    the counter bound nowhere else) makes each iteration tuple a copy of the site run
    at most once per thread, which `race_accesses.Collector.uniform` reads as one
    unknown per (code unit, region instance, cell): two threads of one unit reading
    one cell in one iteration share the unknown, as they would at the unrolled site;
    other iterations draw other unknowns."""
    kept = tuple(k for k, _depth in counters)
    return lambda th: unit(th) + [iteration(th, *k) for k in kept]


def iteration(th: Any, key: int, lo: int, hi: int) -> Term:
    """The iteration of the counted loop `key` (lo <= i < hi) that `th` (a
    race_accesses.Th) is in: one term per thread, for every access of its body
    (`Th.once`)."""
    return th.once(key, lambda: _between(th, lo, hi))


def _between(th: Any, lo: int, hi: int) -> Term:
    """A fresh int of `th` with lo <= it < hi (signed, as C compares ints)."""
    u = th.fresh("int")
    th.cons += [u >= z3.BitVecVal(lo & 0xFFFFFFFF, 32),
                u < z3.BitVecVal(hi & 0xFFFFFFFF, 32)]
    return u
