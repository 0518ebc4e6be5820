"""The configuration of the AMIR abstract machine, ⟨σ, ι, ρ⟩ (Exo-GPU Section 5.3), and
how a statement reaches it: E#-Acc of Figure 6 (a window resolved to the cells of a
variable, out of bounds a trap, or growth for a procedure argument), the barrier cells
of a barrier access with their arrive counts (P_{E#, ρ} of Definition B.1), and the
executing threads g_{s#}(σ, ι) of Definition 5.2.

The rules that change the configuration (Figures 21, 22 and 7) are compiled by
`Machine` (interpreter/amir/machine.py), a `MachineState`; the representation of ρ is
interpreter/amir/store.py's, the records' interpreter/amir/records.py's.

Conventions (paper -> Python):
  σ (control environment)     -> `MachineState.env` (dict)
  ι (task id)                 -> `MachineState.task`
  ρ (synchronization env)     -> `MachineState.vars`: per variable x a `Var`
  W_{e#} (a window)           -> a compiled `Window` (interpreter/amir/ctrl.py), its
                                 NumPy `Index` and `Box` key
"""

from __future__ import annotations

import itertools
from typing import Callable, Mapping, cast

import numpy as np
from gpusem.calculus.amir import ast as A
from gpusem.calculus.budgets import MemoryGuard
from gpusem.calculus.errors import BadInput, Trap
from gpusem.calculus.span import Span
from gpusem.interpreter.amir.checks import Stats
from gpusem.interpreter.amir.ctrl import Box, Index, ThreadsFn, Window, box_key
from gpusem.interpreter.amir.lift import Lifts
from gpusem.interpreter.amir.records import ALL, BarrierCell, Rec, Threads
from gpusem.interpreter.amir.store import SetTable, Var, release_var

# The record cache's key: the Record* statement, its threads, and (with barriers) the
# arrive counts it observes.
RecKey = tuple[int, Threads] | tuple[int, Threads, tuple[tuple[BarrierCell, int], ...]]
# The check memo's key: record set, τ_v, t, τ_q* (a mask) and the executing threads.
CheckKey = tuple[int, int, bool, int, Threads]
# What the iteration memo (amir/memo.py) hears of a Record* while it records an
# iteration: the variable, the attribute ("rd"/"mu"), the window, the record, and
# whether the record was made now (else it came from the record cache).
Observer = Callable[[Var, str, Index, Box | None, Rec, bool], None]


