"""The CUDA reducer's driver: the passes to a fixpoint under a time budget.

One round runs every pass in order (`DEFAULT_PASSES`); a pass walks its sites front to
back, and at each site tries the alternatives in order, keeping the first candidate
that (1) is smaller (`tokens.size_key`, so the fixpoint ends), (2) has balanced
brackets and, when the test or a guard compiles it (`compiles`), still declares every
name it uses that the text it was cut from declared (`declared.py`): free checks that
save a compiler run, (3) the interestingness test calls interesting and (4) every
guard accepts. Rounds repeat until one changes nothing or
the budget is spent; then `clang_format_lite` normalises the whitespace, kept if the
test still agrees. Verdicts are cached by text, so no candidate runs twice.

A guard marked `late` (`BuildsAlone`: a full `nvcc -c`, ~4x the CPU of the test's
`nvcc -ptx`, and refused on 2 of 27 candidates the test kept in a bloated-T1
reduction) is not asked of each kept candidate: it is asked of the last kept text
after every LATE_EVERY kept candidates and at the end of each pass's walk (with the
janitor after it). When it refuses, a bisection over the candidates kept since it
last accepted finds the first refused one, which is marked uninteresting; the search
goes back to the text before it (the late guards accepted that one) and goes on (at
the end of a walk: the walk runs again). So every text a walk ends with, and the
result, passes every guard. The bloated-T1 reduction of
tests/fuzz/test_cuda_reduce_nvcc.py ran `nvcc -c` 47 times, now 20
(scripts/measure_cuda_reduce_t1.py).

Deterministic: no randomness, no clock in any decision except the budget's stop; one
candidate at a time. Two runs with the same budget that both reach the fixpoint give
the same text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpusem.fuzz.cuda_reduce.declared import declared_names, loses_a_declaration
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
# How many kept candidates wait for the late guards at most: a long chain costs few
# builds, but a refusal in it costs a bisection and throws away the work after the
# refused candidate. With a build ~4x a test, ~2.5 tests per kept candidate and ~1
# refusal in 13 kept candidates (a bloated-T1 reduction), a chain of 3 to 8 costs
# about the same per kept candidate (~0.5 of a build, against 1 when each is built);
# 4 is the low end of that.
LATE_EVERY = 4


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
        self.cheap = [g for g in guards if getattr(g, "cheap", False)]
        self.late = [g for g in guards if getattr(g, "late", False)]
        self.dear = [g for g in guards if g not in self.cheap and g not in self.late]
        # a candidate must compile (the test or a guard builds it): one that lost the
        # last declaration of a name it uses is refused without a compiler run
        self.compiles = any(getattr(c, "compiles", False) for c in (test, *guards))
        self._declared: tuple[str, set[str]] = ("", set())
        self.cache: dict[str, bool] = {}
        self.late_cache: dict[str, bool] = {}
        self.tests, self.round, self.pass_name = 0, 0, ""
        self.t0 = time.monotonic()
        self.best = ""
        self.settled = ""  # the last text the late guards accepted
        self.unsettled: list[str] = []  # texts kept since, oldest first
        self.stayed = 0  # kept texts the late guards let stay, in all

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def keeps(self, candidate: str) -> bool:
        """Whether the walk may keep `candidate` (it then becomes the best text)."""
        if candidate in self.cache:
            # kept again (after a roll-back): it waits for the late guards again
            return self.cache[candidate] and self._unsettled(candidate)
        if size_key(candidate) >= size_key(self.best) or not _balanced(candidate):
            return False
        if self.compiles and self._loses_a_declaration(candidate):
            return False
        if self.out_of_time():
            return False
        self.tests += 1
        # static guards first (free), then the test, then the guards that compile;
        # the late ones wait for `settle`
        ok = all(g(candidate) is None for g in self.cheap) and self.test(candidate) \
            and all(g(candidate) is None for g in self.dear)
        self.cache[candidate] = ok
        if self.on_progress is not None:
            self.on_progress(Progress(self.round, self.pass_name,
                                      count_lines(candidate if ok else self.best),
                                      self.tests, time.monotonic() - self.t0))
        return ok and self._unsettled(candidate)

    def _loses_a_declaration(self, candidate: str) -> bool:
        if self._declared[0] is not self.best:
            self._declared = (self.best, declared_names(code_tokens(self.best)))
        return loses_a_declaration(self._declared[1], code_tokens(candidate))

    def _unsettled(self, candidate: str) -> bool:
        """Queue a kept candidate for the late guards; at LATE_EVERY queued, settle
        (False: a refusal sent the best text back, so the walk does not keep it)."""
        if not self.late:
            return True
        self.unsettled.append(candidate)
        return len(self.unsettled) < LATE_EVERY or self.settle()

    def _late_ok(self, text: str) -> bool:
        if text not in self.late_cache:
            self.late_cache[text] = all(g(text) is None for g in self.late)
        return self.late_cache[text]

    def settle(self) -> bool:
        """Ask the late guards about the last text kept. True: it passes, and so
        every text kept since the last settle stays. Else the first refused one is
        found by bisection (the late guards accepted the one before it), marked
        uninteresting, and the best text goes back to the one before it."""
        chain, self.unsettled = self.unsettled, []
        if not chain or self._late_ok(chain[-1]):
            if chain:
                self.settled = chain[-1]
            self.stayed += len(chain)
            return True
        # invariant: chain[good] accepted (-1: self.settled), chain[bad] refused
        good, bad = -1, len(chain) - 1
        while bad - good > 1:
            mid = (good + bad) // 2
            if self._late_ok(chain[mid]):
                good = mid
            else:
                bad = mid
        self.cache[chain[bad]] = False
        if good >= 0:
            self.settled = chain[good]
        self.best = self.settled
        self.stayed += good + 1
        return False


def _token_texts(text: str) -> list[str]:
    return [t.text for t in code_tokens(text)]


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
            base = s.best
            candidate = apply(base, alt)
            if s.keeps(candidate):
                s.best, kept = candidate, kept + 1
                break
            if s.best is not base:  # a settle went back: the sites are stale
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
        base = s.best
        candidate = apply(base, edits)
        if s.keeps(candidate):
            s.best, kept = candidate, kept + 1
        elif s.best is base:  # (else a settle went back: the same index again)
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
        s.best = s.settled = text
        chosen = list(passes) if passes is not None else default_passes()
        stats = {p.name: PassStats() for p in chosen}
        stopped = _fixpoint(s, chosen, stats, max_rounds)
        s.deadline = t0 + budget_s
        if not s.out_of_time():
            formatted = clang_format_lite(s.best)
            if formatted != s.best:
                s.tests += 1
                # the late guards (a full nvcc -c) accepted the best text, and the
                # formatting changed no token: they are not asked again
                settled = s.late_cache.get(s.best, False) or s.best == text
                asked = [g for g in s.guards if g not in s.late] if settled and \
                    _token_texts(formatted) == _token_texts(s.best) else s.guards
                if s.test(formatted) and all(g(formatted) is None for g in asked):
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
            kept = _walk_settled(s, p, janitor, stats)
            changed = changed or kept > 0
        if not changed:
            return "fixpoint"
    return "budget" if s.out_of_time() else "rounds"


def _walk_settled(s: _Search, p: Pass, janitor: Pass | None,
                  stats: dict[str, PassStats]) -> int:
    """A walk of `p` (and of the janitor when `p` kept something), then `settle`;
    after a refusal the walk runs again from the text `settle` went back to (the
    refused candidate now cached as uninteresting). The number of kept candidates
    that stay kept."""
    if not s.late:
        kept = _walk(s, p, stats)
        if kept and janitor is not None and p is not janitor:
            _walk(s, janitor, stats)
        return kept
    before = s.stayed
    while True:
        if _walk(s, p, stats) and janitor is not None and p is not janitor:
            _walk(s, janitor, stats)
        if s.settle() or s.out_of_time():
            return s.stayed - before


def _walk(s: _Search, p: Pass, stats: dict[str, PassStats]) -> int:
    s.pass_name = p.name
    t, before = time.monotonic(), s.tests
    kept = (_run_chunks if p.chunked else _run_sites)(s, p)
    st = stats[p.name]
    st.tried += s.tests - before
    st.kept += kept
    st.seconds += time.monotonic() - t
    return kept
