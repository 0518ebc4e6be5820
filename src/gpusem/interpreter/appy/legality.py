"""The dynamic legality rules of APPy (seed 003, Sections 3.1-3.2; the static rules are
`typing_rules/appy/legality.py`) and the verdict that combines both: the rules watch
every access of the sequential reading (`sequential.run_sequential`), so a legal
program's verdict carries the reading's result, the oracle of the compiler under test.

  Legal-Disjoint      iterations (workers) of a `parallel for` touch disjoint cells,
                      except through atomic updates of the same kind (3.1, 3.4)
  Legal-SimdLanes     lanes of one `simd` chunk (<= width, default MVL) have no
                      dependence through memory (3.2), except `X[idx] += e` with idx
                      invariant in the loop: a reduction into one cell (Listing 4)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from gpusem.calculus.appy import ast as A
from gpusem.calculus.errors import BadInput, BudgetExhausted, GpusemError, IllTyped, Trap
from gpusem.interpreter.appy.sequential import AccessHooks, run_sequential
from gpusem.typing_rules.appy.legality import MVL, check_static, lane_reduction

_MANY = object()  # "read by more than one worker"
Cell = tuple[str, int]  # (array, flat cell number)


@dataclass
class _Frame:
    loop: A.For
    rule: str
    width: int
    worker: int = 0
    chunk: int = -1
    writes: dict[Cell, int] = field(default_factory=dict)      # cell -> worker
    reads: dict[Cell, object] = field(default_factory=dict)    # -> worker or _MANY
    atomics: dict[Cell, object] = field(default_factory=dict)  # -> worker or _MANY


class LegalityHooks(AccessHooks):
    """Checks Legal-Disjoint and Legal-SimdLanes on every access of the sequential
    reading; raises IllTyped at the first conflict (naming both workers and the cell)."""

    active = True

    def __init__(self, mvl: int = MVL):
        self.mvl = mvl
        self.frames: list[_Frame] = []

    def enter_loop(self, loop: A.For) -> None:
        match loop.directive:
            case A.ParallelFor():
                self.frames.append(_Frame(loop, "Legal-Disjoint", 0))
            case A.Simd(width=w):
                self.frames.append(_Frame(loop, "Legal-SimdLanes", w or self.mvl))
            case _:
                self.frames.append(_Frame(loop, "", 0))

    def exit_loop(self, loop: A.For) -> None:
        self.frames.pop()

    def iteration(self, loop: A.For, index: int, value: int) -> None:
        f = self.frames[-1]
        if f.rule == "Legal-SimdLanes":
            f.worker = index
            if index // f.width != f.chunk:  # a new chunk: lanes of old ones are done
                f.chunk = index // f.width
                f.writes, f.reads, f.atomics = {}, {}, {}
        else:
            f.worker = value

    def access(self, kind: str, array: str, cells: tuple[int, ...],
               stmt: A.Assign | None, atomic: bool) -> None:
        for f in self.frames:
            if f.rule:
                red = atomic or (f.rule == "Legal-SimdLanes" and lane_reduction(
                    f.loop, stmt))
                for c in cells:
                    self._check(f, kind, (array, c), stmt, red)

    def _check(self, f: _Frame, kind: str, cell: Cell, stmt: A.Assign | None,
               atomic: bool) -> None:
        w = f.worker
        if atomic:
            other = f.writes.get(cell, w)
            rd = f.reads.get(cell, w)
            ok = other == w and rd == w
            if ok:
                f.atomics[cell] = w if f.atomics.get(cell, w) == w else _MANY
                return
            self._fail(f, cell, stmt, "an atomic update races with a plain access")
        at = f.atomics.get(cell)
        if at is not None and at != w:
            self._fail(f, cell, stmt, "a plain access races with another worker's atomic")
        wr = f.writes.get(cell)
        if wr is not None and wr != w:
            self._fail(f, cell, stmt, f"{f.loop.var}={wr} writes it")
        if kind == "write":
            rd = f.reads.get(cell)
            if rd is not None and rd != w:
                self._fail(f, cell, stmt, "another worker reads it")
            f.writes[cell] = w
        else:
            prev = f.reads.get(cell, w)
            f.reads[cell] = w if prev == w else _MANY

    def _fail(self, f: _Frame, cell: Cell, stmt: A.Assign | None, why: str) -> None:
        arr, flat = cell
        who = "lane" if f.rule == "Legal-SimdLanes" else "worker"
        raise IllTyped(f"conflict: {who} {f.loop.var}={f.worker} and another touch "
                       f"{arr}[flat {flat}]: {why}", rule=f.rule,
                       span=stmt.span if stmt is not None else f.loop.span)


# ------------------------------------------------------------------------ verdict


VERDICT_KINDS = ("legal", "illegal", "trap", "budget", "bad-input", "error")


@dataclass(frozen=True)
class Verdict:
    """`kind`: legal (with `expected`, the oracle), illegal (a legality rule), trap
    (the sequential reading itself fails: out of bounds, division by zero), budget (it
    ran out of steps), bad-input (inputs that do not fit the program), error (another
    error of the semantics); only a legal program is compared with a compiler."""

    legal: bool
    rule: str = ""
    message: str = ""
    expected: dict[str, np.ndarray] | None = None
    kind: str = "legal"


def check_legal(fn: A.Function, arrays: dict[str, np.ndarray],
                scalars: dict[str, int | float], *, mvl: int = MVL,
                max_steps: int = 2_000_000) -> Verdict:
    """Static rules, then the sequential reading with the dynamic rules watching: a
    legal program's Verdict carries the expected result (the oracle). Never raises
    for a program or input the semantics rejects: the Verdict says why."""
    try:
        check_static(fn)
        out = run_sequential(fn, arrays, scalars, hooks=LegalityHooks(mvl),
                             max_steps=max_steps)
    except GpusemError as err:
        kind = ("illegal" if isinstance(err, IllTyped) else "trap" if isinstance(
            err, Trap) else "budget" if isinstance(err, BudgetExhausted) else
            "bad-input" if isinstance(err, BadInput) else "error")
        return Verdict(False, err.rule or type(err).__name__, err.one_line(), kind=kind)
    return Verdict(True, expected=out)
