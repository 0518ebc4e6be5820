"""Static range and resource checks of GPU IR (issue 15): what the other analyses take
for granted about sizes, decided before anything runs, so that `check` refuses what
would otherwise crash NumPy, wrap silently in the generated C++ or exhaust memory.

Rule `Limits`; every error is BadInput (exit 2) with the span of the offending
expression:
  - every control value fits int32 (the generated code computes them in `int`): each
    control expression and each of its sub-expressions, over the interval of values
    its variables can take (sizes as defined, iterators over their loop's bounds);
  - a constant divisor is not zero;
  - every extent (data parameters, allocations, barrier arrays) is positive;
  - a parallel loop (cuda_tasks, cuda_threads) runs at least one task or thread;
  - (`check_elements`, for the verbs that interpret) all the arrays together hold at
    most the `elements` budget of cells (an array allocated in a loop counts once: it
    is freed at the end of each iteration).

Values that depend on a size with no definition (`check` without -D) are unknown and
not checked: the verbs that run a program need every size defined (`load_proc`).

Conventions: σ -> `env`, here an interval (lo, hi), both ends included, per control
variable; `None` is an unknown value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_never

from gpusem.calculus import budgets
from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.span import Span

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
Interval = tuple[int, int] | None


def check_limits(proc: A.Proc, defines: Mapping[str, int]) -> None:
    """Raise BadInput at the first value out of range (every verb: a compiler needs
    them in range as much as an interpreter)."""
    _Limits(proc, defines, elements=False).run()


def check_elements(proc: A.Proc, defines: Mapping[str, int]) -> None:
    """`check_limits`, and the arrays within the elements budget: for the verbs that
    interpret (`check` decides for them, synccheck, step, exec's sequential reading).
    A program compiled for a GPU may hold more (`compile`)."""
    _Limits(proc, defines, elements=True).run()


class _Limits:
    def __init__(self, proc: A.Proc, defines: Mapping[str, int], elements: bool):
        self.proc, self.count_elements = proc, elements
        self.env: dict[str, Interval] = {
            p.name: (defines[p.name], defines[p.name]) if p.name in defines else None
            for p in proc.ctrl_params}
        self.elements = 0

    def run(self) -> None:
        for c in self.proc.ctrl_params:  # (the front end's rule, checked first here too)
            iv = self.env.get(c.name)
            if c.kind is A.CtrlKind.SIZE and iv is not None and iv[0] < 0:
                raise BadInput(f"bad definition: size {c.name} = {iv[0]} is negative",
                               span=c.span)
        for p in self.proc.data_params:
            self.extents(p.name, p.shape, p.span)
        self.body(self.proc.body)

    def body(self, body: tuple[A.Stmt, ...]) -> None:
        for s in body:
            self.stmt(s)

    def stmt(self, s: A.Stmt) -> None:
        match s:
            case A.For():
                self.loop(s)
            case A.CudaDeviceFunction(body=b) | A.CudaWarps(body=b):
                self.body(b)
            case A.If(cond=cond, body=b):
                self.bexpr(cond, s.span)
                self.body(b)
            case A.Assign(idx=idx, rhs=e) | A.Reduce(idx=idx, rhs=e):
                for c in idx:
                    self.value(c, s.span)
                self.dexpr(e, s.span)
            case A.Alloc(name=n, shape=sh) | A.BarrierAlloc(name=n, shape=sh):
                self.extents(n, sh, s.span)
            case A.WindowStmt(source=src):
                self.coords(src.coords, s.span)
            case A.InstrCall(args=args, barrier=z):
                for a in args:
                    if isinstance(a, A.DRead):
                        self.coords(a.coords, s.span)
                    elif not isinstance(a, A.DConst):
                        self.value(a, s.span)
                if z is not None:
                    self.coords(z.coords, s.span)
            case A.Arrive(barriers=zs):
                for z in zs:
                    self.coords(z.coords, s.span)
            case A.Await(barrier=z):
                self.coords(z.coords, s.span)
            case A.Free() | A.Fence():
                pass
            case _:
                assert_never(s)

    def loop(self, f: A.For) -> None:
        lo, hi = self.value(f.lo, f.span), self.value(f.hi, f.span)
        if f.mode is not A.LoopMode.SEQ and lo is not None and hi is not None \
                and hi[1] <= lo[0]:
            what = "task" if f.mode is A.LoopMode.CUDA_TASKS else "thread"
            raise BadInput(f"empty parallel loop: {f.mode.value}({lo[0]}, {hi[1]}) "
                           f"runs no {what}", rule="Limits", span=f.span)
        it: Interval = None
        if lo is not None and hi is not None and hi[1] - 1 >= lo[0]:
            it = (lo[0], hi[1] - 1)
        saved = self.env.get(f.var)
        self.env[f.var] = it
        try:
            self.body(f.body)
        finally:
            self.env[f.var] = saved

    # ------------------------------------------------------------- extents
    def extents(self, name: str, shape: tuple[A.CExpr, ...], span: Span) -> None:
        cells: int | None = 1
        for d, c in enumerate(shape):
            iv = self.value(c, span)
            if iv is None:
                cells = None
                continue
            if iv[0] <= 0:
                raise BadInput(f"bad extent: {name} has extent {iv[0]} in dimension "
                               f"{d} (extents are positive)", rule="Limits",
                               span=_at(c, span))
            cells = None if cells is None else cells * iv[1]
        if cells is None or not self.count_elements:
            return
        self.elements += cells
        if self.elements > budgets.current().elements:
            what = (f"{name} holds {cells} elements" if cells == self.elements else
                    f"the arrays up to {name} hold {self.elements} elements")
            raise budgets.over("elements", what, span, rule="Limits")

    # ---------------------------------------------------------- expressions
    def coords(self, coords: tuple[A.WCoord, ...], span: Span) -> None:
        for w in coords:
            match w:
                case A.WPoint(index=c):
                    self.value(c, span)
                case A.WInterval(lo=lo, hi=hi):
                    for bound in (lo, hi):
                        if bound is not None:
                            self.value(bound, span)

    def dexpr(self, e: A.DExpr, span: Span) -> None:
        match e:
            case A.DConst():
                pass
            case A.DRead(coords=cs):
                self.coords(cs, span)
            case A.DBin(lhs=l, rhs=r):
                self.dexpr(l, span)
                self.dexpr(r, span)
            case A.DNeg(arg=a):
                self.dexpr(a, span)
            case _:
                assert_never(e)

    def bexpr(self, b: A.BExpr, span: Span) -> None:
        match b:
            case A.BConst():
                pass
            case A.BRel(lhs=l, rhs=r):
                self.value(l, span)
                self.value(r, span)
            case A.BLog(lhs=l, rhs=r):
                self.bexpr(l, span)
                self.bexpr(r, span)
            case A.BNot(arg=a):
                self.bexpr(a, span)
            case _:
                assert_never(b)

    def value(self, c: A.CExpr, span: Span) -> Interval:
        """The interval of `c`'s values; BadInput where it leaves int32."""
        match c:
            case A.CInt(value=v):
                iv: Interval = (v, v)
            case A.CVar(name=n):
                iv = self.env.get(n)
            case A.CBin(op=op, lhs=l, rhs=r):
                iv = _combine(op, self.value(l, span), self.value(r, span), c, span)
            case _:
                assert_never(c)
        if iv is not None and (iv[0] < INT32_MIN or iv[1] > INT32_MAX):
            reach = iv[1] if iv[1] > INT32_MAX else iv[0]
            raise BadInput(f"control value out of range: this expression reaches "
                           f"{reach} (control values are 32-bit ints)",
                           rule="Limits", span=_at(c, span))
        return iv


def _at(c: A.CExpr, span: Span) -> Span:
    return c.span if c.span.line else span


def _combine(op: str, a: Interval, b: Interval, c: A.CExpr, span: Span) -> Interval:
    if op in "/%" and b == (0, 0):
        raise BadInput(f"division by zero: {op} by a constant 0", rule="Limits",
                       span=_at(c, span))
    if a is None or b is None:
        return None
    match op:
        case "+":
            return a[0] + b[0], a[1] + b[1]
        case "-":
            return a[0] - b[1], a[1] - b[0]
        case "*":
            corners = [x * y for x in a for y in b]
            return min(corners), max(corners)
        case "/" if b[0] > 0 or b[1] < 0:  # C division truncates toward zero
            quotients = [_cdiv(x, y) for x in a for y in b]
            return min(quotients), max(quotients)
        case "%" if b[0] > 0 or b[1] < 0:  # the sign of the dividend, |r| < |d|
            m = max(abs(b[0]), abs(b[1])) - 1
            if a[0] >= 0:
                return 0, min(a[1], m)
            if a[1] <= 0:
                return max(a[0], -m), 0
            return -m, m
    return None  # a divisor that may be zero: the run traps (C-Aff)


def _cdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q
