"""A faster AMIR machine with exactly the reference machine's verdicts: the symmetry of
the tasks of a kernel (issue 16's checker-speed goal). Entry: `check_amir_fast`.

The reference machine (interpreter/amir/machine.py) stays the definition. The static
preconditions are interpreter/amir/fast_nest.py. `FastMachine`
is that machine, except at a *task nest*: a top-level `for t in loop(..)` whose body
starts with IncTaskID (a CudaDeviceFunction's cuda_tasks nest, Figure 5), possibly
nested. Where the preconditions below hold it runs the FIRST task only, and proves
that every other task would give the same outcome; where they do not, it simply goes
on running the remaining tasks, which is what the reference does.

Why that is exact (proofs_notes/fast_checker.md has the argument in full):
  (1) every statement of a task is GPU-scoped: task ι's lifts only add blocks for
      threads of ι (Definition B.3), so no task ever makes a record visible to
      another task's threads, and a record's evolution depends on nothing but the
      lifts applied to it (λ is pointwise, Definition B.2);
  (2) a task's variables are fresh: allocated in the task before use (local records
      and barrier counts start empty, Figure 22's Alloc);
  (3) the task loop variables occur only in the coordinates of *outside* variables
      (parameters, host allocations), additively and with constant coefficients: task
      j runs the statements of task 1 with every outside window translated by δ_j;
  (4) the translated footprints do not interfere: a cell two tasks touch is only
      read-recorded (RecordRead) and mutate-checked (CheckMutates) by them, so no
      task's check sees another task's record and no task clears one;
  (5) every outside cell a task touches holds, when the nest starts, the record set
      of the corresponding cell of task 1 (checked on the set ids; usually every
      array is uniform), and the translated windows stay in bounds;
  (6) nothing after the nest can observe the records the skipped tasks would have
      made: no check statement follows at top level.
Then task j's run is task 1's up to renaming (task id, lifetimes, translation): the
same checks pass, the same statistics accrue, so the verdict is task 1's and the
statistics are n times task 1's. If task 1 is rejected, that is the reference's
first violation (task 1 runs first there too, from the same state).

Everywhere else (the statements outside the nests, and a nest whose preconditions
fail, run as the reference runs it) long loops go through the iteration memo, as in
`check_amir` (interpreter/amir/memo.py: the same verdict and statistics). The first
task's own body is stepped: a replayed iteration would not log its footprint.

Conventions: as interpreter/amir/machine.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from gpusem.calculus.amir import ast as A
from gpusem.calculus.errors import BudgetExhausted
from gpusem.interpreter.amir.checks import Verdict
from gpusem.interpreter.amir.ctrl import Index, compile_c
from gpusem.interpreter.amir.fast_nest import Coeffs, Nest, has_check, task_nest
from gpusem.interpreter.amir.machine import (
    DEFAULT_MAX_STEPS,
    MEMO_MIN_ITERATIONS,
    AccessStmt,
    Machine,
    Run,
    run_closed,
)
from gpusem.interpreter.amir.memo import Tables, unexamined
from gpusem.interpreter.amir.state import MachineState

# The touches that never interact across tasks (precondition (4)).
_READ_KINDS = (A.RecordRead, A.CheckMutates)
BoxT = tuple[tuple[int, int], ...]


def check_amir_fast(prog: A.AProc, defines: Mapping[str, int], *,
                    max_steps: int = DEFAULT_MAX_STEPS) -> Verdict:
    """`check_amir`'s verdict (and statistics), faster on kernels whose tasks are
    translates of one another."""
    # Note: as check_amir, the collector stays paused until the machine is closed
    # (its memos refer to it: reference counting frees it then, in this call).
    return run_closed(lambda: FastMachine(prog, defines, max_steps=max_steps))


# ------------------------------------------------------------------- the machine


Touch = tuple[str, bool, BoxT]   # (outside variable, a write-kind touch, cells)


@dataclass
class _Task1:
    """What the first task did: its outside footprint, its loop-entry statement
    increments (for the step budget) and its statistics."""

    touches: list[Touch] = field(default_factory=list)
    incs: list[tuple[int, A.Loop]] = field(default_factory=list)
    stats: tuple[int, int, int, int] = (0, 0, 0, 0)
    allocs: int = 0


class FastMachine(Machine):
    def __init__(self, prog: A.AProc, defines: Mapping[str, int], *,
                 max_steps: int = DEFAULT_MAX_STEPS):
        MachineState.__init__(self, prog, defines, max_steps=max_steps)
        # the iteration memo outside the first task (module docstring)
        self.memo_min = MEMO_MIN_ITERATIONS
        self.memos = []
        self.memo_tables = Tables()
        self.unseen = unexamined(prog.body)
        self._task1: _Task1 | None = None     # set while the first task runs
        self._t1 = _Task1()                   # the last first task run
        self._outside: set[str] = set()
        self.fast_nests = 0                   # nests decided by symmetry (tests)
        self.skipped_statements = 0           # counted, not interpreted (tests)
        bound = frozenset(prog.params)
        body: list[Run] = []
        segment: list[A.AStmt] = []
        for i, s in enumerate(prog.body):
            nest = None if has_check(prog.body[i + 1:]) else task_nest(s)
            if nest is None:
                segment.append(s)
                continue
            body += self.compile_body(tuple(segment), bound)
            segment = []
            body.append(self._nest_run(s, nest, bound))
        body += self.compile_body(tuple(segment), bound)
        self.body = body

    # -------------------------------------------------- logging the first task

    def _access_run(self, run: Sequence[AccessStmt], bound: frozenset[str]) -> Run:
        s = run[0]
        name, ndim, origin = s.access.name, len(s.access.coords), s.origin
        win, ops = self._access_ops(run, bound)
        write = not all(isinstance(x, _READ_KINDS) for x in run)
        resolve = self.resolve

        def logged() -> None:
            # the cells resolved once, for the log and the judgments (resolving is
            # a function of σ and the variable's shape, which logging leaves alone;
            # it was resolved twice, a quarter of seq = par's resolves)
            v, idx, box = resolve(name, ndim, win, origin)
            t1 = self._task1
            if t1 is not None and name in self._outside:
                t1.touches.append((name, write, _box(idx, v.shape)))
            for op in ops:
                op(v, idx, box)
        return logged

    def _rule_loop(self, s: A.Loop, bound: frozenset[str]) -> Run:
        base = super()._rule_loop(s, bound)
        lo, hi = compile_c(s.lo, bound, s.origin), compile_c(s.hi, bound, s.origin)
        width, env = max(1, len(s.body)), self.env

        def loop() -> None:
            t1 = self._task1
            if t1 is not None:
                m, n = lo(env), hi(env)
                if m < n:
                    t1.incs.append((width * (n - m), s))
            base()
        return loop

    # --------------------------------------------------------------- the nest

    def _nest_run(self, s: A.AStmt, nest: Nest, bound: frozenset[str]) -> Run:
        compiled: list[Run] = []

        def reference() -> None:               # compiled only if ever needed
            if not compiled:
                compiled.append(self.compile_stmt(s, bound))
            compiled[0]()
        inner = bound | set(nest.vars)
        memo_min, self.memo_min = self.memo_min, None   # the first task is logged:
        try:                                            # every statement steps
            body = self.compile_body(nest.body, inner)
        finally:
            self.memo_min = memo_min
        bounds = [(compile_c(lp.lo, bound | set(nest.vars[:i]), lp.origin),
                   compile_c(lp.hi, bound | set(nest.vars[:i]), lp.origin))
                  for i, lp in enumerate(nest.loops)]
        env = self.env

        def nest_run() -> None:
            ranges = [(lo(env), hi(env)) for lo, hi in bounds]
            names = set(nest.outside)
            if any(n <= m for m, n in ranges) or \
                    not all(x in self.vars and self.vars[x].allocated for x in names):
                reference()
                return
            self._run_nest(nest, ranges, body, names)
        return nest_run

    def _run_nest(self, nest: Nest, ranges: list[tuple[int, int]],
                  body: list[Run], names: set[str]) -> None:
        """The reference's nest semantics (LoopStep, InctaskID), the first task
        logged, the others skipped when the preconditions hold."""
        tasks = list(itertools.product(*(range(m, n) for m, n in ranges)))
        uniform = all(_uniform(self.vars[x]) for x in names)
        snapshot = None if uniform else {x: (self.vars[x].rd.copy(),
                                             self.vars[x].mu.copy()) for x in names}
        saved = {lp.var: self.env.get(lp.var) for lp in nest.loops}
        decided = False
        previous: tuple[int, ...] | None = None
        try:
            for k, values in enumerate(tasks):
                self._enter_levels(nest, ranges, values, previous)
                previous = values
                if k == 0:
                    self._first_task(body, names)
                    decided = self._symmetric(nest, tasks, snapshot)
                    if decided:
                        self._skip(nest, ranges, tasks)
                        self.fast_nests += 1
                        return
                    continue
                for st in body:
                    st()
        finally:
            for var, old in saved.items():
                if old is None:
                    self.env.pop(var, None)
                else:
                    self.env[var] = old

    def _enter_levels(self, nest: Nest, ranges: list[tuple[int, int]],
                      values: tuple[int, ...], previous: tuple[int, ...] | None) -> None:
        """Advance from the previous task's iteration to `values` as the loops of the
        reference do: a loop entered anew adds its statements (and may exhaust the
        budget); each iteration begins with IncTaskID."""
        first = 0 if previous is None else next(
            i for i, (a, b) in enumerate(zip(values, previous)) if a != b)
        for i in range(first, len(values)):
            self.env[nest.vars[i]] = values[i]
            if previous is None or i > first:   # loop i entered anew
                m, n = ranges[i]
                self._budget(max(1, len(nest.loops[i].body)) * (n - m), nest.loops[i])
            self.task += 1

    def _budget(self, inc: int, loop: A.Loop) -> None:
        self.stats.statements += inc
        if self.stats.statements > self.max_steps:
            raise BudgetExhausted(f"step budget exhausted: more than {self.max_steps} "
                                  f"statements", rule="LoopStep", span=loop.origin)
        self.guard.tick(loop.origin, "LoopStep")  # the memory budget (issue 15)

    def _first_task(self, body: list[Run], names: set[str]) -> None:
        st0 = self.stats
        before = (st0.statements, st0.recorded_accesses, st0.records, st0.lifts)
        allocs = self.incarnations
        self._task1, self._outside = _Task1(), names
        try:
            for st in body:
                st()
        finally:
            t1 = self._task1
            self._task1, self._outside = None, set()
        st1 = self.stats
        after = (st1.statements, st1.recorded_accesses, st1.records, st1.lifts)
        t1.stats = tuple(b - a for a, b in zip(before, after))  # type: ignore[assignment]
        t1.allocs = self.incarnations - allocs
        self._t1 = t1

    def _symmetric(self, nest: Nest, tasks: list[tuple[int, ...]],
                   snapshot: dict[str, tuple[np.ndarray, np.ndarray]] | None) -> bool:
        """Preconditions (4) and (5) on the first task's footprint."""
        t1 = self._t1
        first = tasks[0]
        for name, coeffs in nest.outside.items():
            touched = [(w, b) for x, w, b in t1.touches if x == name]
            if not touched:
                continue
            shifts = {_shift(coeffs, nest.vars, first, t) for t in tasks}
            if len(shifts) != len(tasks) and any(w for w, _ in touched):
                return False                     # two tasks on the same cells
            v = self.vars[name]
            boxes = [b for _, b in touched]
            if not _in_bounds(_bbox(boxes), shifts, v.shape):
                return False
            writes = [b for w, b in touched if w]
            if writes and not _disjoint(writes, boxes, shifts):
                return False
            if snapshot is not None and not _same_entry(snapshot[name], boxes, shifts):
                return False
        return True

    def _skip(self, nest: Nest, ranges: list[tuple[int, int]],
              tasks: list[tuple[int, ...]]) -> None:
        """Account for tasks 2..n as the reference would have run them: their task
        ids, loop entries, statistics (each task's are the first task's)."""
        t1 = self._t1
        d_stmt, d_acc, d_rec, d_lift = t1.stats
        body_incs = sum(i for i, _ in t1.incs)
        assert d_stmt == body_incs
        st = self.stats
        previous = tasks[0]
        total = 0
        for values in tasks[1:]:
            first = next(i for i, (a, b) in enumerate(zip(values, previous)) if a != b)
            total += sum(max(1, len(nest.loops[i].body)) * (ranges[i][1] - ranges[i][0])
                         for i in range(first + 1, len(values)))
            total += body_incs
            previous = values
        if st.statements + total > self.max_steps:
            self._replay_budget(nest, ranges, tasks)     # raises where the reference does
        st.statements += total
        self.skipped_statements += total
        n = len(tasks) - 1
        st.recorded_accesses += n * d_acc
        st.records += n * d_rec
        st.lifts += n * d_lift
        self.task += sum(len(tasks[0]) - next(
            i for i, (a, b) in enumerate(zip(cur, prev)) if a != b)
            for prev, cur in itertools.pairwise(tasks))
        self.incarnations += n * t1.allocs

    def _replay_budget(self, nest: Nest, ranges: list[tuple[int, int]],
                       tasks: list[tuple[int, ...]]) -> None:
        previous = tasks[0]
        for values in tasks[1:]:
            first = next(i for i, (a, b) in enumerate(zip(values, previous)) if a != b)
            for i in range(first + 1, len(values)):
                m, n = ranges[i]
                self._budget(max(1, len(nest.loops[i].body)) * (n - m), nest.loops[i])
            for inc, loop in self._t1.incs:
                self._budget(inc, loop)
            previous = values
        raise AssertionError("the budget replay did not exhaust the budget")


