"""Whether two threads can be about to make conflicting accesses at once (issue 24).

A program the race analysis declines is a real race when some reachable configuration
of the small-step machine (S-Program, Appendix A.3.1 of seed 004) has two DISTINCT
enabled threads whose next steps touch one Shared or Global cell, at least one of them
writing, and whose two orders reach different configurations: both are enabled in
that configuration, so no barrier orders the two steps, whatever the final memories
say (a race whose final memories coincide is still one). Steps that commute (a write
of the value the cell holds; two writes of one value: the analysis' equal-value rule,
errata "Uniform stores are one write") are not a conflict. Local memory is per thread
and never races.

The search visits each configuration once (`Machine.key()`) with explore.py's
reduction: where a thread's next step touches only its own state (`is_local`, or a
let / assignment / if / call that the probe saw touch no Shared or Global cell), only
that step is followed, unless it closes a cycle through the DFS stack (the stack
proviso). Every enabled thread is still probed for a pair in every configuration
visited, and a local step commutes with every other thread's, so a pair reachable
with the local step taken later is reachable with it taken first. A step's footprint
is observed, not predicted: the cells of the non-local regions are swapped for a
recording list (`_Cells`) for that one step, so the footprint is exactly what the
rules read and write, through views, partitions, memcpy and calls alike. Verdicts:

  race      a configuration with a concurrent conflicting pair (the witness: threads,
            cell, kinds and the schedule that reaches it)
  no-pair   the whole state space is explored and no configuration has one: the
            analysis' exclusion was false
  unknown   the transition budget ran out first
  stuck     a schedule gets stuck or deadlocks before any pair is found

Where the search runs out, a second budget goes to priority schedules (`_probe_runs`,
after PCT, Burckhardt et al., ASPLOS 2010): each thread a random priority, the highest
enabled one steps, and at a few random steps the running thread drops to the lowest
priority; every configuration on the way is probed for a pair as above. The search
goes deep along one order and revisits the choices near the root last, so a pair
that needs one thread a whole loop run ahead of another (a store of the next run
against a copy of this one) lies far from where it looks; a schedule that lets one
thread run ahead and then stops it reaches it at once. It can only find races: an
`unknown` stays unknown (issue 24: seed 1's `store g1 + 2 vs memcpy from g1`, unknown
at 20,000 and found at about 300,000 transitions of the search, is found by it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, SupportsIndex

from gpusem.calculus.bundl.ast import Assign, Call, Decl, If, MemKind, Program
from gpusem.calculus.errors import Stuck, Trap
from gpusem.interpreter.bundl.explore import is_local
from gpusem.interpreter.bundl.machine import Machine

# One access: (region index, cell index, "r" | "w").
Access = tuple[int, int, str]


class _Cells(list[Any]):
    """A region's cells that log every index read and written (one step's footprint)."""

    def __init__(self, cells: list[Any], region: int, log: list[Access]):
        super().__init__(cells)
        self.region, self.log = region, log

    def _note(self, key: SupportsIndex | slice, kind: str) -> None:
        if isinstance(key, slice):
            for i in range(*key.indices(len(self))):
                self.log.append((self.region, i, kind))
        else:
            self.log.append((self.region, int(key), kind))

    def __getitem__(self, key: Any) -> Any:
        self._note(key, "r")
        return super().__getitem__(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._note(key, "w")
        super().__setitem__(key, value)


@dataclass(frozen=True)
class Pair:
    threads: tuple[int, int]  # machine thread indices (b * T + t)
    cell: str  # region name [index]
    kinds: tuple[str, str]  # "r" | "w" for each thread
    schedule: tuple[int, ...]  # thread indices from the start to the configuration


@dataclass(frozen=True)
class Verdict:
    kind: str  # race | no-pair | unknown | stuck
    states: int
    transitions: int
    pair: Pair | None = None
    message: str = ""


def _probe(m: Machine, i: int) -> tuple[list[Access], Exception | None]:
    """Step thread `i` of `m` once, recording the non-local cells it touches."""
    log: list[Access] = []
    regions = m.cfg.regions
    for r, reg in enumerate(regions):
        if reg.space is not MemKind.LOCAL:
            reg.cells = _Cells(reg.cells, r, log)
    err: Exception | None = None
    try:
        m.step(i)
    except (Stuck, Trap) as e:
        err = e
    for reg in m.cfg.regions:
        if isinstance(reg.cells, _Cells):
            reg.cells = list(reg.cells)
    return log, err


def _conflict(m: Machine, a: list[Access],
              b: list[Access]) -> tuple[str, str, str] | None:
    """The first cell one step writes and the other touches: (cell, kind, kind)."""
    writes_a = {(r, c) for r, c, k in a if k == "w"}
    writes_b = {(r, c) for r, c, k in b if k == "w"}
    for r, c, k in a:
        if (r, c) in writes_b:
            return f"{m.cfg.regions[r].name}[{c}]", k, "w"
    for r, c, k in b:
        if (r, c) in writes_a:
            return f"{m.cfg.regions[r].name}[{c}]", "w", k
    return None


def _local_thread(m: Machine, quiet: list[int]) -> int | None:
    """A thread among `quiet` (its next step touched no Shared or Global cell) whose
    step touches no other shared state either: explore.py's `is_local`, widened to
    reads of Local memory and of cells (the probe saw none of the shared ones)."""
    ths = m.threads()
    for i in quiet:
        s = ths[i].focus
        if isinstance(s, Assign) and s.name not in ths[i].env:
            continue  # may write a scalar outside the thread (cfg.globals)
        if is_local(m.cfg, ths[i]) or isinstance(s, Decl | Assign | If | Call):
            return i
    return None


def _commute(m: Machine, here: Any, i: int, j: int) -> bool:
    """Whether i then j and j then i reach one configuration (a write of the value
    already there, or two writes of one value, is not a conflict: the analysis'
    equal-value rule). Leaves `m` wherever the last order left it."""
    keys = []
    for a, b in ((i, j), (j, i)):
        m.restore(here)
        try:
            m.step(a)
            m.enabled_threads()
            m.step(b)
            m.enabled_threads()
        except (Stuck, Trap):
            return False
        keys.append(m.key())
    return keys[0] == keys[1]


def _pair_at(m: Machine, enabled: list[int]
             ) -> tuple[tuple[int, int, tuple[str, str, str]] | None, bool]:
    """Probe every enabled thread of the current configuration: a conflicting pair
    whose orders differ (j, i, (cell, kind, kind)), and whether a probe got stuck.
    Leaves `m` where it was."""
    here = m.snapshot()
    logs: list[tuple[int, list[Access]]] = []
    for i in enabled:
        m.restore(here)
        log, err = _probe(m, i)
        if err is not None:
            m.restore(here)
            return None, True
        for j, other in logs:
            hit = _conflict(m, other, log)
            if hit is not None and not _commute(m, here, i, j):
                m.restore(here)
                return (j, i, hit), False
        logs.append((i, log))
    m.restore(here)
    return None, False


def _probe_runs(prog: Program, budget: int, seed: int = 0
                ) -> tuple[Pair | None, int]:
    """Priority schedules (the module's Note) until `budget` probed transitions: the
    first concurrent conflicting pair met, with the schedule that reaches it, and
    the transitions spent."""
    rng = random.Random(seed)
    spent, length, run = 0, 0, 0
    while spent < budget:
        before = spent
        m = Machine(prog)
        n = len(m.threads())
        prio = list(range(n))
        rng.shuffle(prio)
        # run 0 measures the length; then 1 to 3 priority drops at random steps
        drops = {rng.randrange(1, length + 1) for _ in range(1 + run % 3)} \
            if length else set()
        path: list[int] = []
        while spent < budget:
            enabled = m.enabled_threads()
            if not enabled:
                break
            found, stuck = _pair_at(m, enabled)
            spent += len(enabled)
            if found is not None:
                j, i, (cell, k1, k2) = found
                return Pair((j, i), cell, (k1, k2), tuple(path)), spent
            if stuck:
                break  # the search reports a stuck schedule; nothing to find here
            pick = max(enabled, key=lambda x: prio[x])
            try:
                m.step(pick)
            except (Stuck, Trap):
                break
            path.append(pick)
            if len(path) in drops:
                prio[pick] = -len(path)  # below every other thread from now on
        if spent == before:
            break  # no thread ever enabled: nothing to probe
        length = max(length, len(path))
        run += 1
    return None, spent


def concurrent_pair(prog: Program, max_transitions: int = 20_000,
                    probe_transitions: int | None = None) -> Verdict:
    """Search the interleavings of `prog` for a concurrent conflicting pair; where
    the search runs out, `probe_transitions` (default: `max_transitions`) more go to
    priority schedules (the module's Note)."""
    verdict = _search(prog, max_transitions)
    extra = max_transitions if probe_transitions is None else probe_transitions
    if verdict.kind != "unknown" or extra <= 0:
        return verdict
    pair, spent = _probe_runs(prog, extra)
    if pair is None:
        return Verdict("unknown", verdict.states, verdict.transitions + spent)
    return Verdict("race", verdict.states, verdict.transitions + spent, pair,
                   "found by a priority schedule")


def _search(prog: Program, max_transitions: int) -> Verdict:
    """The exhaustive search with explore.py's reduction (the module's docstring)."""
    m = Machine(prog)
    seen: set[tuple[object, ...]] = set()
    on_stack: set[tuple[object, ...]] = set()
    # [key, {thread: successor snapshot}, todo, path, reduced]
    stack: list[list[Any]] = []
    count = [0]

    def arrive(path: tuple[int, ...]) -> tuple[bool, Verdict | None]:
        """Probe the current configuration; push it if it needs exploring.
        Returns (whether it closes a cycle through the DFS stack, a verdict)."""
        enabled = m.enabled_threads()  # descends: frames pushed, term unchanged
        key = m.key()
        if key in seen:
            return key in on_stack, None
        seen.add(key)
        if not enabled:
            if m.live():
                return False, Verdict("stuck", len(seen), count[0],
                                      message=f"deadlock after {list(path)}")
            return False, None
        here = m.snapshot()
        succ: dict[int, Any] = {}
        quiet: list[int] = []
        logs: list[tuple[int, list[Access]]] = []
        for i in enabled:
            m.restore(here)
            log, err = _probe(m, i)
            count[0] += 1
            if err is not None:
                return False, Verdict("stuck", len(seen), count[0],
                                      message=f"thread {i} after {list(path)}: {err}")
            succ[i] = m.snapshot()
            for j, other in logs:
                hit = _conflict(m, other, log)
                if hit is not None and not _commute(m, here, i, j):
                    pair = Pair((j, i), hit[0], (hit[1], hit[2]), path)
                    return False, Verdict("race", len(seen), count[0], pair)
            logs.append((i, log))
            if not log:
                quiet.append(i)
        m.restore(here)
        local = _local_thread(m, quiet)
        todo = [local] if local is not None else list(reversed(enabled))
        stack.append([key, succ, todo, path, local is not None, enabled])
        on_stack.add(key)
        return False, None

    _, verdict = arrive(())
    while stack and verdict is None:
        if count[0] >= max_transitions:
            return Verdict("unknown", len(seen), count[0])
        top = stack[-1]
        key, succ, todo, path, reduced, enabled = top
        if not todo:
            stack.pop()
            on_stack.discard(key)
            continue
        i = todo.pop()
        m.restore(succ[i])
        cycle, verdict = arrive(path + (i,))
        if reduced and cycle:  # the stack proviso: expand every enabled thread
            top[2] = [j for j in reversed(enabled) if j != i]
            top[4] = False
    if verdict is not None:
        return verdict
    return Verdict("no-pair", len(seen), count[0])