class MachineState:
    """⟨σ, ι, ρ⟩ with the caches that make it fast (see machine.py's docstring)."""

    def __init__(self, prog: A.AProc, defines: Mapping[str, int], *, max_steps: int):
        missing = [p for p in prog.params if p not in defines]
        if missing:
            raise BadInput(f"missing definition: -D {missing[0]}=... "
                           f"(procedure {prog.name} takes {', '.join(prog.params)})")
        self.prog = prog
        self.env: dict[str, int] = {p: int(defines[p]) for p in prog.params}
        self.task = 0
        self.vars: dict[str, Var] = {}
        self.sets = SetTable()
        self.lifts = Lifts(self.sets, strict=prog.strict_witness)
        self.rec_cache: dict[RecKey, tuple[tuple[Rec, ...], int]] = {}
        self.check_memo: dict[CheckKey, Rec | None] = {}
        self.incarnations = 0
        self.task_allocs = 0          # `incarnations` at the last InctaskID
        self.observer: Observer | None = None
        # (variable, attribute) pairs no rule examines (memo.unexamined): records
        # into them are counted, not stored (only with the iteration memo)
        self.unseen: frozenset[tuple[str, str]] = frozenset()
        self.stats = Stats()
        self.max_steps = max_steps
        self.guard = MemoryGuard(prog.span.file)  # the memory budget (issue 15)

    def drop(self, v: Var) -> None:
        """A variable's lifetime ends: its cells release their record sets, and a
        barrier's arrive-count registrations are forgotten."""
        release_var(self.sets, v, "rd")
        release_var(self.sets, v, "mu")
        if v.arr is not None:
            self.lifts.forget_barrier(v.key)

    def who(self, threads: ThreadsFn) -> Threads:
        mask = threads(self.env)
        return ALL if mask is None else (self.task, mask)

    def new_epoch(self) -> None:
        self.rec_cache.clear()
        self.check_memo.clear()
        self.sets.collect()

    def p_of(self, bars: list[tuple[str, Window]]) -> dict[BarrierCell, int]:
        """P_{E#, ρ}: the current arrive count of each barrier cell in E#."""
        p: dict[BarrierCell, int] = {}
        for name, w in bars:
            v = self.vars.get(name)
            if v is not None and v.arr is not None and w.points:
                idx = w(self.env, v.shape)
                if idx is not None:                      # one cell, in bounds
                    cell = cast(tuple[int, ...], idx)    # w.points: ints only
                    p[(v.key, cell)] = int(v.arr[cell])
                    continue
            p.update(self.barrier_cells(name, None, w, None))
        return p

    def bar_var(self, name: str) -> Var:
        v = self.vars.get(name)
        if v is None or v.arr is None:
            raise BadInput(f"barrier: {name} is not an allocated barrier",
                           rule="E#-Acc")
        return v

    def barrier_cells(self, name: str, ndim: int | None, win: Window,
                      origin: Span | None) -> dict[BarrierCell, int]:
        """{(barrier key, cell index): arrive count} for a barrier access."""
        v = self.bar_var(name)
        if len(v.shape) != win.ndim:
            raise BadInput(f"access: barrier {name} has {len(v.shape)} dimensions, "
                           f"accessed with {win.ndim} at {origin}", rule="E#-Acc")
        idx = win.raw(self.env, v.shape)
        self.check_bounds(v, idx, win.points, origin)
        arr = v.arr
        assert arr is not None                           # bar_var checked it
        if win.points:
            cell = cast(tuple[int, ...], idx)            # win.points: ints only
            return {(v.key, cell): int(arr[cell])}
        # E#-Acc (Figure 6): W-Tuple is the product of W-Point {i} and W-Range sets,
        # so a window mixing points and intervals (z[0, 0:2]) names every cell of
        # the product.
        ranges = [range(i, i + 1) if isinstance(i, int) else range(*i.indices(n))
                  for i, n in zip(idx, v.shape)]
        return {(v.key, c): int(arr[c]) for c in itertools.product(*ranges)}

    def resolve(self, name: str, ndim: int, win: Window,
                origin: Span) -> tuple[Var, Index, Box | None]:
        """E#-Acc: the variable, the NumPy index of the accessed cells, and the box key
        of a window (None for a single cell)."""
        v = self.vars.get(name)
        if v is None:
            v = self.vars[name] = Var(name, (0,) * ndim, False, (name, 0), False)
        elif len(v.shape) != ndim:
            raise BadInput(f"access: {name} has {len(v.shape)} dimensions, accessed "
                           f"with {ndim} at {origin}", rule="E#-Acc", span=origin)
        got = win(self.env, v.shape)
        if got is None:
            idx = win.raw(self.env, v.shape)
            self.check_bounds(v, idx, win.points, origin)
            return v, idx, (None if win.points else box_key(idx))
        if win.points:
            return v, cast(tuple[int, ...], got), None
        pair = cast(tuple[Index, Box], got)
        return v, pair[0], pair[1]

    def check_bounds(self, v: Var, idx: Index, points: bool,
                     origin: Span | None) -> None:
        """Out of [0, shape): a trap for an allocated variable; an unallocated one (a
        procedure argument) grows to fit."""
        need = []
        for i, n in zip(idx, v.shape):
            lo, hi = (i, i + 1) if isinstance(i, int) else (i.start, max(i.start,
                                                                         i.stop))
            if lo < 0 or (hi > n and v.allocated):
                raise Trap(f"out of bounds: {v.name}{show_index(idx)} outside shape "
                           f"{v.shape} at {origin}", rule="E#-Acc",
                           span=origin or Span("<amir>", 0, 0, 0, 0))
            need.append(max(hi, n))
        if not v.allocated and tuple(need) != v.shape:
            v.grow(tuple(need))

    def first_cell(self, arr: np.ndarray, idx: Index, points: bool,
                   sids: dict[int, Rec]) -> tuple[tuple[int, ...], int]:
        """The first cell (row-major) of the window holding one of `sids`."""
        if points:                                       # idx: ints only
            return tuple(int(i) for i in cast(tuple[int, ...], idx)), int(arr[idx])
        sub = arr[idx]
        hit = np.isin(sub, list(sids))
        pos = np.unravel_index(int(np.argmax(hit)), sub.shape)
        return absolute_cell(idx, tuple(int(i) for i in pos), False), int(sub[pos])


def show_index(idx: Index) -> str:
    parts = [str(i) if isinstance(i, int) else f"{i.start}:{i.stop}" for i in idx]
    return f"[{', '.join(parts)}]"


def absolute_cell(idx: Index, pos: tuple[int, ...], points: bool) -> tuple[int, ...]:
    """Cell coordinates from a box index and a position inside it."""
    if points:                                           # idx: ints only
        return tuple(int(i) for i in cast(tuple[int, ...], idx))
    it = iter(pos)
    out = []
    for i in idx:
        out.append(int(i) if isinstance(i, int) else i.start + next(it))
    return tuple(out)
