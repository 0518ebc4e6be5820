"""Directive legality for APPy (seed 003, Sections 3.1-3.4, 4.2, Appendix B.1).

When is a program's parallel reading defined, so that the compiler owes us the result of
the sequential reading? The paper leaves the check to the programmer ("the `simd`
directive relies on the programmer to check for dependences"); gpusem decides it, so that
a mismatch is blamed on the program or on the compiler, never guessed.

Static rules (`check_static`), each one function:
  Legal-Range         a parallel loop's trip count is known at launch: no array reads in
                      its bounds (3.1 "no dynamic parallelism")
  Legal-Private       a scalar assigned inside a parallel region is private to a worker:
                      it is neither assigned before the region (3.3 "no multiple reaching
                      definitions from inside and outside") nor read after it, unless it
                      is a `reduction(+:x)` variable
  Legal-SimdScalar    a scalar defined before a `simd` loop and assigned in it must be a
                      reduction `x = x + e` / `x += e` / `x = np.maximum(x, e)` (the
                      softmax idiom, Listing 6); anything else is a loop-carried scalar
  Legal-Atomic        `#pragma atomic` marks `A[...] += e` (3.4)
Dynamic rules (`LegalityHooks`, fed by the sequential reading's every access):
  Legal-Disjoint      iterations (workers) of a `parallel for` touch disjoint cells,
                      except through atomic updates of the same kind (3.1, 3.4)
  Legal-SimdLanes     lanes of one `simd` chunk (<= width, default MVL) have no
                      dependence through memory (3.2), except `X[idx] += e` with idx
                      invariant in the loop: a reduction into one cell (Listing 4)

Conventions: worker = the iteration value of a parallel loop; lane = the iteration
number within a simd loop, chunk = lane // width; cell = (array, flat index).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from gpusem.calculus.appy import ast as A
from gpusem.calculus.errors import IllTyped
from gpusem.interpreter.appy_seq import AccessHooks, run_sequential

MVL = 1024  # the largest block size appyc may choose (seed 003, Section 5: 128..1024)
_MANY = object()  # "read by more than one worker"


def require(cond: bool, rule: str, span, msg: str) -> None:
    if not cond:
        raise IllTyped(msg, rule=rule, span=span)


# ------------------------------------------------------------------------ static


def check_static(fn: A.Function) -> None:
    _check_body(fn.body, fn.body)


def _check_body(body: tuple[A.Stmt, ...], top: tuple[A.Stmt, ...]) -> None:
    for i, s in enumerate(body):
        match s:
            case A.For(directive=A.ParallelFor() | A.SequentialFor()):
                legal_range(s)
                legal_private(s, body[:i], body[i + 1:])
            case A.For(directive=A.Simd()):
                legal_simd_scalar(s, body[:i])
            case A.Assign(atomic=True):
                legal_atomic(s)
            case _:
                pass
        match s:
            case A.For(body=inner):
                _check_body(inner, top)
            case A.If(body=then, orelse=orelse):
                _check_body(then, top)
                _check_body(orelse, top)
            case A.Assign():
                pass


def legal_range(s: A.For) -> None:
    # Legal-Range
    for e in (s.start, s.stop, s.step):
        require(not any(isinstance(x, A.Subscript) for x in A.walk_expr(e)),
                "Legal-Range", s.span,
                f"dynamic parallelism: the bounds of parallel loop '{s.var}' read memory")


def _assigned(body) -> set[str]:
    return {st.target.id for st in A.walk_stmts(body)
            if isinstance(st, A.Assign) and isinstance(st.target, A.Name)}


def _read(body) -> set[str]:
    names: set[str] = set()
    for st in A.walk_stmts(body):
        exprs = {A.Assign: lambda x: [x.value, x.target] if isinstance(
            x.target, A.Subscript) or x.op else [x.value],
            A.If: lambda x: [x.cond], A.For: lambda x: [x.start, x.stop, x.step]}[
            type(st)](st)
        for e in exprs:
            names |= {n.id for n in A.walk_expr(e) if isinstance(n, A.Name)}
    return names


def legal_private(s: A.For, before, after) -> None:
    # Legal-Private
    red = set(s.directive.reduction) if isinstance(s.directive, A.ParallelFor) else set()
    inside = _assigned(s.body) - red
    clash = sorted(inside & _assigned(before))
    require(not clash, "Legal-Private", s.span,
            f"shared scalar written: '{(clash + [''])[0]}' is assigned both outside and "
            f"inside parallel loop '{s.var}' (make it an array of size 1)")
    escape = sorted(inside & _read(after))
    require(not escape, "Legal-Private", s.span,
            f"private scalar escapes: '{(escape + [''])[0]}' is private to the workers "
            f"of loop '{s.var}' but read after it")


def _is_reduction(st: A.Assign, x: str) -> bool:
    if st.op == "+":
        return x not in {n.id for n in A.walk_expr(st.value) if isinstance(n, A.Name)}
    match st.value:
        case A.BinOp(op="+", left=A.Name(id=y), right=e) if y == x:
            return x not in {n.id for n in A.walk_expr(e) if isinstance(n, A.Name)}
        case A.Call(func="maximum" | "minimum", args=(A.Name(id=y), e)) if y == x:
            return x not in {n.id for n in A.walk_expr(e) if isinstance(n, A.Name)}
    return False


def legal_simd_scalar(s: A.For, before) -> None:
    # Legal-SimdScalar
    outer = _assigned(before) | {p for p in _read(before)}
    for st in A.walk_stmts(s.body):
        if isinstance(st, A.Assign) and isinstance(st.target, A.Name):
            x = st.target.id
            if x in outer:
                require(_is_reduction(st, x), "Legal-SimdScalar", st.span,
                        f"loop-carried scalar: '{x}' is carried across the lanes of simd "
                        f"loop '{s.var}' but is not a reduction")


def legal_atomic(s: A.Assign) -> None:
    # Legal-Atomic
    require(isinstance(s.target, A.Subscript) and s.op == "+", "Legal-Atomic", s.span,
            "bad atomic: '#pragma atomic' needs an array update 'A[...] += e'")


# ----------------------------------------------------------------------- dynamic


@dataclass
class _Frame:
    loop: A.For
    rule: str
    width: int
    worker: int = 0
    chunk: int = -1
    writes: dict = field(default_factory=dict)
    reads: dict = field(default_factory=dict)
    atomics: dict = field(default_factory=dict)


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

    def access(self, kind, array, cells, stmt, atomic) -> None:
        for f in self.frames:
            if f.rule:
                red = atomic or (f.rule == "Legal-SimdLanes" and lane_reduction(
                    f.loop, stmt))
                for c in cells:
                    self._check(f, kind, (array, c), stmt, red)

    def _check(self, f: _Frame, kind: str, cell, stmt, atomic: bool) -> None:
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

    def _fail(self, f: _Frame, cell, stmt, why: str) -> None:
        arr, flat = cell
        who = "lane" if f.rule == "Legal-SimdLanes" else "worker"
        raise IllTyped(f"conflict: {who} {f.loop.var}={f.worker} and another touch "
                       f"{arr}[flat {flat}]: {why}", rule=f.rule,
                       span=stmt.span if stmt is not None else f.loop.span)


def lane_reduction(loop: A.For, stmt: A.Assign | None) -> bool:
    """`X[idx] += e` in a simd loop, idx invariant in the loop, is a reduction of the
    lanes into one cell (Listing 4, spmv: `y[i] += A_val[j] * x[col]`).

    Note: the paper shows the idiom without stating the rule; gpusem reads it as a
    declared reduction when no name in idx is the loop variable or assigned in the loop
    body (proofs_notes/errata.md, "simd cell reductions")."""
    if stmt is None or stmt.op != "+" or not isinstance(stmt.target, A.Subscript):
        return False
    varying = {loop.var} | _assigned(loop.body)
    names = {n.id for i in stmt.target.indices for n in A.walk_expr(i)
             if isinstance(n, A.Name)}
    return not (names & varying)


# ------------------------------------------------------------------------ verdict


@dataclass(frozen=True)
class Verdict:
    legal: bool
    rule: str = ""
    message: str = ""
    expected: dict[str, np.ndarray] | None = None


def check_legal(fn: A.Function, arrays: dict[str, np.ndarray],
                scalars: dict[str, int | float], *, mvl: int = MVL,
                max_steps: int = 2_000_000) -> Verdict:
    """Static rules, then the sequential reading with the dynamic rules watching: a
    legal program's Verdict carries the expected result (the oracle)."""
    try:
        check_static(fn)
        out = run_sequential(fn, arrays, scalars, hooks=LegalityHooks(mvl),
                             max_steps=max_steps)
    except IllTyped as err:
        return Verdict(False, err.rule, err.one_line())
    return Verdict(True, expected=out)
