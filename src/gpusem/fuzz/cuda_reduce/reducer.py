"""The CUDA reducer's driver: the passes to a fixpoint under a time budget.

One round runs every pass in order (`DEFAULT_PASSES`); a pass walks its sites front to
back, and at each site tries the alternatives in order, keeping the first candidate
that (1) is smaller (`tokens.size_key`, so the fixpoint ends), (2) has balanced
brackets (a free check that saves a compiler run), (3) the interestingness test calls
interesting and (4) every guard accepts. Rounds repeat until one changes nothing or
the budget is spent; then `clang_format_lite` normalises the whitespace, kept if the
test still agrees. Verdicts are cached by text, so no candidate runs twice.

Deterministic: no randomness, no clock in any decision except the budget's stop; one
candidate at a time. Two runs with the same budget that both reach the fixpoint give
the same text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpusem.fuzz.cuda_reduce.oracles import DEADLINE, Guard, Interesting
from gpusem.fuzz.cuda_reduce.passes import structural_passes
from gpusem.fuzz.cuda_reduce.passes_expr import clang_format_lite, expression_passes
from gpusem.fuzz.cuda_reduce.sites import Pass, Site, apply
from gpusem.fuzz.cuda_reduce.tokens import (
    CLOSE,
    OPEN,
    code_tokens,
    count_lines,
    size_key,
)

JANITOR = "remove_unused_functions_and_macros"


def default_passes(search: tuple[Path, ...] = ()) -> list[Pass]:
    return structural_passes(search) + expression_passes()


@dataclass
class PassStats:
    tried: int = 0
    kept: int = 0
    seconds: float = 0.0


@dataclass
class Progress:
    """What the reducer reports after every candidate it tests."""

    round: int
    pass_name: str
    lines: int  # lines of the best text so far
    tests: int  # candidates tested so far
    elapsed_s: float


@dataclass
class CudaReduction:
    text: str
    lines_before: int
    lines_after: int
    tests: int  # candidates run through the test
    rounds: int
    seconds: float
    stopped: str  # "fixpoint", "budget" or "rounds" (max_rounds reached)
    guards_off: list[str] = field(default_factory=list)  # failed on the input itself
    passes: dict[str, PassStats] = field(default_factory=dict)


class NotInteresting(ValueError):
    """The input itself does not pass the test."""


class _Search:
    """The state of one reduction: the best text, the cache, the clock."""

    def __init__(self, test: Interesting, guards: Sequence[Guard], deadline: float,
                 on_progress: Callable[[Progress], None] | None) -> None:
        self.test, self.guards, self.deadline = test, guards, deadline
        self.on_progress = on_progress
        self.cache: dict[str, bool] = {}
        self.tests, self.round, self.pass_name = 0, 0, ""
        self.t0 = time.monotonic()
        self.best = ""

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def keeps(self, candidate: str) -> bool:
        if candidate in self.cache:
            return self.cache[candidate]
        if size_key(candidate) >= size_key(self.best) or not _balanced(candidate):
            return False
        if self.out_of_time():
            return False
        self.tests += 1
        # static guards first (free), then the test, then the guards that compile
        cheap = [g for g in self.guards if getattr(g, "cheap", False)]
        dear = [g for g in self.guards if not getattr(g, "cheap", False)]
        ok = all(g(candidate) is None for g in cheap) and self.test(candidate) \
            and all(g(candidate) is None for g in dear)
        self.cache[candidate] = ok
        if self.on_progress is not None:
            self.on_progress(Progress(self.round, self.pass_name,
                                      count_lines(candidate if ok else self.best),
                                      self.tests, time.monotonic() - self.t0))
        return ok


def _balanced(text: str) -> bool:
    stack: list[str] = []
    for t in code_tokens(text):
        if t.text in OPEN:
            stack.append(t.text)
        elif t.text in CLOSE and (not stack or stack.pop() != CLOSE[t.text]):
            return False
    return not stack


def _run_sites(s: _Search, p: Pass) -> int:
    """One walk of a site pass; the number of candidates kept."""
    kept, index = 0, 0
    while not s.out_of_time():
        sites = p.sites(s.best)
        if index >= len(sites):
            return kept
        for alt in sites[index]:
            candidate = apply(s.best, alt)
            if s.keeps(candidate):
                s.best, kept = candidate, kept + 1
                break
        else:
            index += 1
    return kept


def _run_chunks(s: _Search, p: Pass) -> int:
    """One walk of a chunked pass (ddmin): runs of `size` sites removed together,
    `size` halved when a walk at that size ends."""
    kept, index = 0, 0
    size = max(1, len(p.sites(s.best)) // 2)
    while not s.out_of_time():
        sites: list[Site] = p.sites(s.best)
        if index >= len(sites):
            if size == 1:
                return kept
            size, index = max(1, size // 2), 0
            continue
        edits = tuple(e for site in sites[index:index + size] for e in site[0])
        if s.keeps(apply(s.best, edits)):
            s.best, kept = apply(s.best, edits), kept + 1
        else:
            index += size
    return kept


def reduce_cuda(text: str, test: Interesting, *, budget_s: float = 300.0,
                guards: Sequence[Guard] = (), passes: Sequence[Pass] | None = None,
                on_progress: Callable[[Progress], None] | None = None,
                max_rounds: int = 50) -> CudaReduction:
    """Shrink a `.cu` text while `test` holds and `guards` accept (see the module
    docstring). A guard the input itself fails is switched off and named in
    `guards_off`. Raises `NotInteresting` when the input fails the test."""
    t0 = time.monotonic()
    token = DEADLINE.set(t0 + budget_s)
    try:
        if not test(text):
            raise NotInteresting("the input is not interesting to the test")
        kept_guards: list[Guard] = []
        off: list[str] = []
        for g in guards:
            why = g(text)
            if why is None:
                kept_guards.append(g)
            else:
                off.append(f"{type(g).__name__}: {why}")
        # the last tenth of the budget (at most 30 s) is kept for the formatting
        reserve = min(30.0, 0.1 * budget_s)
        s = _Search(test, kept_guards, t0 + budget_s - reserve, on_progress)
        s.best = text
        chosen = list(passes) if passes is not None else default_passes()
        stats = {p.name: PassStats() for p in chosen}
        stopped = _fixpoint(s, chosen, stats, max_rounds)
        s.deadline = t0 + budget_s
        if not s.out_of_time():
            formatted = clang_format_lite(s.best)
            if formatted != s.best:
                s.tests += 1
                if s.test(formatted) and all(g(formatted) is None for g in s.guards):
                    s.best = formatted
    finally:
        DEADLINE.reset(token)
    return CudaReduction(s.best, count_lines(text), count_lines(s.best), s.tests,
                         s.round, time.monotonic() - t0, stopped, off, stats)


def _fixpoint(s: _Search, passes: list[Pass], stats: dict[str, PassStats],
              max_rounds: int) -> str:
    # Note: a pass that removes code leaves definitions nothing uses any more; the
    # janitor (remove_unused_functions_and_macros) runs again after every pass that
    # kept something, rather than a round later: one test when nothing is unused.
    janitor = next((p for p in passes if p.name == JANITOR), None)
    while s.round < max_rounds:
        s.round += 1
        changed = False
        for p in passes:
            if s.out_of_time():
                return "budget"
            kept = _walk(s, p, stats)
            if kept and janitor is not None and p is not janitor:
                _walk(s, janitor, stats)
            changed = changed or kept > 0
        if not changed:
            return "fixpoint"
    return "budget" if s.out_of_time() else "rounds"


def _walk(s: _Search, p: Pass, stats: dict[str, PassStats]) -> int:
    s.pass_name = p.name
    t, before = time.monotonic(), s.tests
    kept = (_run_chunks if p.chunked else _run_sites)(s, p)
    st = stats[p.name]
    st.tried += s.tests - before
    st.kept += kept
    st.seconds += time.monotonic() - t
    return kept
