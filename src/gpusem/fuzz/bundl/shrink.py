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
through the target's `prefetch` (one backend build per batch) under a time and count
cap.

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
Prefetch = Callable[[list[Generated]], object]

BATCH = 6  # candidates per backend build: one g++ run amortised, little wasted work


@dataclass(frozen=True, slots=True)
class ShrinkStats:
    before: int      # size on entry (after hypothesis): statements; Prism: lines
    after: int       # size on exit
    tried: int       # candidates sent to the oracle
    kept: int        # candidates accepted
    seconds: float
    capped: bool     # stopped by the time / candidate cap, not at a fixpoint

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# --------------------------------------------------------------------------- driver


def shrink(start: Generated, signature: str, check: Check,
           prefetch: Prefetch | None = None, budget_s: float = 60.0,
           max_tried: int = 400) -> tuple[Generated, CheckResult | None, ShrinkStats]:
    """Greedy reduction to a fixpoint. `check(g)` -> CheckResult; `prefetch(gs)` warms
    the oracle for a batch. A candidate is race-free by construction iff its parent is
    and the edit is race-safe. Returns (program, result or None, ShrinkStats)."""
    t0 = time.monotonic()
    seen = {start.program}
    best, tried, kept, capped = start, 0, 0, False
    best_res: CheckResult | None = None
    before = statement_count(start.program)
    while True:
        step = None
        for programs, safe in _batches(best.program, seen):
            if time.monotonic() - t0 > budget_s or tried >= max_tried:
                capped = True
                break
            trusted = safe and best.race_free_by_construction
            candidates = [Generated(p, race_free_by_construction=trusted)
                          for p in programs]
            tried += len(candidates)
            step = _first_keeping(candidates, signature, check, prefetch)
            if step is not None:
                break
        if step is None:
            break
        best, best_res = step
        kept += 1
    stats = ShrinkStats(before, statement_count(best.program), tried, kept,
                        round(time.monotonic() - t0, 2), capped)
    return best, best_res, stats


def _batches(p: B.Program,
             seen: set[B.Program]) -> Iterator[tuple[list[B.Program], bool]]:
    """Candidates of every pass in order, filtered (new, strictly smaller, well typed),
    cut into batches that never mix passes (a cheap pass's hit ends the round)."""
    key = size_key(p)
    for make, safe in PASSES:
        batch: list[B.Program] = []
        for cand in make(p):
            if cand in seen:
                continue
            seen.add(cand)
            if size_key(cand) >= key or not typechecks(cand):
                continue
            batch.append(cand)
            if len(batch) == BATCH:
                yield batch, safe
                batch = []
        if batch:
            yield batch, safe


def _first_keeping(cands: list[Generated], signature: str, check: Check,
                   prefetch: Prefetch | None) -> tuple[Generated, CheckResult] | None:
    if prefetch is not None and len(cands) > 1:
        try:
            prefetch(cands)
        except GpusemError:
            pass  # one bad candidate: each is checked on its own below
    for cand in cands:
        try:
            res = check(cand)
        except GpusemError:
            continue
        if res.status == "finding" and res.signature == signature:
            return cand, res
    return None