# ----------------------------------------------------------------------- helpers


def _box(idx: Index, shape: tuple[int, ...]) -> BoxT:
    out = []
    for i, n in zip(idx, shape):
        if isinstance(i, int):
            out.append((i, i + 1))
        else:
            lo, hi, _ = i.indices(n)
            out.append((lo, max(lo, hi)))
    return tuple(out)


def _shift(coeffs: list[Coeffs], tvars: list[str], first: tuple[int, ...],
           values: tuple[int, ...]) -> tuple[int, ...]:
    delta = {t: b - a for t, a, b in zip(tvars, first, values)}
    return tuple(sum(c * delta[t] for t, c in cs.items()) for cs in coeffs)


def _bbox(boxes: list[BoxT]) -> BoxT:
    return tuple((min(b[d][0] for b in boxes), max(b[d][1] for b in boxes))
                 for d in range(len(boxes[0])))


def _in_bounds(bb: BoxT, shifts: set[tuple[int, ...]], shape: tuple[int, ...]) -> bool:
    for s in shifts:
        for (lo, hi), d, n in zip(bb, s, shape):
            if lo < hi and (lo + d < 0 or hi + d > n):
                return False
    return True


def _meet(a: BoxT, b: BoxT, d: tuple[int, ...]) -> bool:
    return all(max(lo1, lo2 + k) < min(hi1, hi2 + k)
               for (lo1, hi1), (lo2, hi2), k in zip(a, b, d))


