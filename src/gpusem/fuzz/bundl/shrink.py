"""AST-level reduction of a Bundl counterexample, after hypothesis's shrinking (issue 5).

Hypothesis shrinks the generator's choices, but the kernel generator
(`strategies/kernels.py`) builds templates whose parts hang together (a partition and
its group, a lower and its destruct, a staging array and its readers), so the shrunk
choices still leave a whole skeleton. This reducer edits the program itself, with
passes tried greedily, cheapest and largest first, to a fixpoint (delta debugging in
the style of C-Reduce):

  1. delete sync-free code (any position: a Seq element, a loop or branch body, a
     binder's scope), outermost first; a let by its scope, a loop by its body, an if by
     an arm;
  2. fewer blocks / threads (the counts that named them follow), shorter arrays: early,
     as the oracle's reference interpreter costs about linearly in threads;
  3. delete a function and its calls, delete code that synchronises;
  4. replace a compound statement by one of its bodies: a split by an arm, a group /
     destruct / alloc by its body, a perspective or claim (`partition x into y`,
     `lower`, `claim`, ...) by its body with y renamed x, a level of the thread
     hierarchy (partitions + their group) by its body with the counts scaled, and two
     hoists at once where one alone is ill-typed (a lower of s around a lower of ob);
  5. inline a let (its one assignment, or all its uses);
  6. replace an expression by a sub-expression or a constant, shrink int literals
     (loop trip counts among them); drop unused globals, zero the inputs.

A candidate is kept iff it type-checks under the fixed rules (`typing_rules/bundl/stmt`), is
strictly smaller (`size_key`: statements first), and the oracle gives the SAME
signature as the original finding (so it is still a valid program to compare: a race
or a stuck program is `invalid`, never a finding). Candidates are checked in batches
through the target's `prefetch` (one backend build per batch, batches doubling within
a step, the passes mixed: `shrink` says why the result is the one-at-a-time
reducer's) under a time and count cap.

Races. The oracle compares only race-free programs: kernel-shaped ones are race-free by
construction, the others must be proved so by the z3 analysis (slow, and it rejects
uniform writes). A *race-safe* edit (deleting sync-free code, an if by an arm, a loop by
its body, a simpler expression) moves no barrier and keeps each thread's accesses in
its own data, so a kernel's race-safe descendants inherit its race-freedom (each
candidate is a `Generated` whose `race_free_by_construction` is its parent's on a
race-safe edit, False otherwise); any other edit is proved again by the analysis.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from itertools import islice
from typing import Any

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.walk import statement_count
from gpusem.calculus.errors import GpusemError
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.bundl.shrink_passes import (
    PASSES,
    size_key,
    typechecks,
)
from gpusem.fuzz.targets import CheckResult

Check = Callable[[Generated], CheckResult]
# `prefetch(gs, deadline)` checks a batch at once (one backend build): how many of
# `gs`, from the first, `check` now answers from its cache (the rest were cut at
# `deadline`, time.monotonic()); None: this oracle checks one by one.
Prefetch = Callable[[list[Generated], float], "int | None"]

BATCH = 6  # a step's first batch: an early candidate that still fails costs one build
BATCH_MAX = 48  # the batches of a step double up to this many candidates


@dataclass(frozen=True, slots=True)
class ShrinkStats:
    before: int      # size on entry (after hypothesis): statements; Prism: lines
    after: int       # size on exit
    tried: int       # candidates the shrink took a verdict from, in order
    kept: int        # candidates accepted
    seconds: float
    capped: bool     # stopped by the time / candidate cap, not at a fixpoint
    built: int = 0   # candidates sent to the oracle in batches (`tried` and the
    batches: int = 0  # rest of a batch after its hit); batch checks (backend builds)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# --------------------------------------------------------------------------- driver


def shrink(start: Generated, signature: str, check: Check,
           prefetch: Prefetch | None = None, budget_s: float = 60.0,
           max_tried: int = 400, batch: int = BATCH,
           on_step: Callable[[CheckResult], None] | None = None,
           ) -> tuple[Generated, CheckResult | None, ShrinkStats]:
    """Greedy reduction to a fixpoint: each step takes the FIRST candidate, in the
    passes' order, that still fails with `signature`. `check(g)` -> CheckResult;
    `prefetch` (see Prefetch) checks a batch with one backend build. A candidate is
    race-free by construction iff its parent is and the edit is race-safe.

    Batches. A step's candidates go to the oracle in batches of `batch`, doubling up
    to BATCH_MAX (a step that ends at a fixpoint sees every candidate of every pass:
    a handful of builds, not one per candidate or per pass), and their verdicts are
    read in order up to the first that fails the same way. The result is the one
    checking them one at a time (`batch=1`, no prefetch) gives: the same candidates
    in the same order, the first one kept; a candidate of a batch after its hit is
    forgotten, as if never made (`tests/fuzz/test_bundl_shrink_batched.py`). Only
    the caps can differ: `max_tried` counts the verdicts read, as one at a time, but
    the time cap (`budget_s`) meets fewer candidates one at a time. No batch begins
    past it, nor one that the slowest so far says would end past it, and prefetch
    cuts one at it. `on_step` is told each candidate kept (a shrink cut at its
    deadline then leaves its last step in the bundle).

    Returns (program, result or None, ShrinkStats)."""
    t0 = time.monotonic()
    deadline = t0 + budget_s
    seen = {start.program}
    best, tried, kept, capped = start, 0, 0, False
    built = batches = 0
    slowest = 0.0  # the longest batch so far (one it says ends late: not begun)
    best_res: CheckResult | None = None
    before = statement_count(start.program)
    while not capped:
        stream = _candidates(best.program, seen)
        size, step = max(1, batch), None
        while step is None:
            room = max_tried - tried
            if time.monotonic() + slowest >= deadline or room <= 0:
                capped = True
                break
            chunk = list(islice(stream, min(size, room)))
            if not chunk:
                break  # every candidate of every pass checked: a fixpoint
            cands = [Generated(p, race_free_by_construction=safe
                               and best.race_free_by_construction)
                     for p, safe in chunk]
            began = time.monotonic()
            ready = _prefetch(prefetch, cands, deadline)
            if ready is not None:
                built, batches = built + len(cands), batches + 1
            step, read = _first_keeping(cands[:len(cands) if ready is None else ready],
                                        signature, check, deadline)
            tried += read
            slowest = max(slowest, time.monotonic() - began)
            if step is not None:  # the rest of the batch: never made one at a time
                seen.difference_update(p for p, _ in chunk[read:])
            elif read < len(cands):
                capped = True  # cut at the deadline
                break
            size = min(2 * size, BATCH_MAX)
        if step is None:
            break
        best, best_res = step
        kept += 1
        if on_step is not None:
            on_step(best_res)
    stats = ShrinkStats(before, statement_count(best.program), tried, kept,
                        round(time.monotonic() - t0, 2), capped, built, batches)
    return best, best_res, stats


def _candidates(p: B.Program,
                seen: set[B.Program]) -> Iterator[tuple[B.Program, bool]]:
    """Candidates of every pass in order, filtered (new, strictly smaller, well
    typed), each with whether its pass is race-safe. A candidate filtered out stays
    in `seen`: it would be filtered out again from any smaller program."""
    key = size_key(p)
    for make, safe in PASSES:
        for cand in make(p):
            if cand in seen:
                continue
            seen.add(cand)
            if size_key(cand) >= key or not typechecks(cand):
                continue
            yield cand, safe


def _prefetch(prefetch: Prefetch | None, cands: list[Generated],
              deadline: float) -> int | None:
    """How many of `cands` the oracle has checked as one batch (None: none, each
    is checked on its own)."""
    if prefetch is None or len(cands) < 2:
        return None
    try:
        ready = prefetch(cands, deadline)
    except GpusemError:
        return None  # one bad candidate: each is checked on its own
    return None if ready is None else int(ready)


def _first_keeping(cands: list[Generated], signature: str, check: Check,
                   deadline: float) -> tuple[tuple[Generated, CheckResult] | None, int]:
    """The first of `cands` that fails with `signature`, and how many verdicts were
    read to find it (all of them, or fewer when the deadline came first)."""
    for read, cand in enumerate(cands):
        if read and time.monotonic() >= deadline:
            return None, read
        try:
            res = check(cand)
        except GpusemError:
            continue
        if res.status == "finding" and res.signature == signature:
            return (cand, res), read + 1
    return None, len(cands)