def _disjoint(writes: list[BoxT], boxes: list[BoxT],
              shifts: set[tuple[int, ...]]) -> bool:
    """(4): no write-kind box of one task meets any box of another task."""
    wb, fb = _bbox(writes), _bbox(boxes)
    diffs = {tuple(b - a for a, b in zip(s, t)) for s in shifts for t in shifts
             if s != t}
    for d in diffs:
        if not _meet(wb, fb, d):
            continue
        if any(_meet(w, f, d) for w in writes for f in boxes):
            return False
    return True


def _same_entry(arrays: tuple[np.ndarray, np.ndarray], boxes: list[BoxT],
                shifts: set[tuple[int, ...]]) -> bool:
    """(5): every task finds, at its translated cells, task 1's entry record sets."""
    for arr in arrays:
        for b in boxes:
            here = arr[tuple(slice(lo, hi) for lo, hi in b)]
            for s in shifts:
                there = arr[tuple(slice(lo + d, hi + d) for (lo, hi), d in zip(b, s))]
                if not np.array_equal(here, there):
                    return False
    return True


def _uniform(v: object) -> bool:
    from gpusem.interpreter.amir.store import Var

    assert isinstance(v, Var)
    whole = tuple((0, n) for n in v.shape)
    for attr in ("rd", "mu"):
        if v.known(attr, whole) is not None:
            continue
        arr = getattr(v, attr)
        if arr.size and arr.min() != arr.max():
            return False
    return True

