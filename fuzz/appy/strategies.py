"""Hypothesis strategies for legal APPy programs (issue 7), legal by construction.

A program is one function made of 1-3 *kernels* (top-level loop nests or tensor
statements). Each kernel family keeps the legality rules of `typing_rules/appy/legality.py` by
construction: workers write only cells indexed by their own iteration, cells another
worker may read are never written in that kernel, reductions go through `#pragma atomic`
or the `reduction(+:x)` clause, simd loops carry scalars only as reductions.

Families: elementwise (guarded stores, shifted reads, self-assignment, private scalars,
math functions, `appy.where`), scalar reduction (atomic / clause, int and float initial
values), row-wise reduction and maximum (over negative data too), 2-D elementwise with a
broadcast row, tensor statements (`slice=>parallel`, `reduce(sum)`, `le(C)`), and
`sequential for` prefix sums. Sizes cross block boundaries (127/128/129, 255/256/257...).

Shrinking: every choice is a local draw whose first alternative is the simplest (fewest
kernels, smallest size, a constant), so hypothesis shrinks toward readable programs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gpusem.calculus.appy import ast as A
from hypothesis import strategies as st

SIZES = (1, 2, 3, 7, 16, 31, 100, 127, 128, 129, 255, 256, 257, 300, 511, 513, 1000, 1025)
ROWS = (1, 2, 3, 4, 5)
COLS = (1, 3, 16, 31, 64, 100, 127, 129, 200, 257)
DTYPES = ("float32", "int32", "float64", "int64")


@dataclass(frozen=True)
class AppyProgram:
    """A generated program with its inputs (arrays are made from `data_seed`)."""

    fn: A.Function
    arrays: tuple[tuple[str, str, tuple[int, ...]], ...]  # name, dtype, shape
    scalars: tuple[tuple[str, int], ...]
    data_seed: int = 0
    negative: bool = False
    mutated: str = ""  # the mutator that made it illegal (fuzz/appy/mutators.py)
    fixed: dict | None = None  # explicit arrays (a program read back from a bundle)

    def inputs(self) -> tuple[dict[str, np.ndarray], dict[str, int]]:
        if self.fixed is not None:
            return ({name: self.fixed[name].copy() for name, _, _ in self.arrays},
                    dict(self.scalars))
        rng = np.random.default_rng(self.data_seed)
        arrays = {}
        for name, dtype, shape in self.arrays:
            lo, hi = (-16, -1) if self.negative else (-8, 9)
            raw = rng.integers(lo, hi, size=shape)
            # Quarter-integers are exact in every float type: sums stay exact, so a
            # reassociated reduction cannot blur a real mismatch.
            vals = raw / 4 if dtype.startswith("float") else raw
            arrays[name] = np.asarray(vals, dtype=dtype)
        return arrays, dict(self.scalars)


class _Ctx:
    """What a kernel generator needs: fresh array names, the element dtype."""

    def __init__(self, dtype: str):
        self.dtype = dtype
        self.arrays: dict[str, tuple[str, tuple[str, ...]]] = {}  # name -> dtype, dims
        self.count = 0

    @property
    def is_float(self) -> bool:
        return self.dtype.startswith("float")

    def new_array(self, dims: tuple[str, ...], prefix: str) -> str:
        name = f"{prefix}{self.count}"
        self.count += 1
        self.arrays[name] = (self.dtype, dims)
        return name

    def fresh(self, prefix: str) -> str:
        """A scalar name no other kernel uses (private scalars stay private)."""
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, v: float) -> A.Const:
        return A.Const(float(v) if self.is_float else int(v))


def _n(x: str) -> A.Name:
    return A.Name(x)


def _c(v: int) -> A.Const:
    return A.Const(v)


def _add(a: A.Expr, k: int) -> A.Expr:
    if k == 0:
        return a
    return A.BinOp("+" if k > 0 else "-", a, _c(abs(k)))


@st.composite
def expr(draw, ctx: _Ctx, leaves: list[A.Expr], depth: int = 2) -> A.Expr:
    """An element expression over `leaves` (reads, private scalars, the loop index)."""
    kinds = ["leaf", "const"] + (["bin", "bin", "call", "where"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "leaf":
        return draw(st.sampled_from(leaves))
    if kind == "const":
        return ctx.const(draw(st.sampled_from((1, 2, 3, -1, 0))) / (
            2 if ctx.is_float else 1))
    sub = expr(ctx, leaves, depth - 1)
    if kind == "bin":
        op = draw(st.sampled_from(("+", "-", "*") + (("/",) if ctx.is_float else ())))
        a, b = draw(sub), draw(sub)
        if op == "/":  # keep denominators away from zero: |b| + 1
            b = A.BinOp("+", A.Call("abs", (b,)), ctx.const(1))
        return A.BinOp(op, a, b)
    if kind == "call":
        funcs = ("abs", "maximum", "minimum") + (
            ("exp", "sqrt", "tanh") if ctx.is_float else ())
        f = draw(st.sampled_from(funcs))
        if f in A.BINARY_FUNS:
            return A.Call(f, (draw(sub), draw(sub)))
        a = draw(sub)
        if f == "sqrt":
            a = A.Call("abs", (a,))
        if f == "exp":  # bounded argument: exp(min(x, 4)) stays far from inf
            a = A.Call("minimum", (a, ctx.const(4)))
        return A.Call(f, (a,))
    cond = A.Compare(draw(st.sampled_from(("<", ">", "<=", ">="))), draw(sub),
                     ctx.const(0))
    return A.Where(cond, draw(sub), draw(sub))


# --------------------------------------------------------------------- families


@st.composite
def elementwise(draw, ctx: _Ctx) -> list[A.Stmt]:
    """`parallel for [simd]` over range(lo, N-hi, step) with shifted reads."""
    lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    step = draw(st.sampled_from((1, 1, 2, 3)))
    simd = draw(st.sampled_from((None, True, 64, 128)))
    src = [ctx.new_array(("N",), "A") for _ in range(draw(st.integers(1, 2)))]
    out = ctx.new_array(("N",), "C")
    i = _n("i")
    leaves: list[A.Expr] = [A.Subscript(a, (_add(i, draw(st.integers(-lo, hi))),))
                            for a in src for _ in range(draw(st.integers(1, 2)))]
    leaves.append(A.Subscript(out, (i,)))  # self-assignment reads its own cell
    body: list[A.Stmt] = []
    if draw(st.booleans()):
        t = ctx.fresh("t")
        body.append(A.Assign(_n(t), draw(expr(ctx, leaves))))
        leaves = leaves + [_n(t)]
    store = A.Assign(A.Subscript(out, (i,)), draw(expr(ctx, leaves)),
                     draw(st.sampled_from((None, None, "+", "*"))))
    if draw(st.integers(0, 3)) == 0:  # guarded store
        cond = A.Compare(draw(st.sampled_from(("<", ">"))), draw(expr(ctx, leaves, 1)),
                         ctx.const(0))
        body.append(A.If(cond, (store,)))
    else:
        body.append(store)
    d = A.ParallelFor(simd=simd is not None,
                      width=simd if isinstance(simd, int) and simd is not True else None)
    return [A.For("i", _c(lo), _add(_n("N"), -hi), _c(step), tuple(body), d)]


@st.composite
def scalar_reduction(draw, ctx: _Ctx) -> list[A.Stmt]:
    """Sum of an expression into s[0] via `#pragma atomic` or `reduction(+:acc)`."""
    src = ctx.new_array(("N",), "A")
    s = ctx.new_array(("1",), "S")
    i = _n("i")
    value = draw(expr(ctx, [A.Subscript(src, (i,))], 1))
    simd = draw(st.booleans())
    if draw(st.booleans()):
        upd = A.Assign(A.Subscript(s, (_c(0),)), value, "+", atomic=True)
        return [A.For("i", _c(0), _n("N"), _c(1), (upd,), A.ParallelFor(simd=simd))]
    init = ctx.const(draw(st.sampled_from((0, 1, -3))))
    acc = ctx.fresh("acc")
    loop = A.For("i", _c(0), _n("N"), _c(1), (A.Assign(_n(acc), value, "+"),),
                 A.ParallelFor(simd=simd, reduction=(acc,)))
    return [A.Assign(_n(acc), init), loop,
            A.Assign(A.Subscript(s, (_c(0),)), _n(acc))]


@st.composite
def rowwise(draw, ctx: _Ctx) -> list[A.Stmt]:
    """Per row i (a worker): a simd reduction (sum / max) over j, then a store."""
    a = ctx.new_array(("M", "N"), "A")
    b = ctx.new_array(("M",), "B")
    i, j = _n("i"), _n("j")
    elem = A.Subscript(a, (i, j))
    kind = draw(st.sampled_from(("sum", "max", "min", "cell")))
    r = _n(ctx.fresh("acc"))
    init = {"sum": ctx.const(0), "cell": ctx.const(0), "max": A.Const(float("-inf")) if ctx.is_float
            else _c(-1000), "min": A.Const(float("inf")) if ctx.is_float else _c(1000)}
    acc = (A.Assign(r, elem, "+") if kind == "sum" else A.Assign(
        r, A.Call("maximum" if kind == "max" else "minimum", (r, elem))))
    w = draw(st.sampled_from((None, 32, 128)))
    if kind == "cell":  # spmv's idiom (Listing 4): lanes reduce into the cell B[i]
        body_c = (A.Assign(A.Subscript(b, (i,)), ctx.const(0)), A.For(
            "j", _c(0), _n("N"), _c(1), (A.Assign(A.Subscript(b, (i,)), elem, "+"),),
            A.Simd(w)))
        return [A.For("i", _c(0), _n("M"), _c(1), body_c, A.ParallelFor())]
    inner = A.For("j", _c(0), _n("N"), _c(1), (acc,), A.Simd(w))
    body: list[A.Stmt] = [A.Assign(r, init[kind]), inner,
                          A.Assign(A.Subscript(b, (i,)), r)]
    if draw(st.booleans()):  # a second simd loop using the row result (softmax shape)
        c = ctx.new_array(("M", "N"), "C")
        body.append(A.For("j", _c(0), _n("N"), _c(1), (A.Assign(
            A.Subscript(c, (i, j)), A.BinOp("-", elem, r)),), A.Simd(w)))
    return [A.For("i", _c(0), _n("M"), _c(1), tuple(body), A.ParallelFor())]


@st.composite
def grid2d(draw, ctx: _Ctx) -> list[A.Stmt]:
    """C[i, j] = f(A[i, j], x[j]) with i parallel and j parallel or simd."""
    a = ctx.new_array(("M", "N"), "A")
    x = ctx.new_array(("N",), "X")
    c = ctx.new_array(("M", "N"), "C")
    i, j = _n("i"), _n("j")
    leaves: list[A.Expr] = [A.Subscript(a, (i, j)), A.Subscript(x, (j,))]
    store = A.Assign(A.Subscript(c, (i, j)), draw(expr(ctx, leaves)))
    inner_d = draw(st.sampled_from((A.Simd(), A.ParallelFor(), A.ParallelFor(simd=True),
                                    None)))
    inner = A.For("j", _c(0), _n("N"), _c(1), (store,), inner_d)
    return [A.For("i", _c(0), _n("M"), _c(1), (inner,), A.ParallelFor())]


@st.composite
def tensor_stmt(draw, ctx: _Ctx) -> list[A.Stmt]:
    """A tensor statement in sliced index notation with a `=>` pragma (Section 4)."""
    kind = draw(st.sampled_from(("vec", "bcast", "rowsum")))
    M, N = A.Slice(None, _n("M")), A.Slice(None, _n("N"))
    if kind == "vec":
        a, c = ctx.new_array(("N",), "A"), ctx.new_array(("N",), "C")
        value = draw(expr(ctx, [A.Subscript(a, (N,))], 1))
        props = draw(st.sampled_from(({"parallel": True}, {"parallel": True, "simd": True},
                                      {"simd": True})))
        return [A.Assign(A.Subscript(c, (N,)), value,
                         pragma=A.TensorPragma((A.DimProps(N, **props),)))]
    a = ctx.new_array(("M", "N"), "A")
    if kind == "bcast":
        x, c = ctx.new_array(("N",), "X"), ctx.new_array(("M", "N"), "C")
        value = A.BinOp(draw(st.sampled_from(("+", "*"))), A.Subscript(a, (M, N)),
                        A.Subscript(x, (A.NewAxis(), N)))
        tp = A.TensorPragma((A.DimProps(M, parallel=True), A.DimProps(N, simd=True)))
        return [A.Assign(A.Subscript(c, (M, N)), value, pragma=tp)]
    y = ctx.new_array(("M",), "Y")
    le = draw(st.sampled_from((None, 256)))
    tp = A.TensorPragma((A.DimProps(M, parallel=True), A.DimProps(N, reduce="sum",
                                                                    le=le)))
    return [A.Assign(A.Subscript(y, (M,)), A.Call("sum", (A.Subscript(a, (M, N)),), 1),
                     pragma=tp)]


@st.composite
def prefix_sum(draw, ctx: _Ctx) -> list[A.Stmt]:
    """`sequential for`: a loop-carried dependence run by one worker (Section 3.1)."""
    a = ctx.new_array(("N",), "P")
    i = _n("i")
    lag = draw(st.integers(1, 2))
    upd = A.Assign(A.Subscript(a, (i,)), A.BinOp("+", A.Subscript(a, (i,)), A.Subscript(
        a, (A.BinOp("-", i, _c(lag)),))))
    return [A.For("i", _c(lag), _n("N"), _c(1), (upd,), A.SequentialFor())]


@st.composite
def stripmined(draw, ctx: _Ctx) -> list[A.Stmt]:
    """Assembly-level APPy (Section 3.2): a worker per strip, `appy.vidx` vectors."""
    width = draw(st.sampled_from((A.Mvl(), A.Const(32), A.Const(128))))
    src = ctx.new_array(("N",), "A")
    vi = ctx.fresh("v")
    v = A.Subscript(src, (A.Name(vi),))
    head = A.Assign(_n(vi), A.Vidx(_n("i"), width, _n("N")))
    if draw(st.booleans()):
        out = ctx.new_array(("N",), "C")
        body = (head, A.Assign(A.Subscript(out, (A.Name(vi),)), draw(expr(ctx, [v], 1))))
    else:  # a strip's sum added atomically: the paper's vector_sum by hand
        s = ctx.new_array(("1",), "S")
        body = (head, A.Assign(A.Subscript(s, (_c(0),)), A.Call("sum", (v,)), "+",
                               atomic=True))
    return [A.For("i", _c(0), _n("N"), width, body, A.ParallelFor())]


def _exprs(s: A.Stmt):
    match s:
        case A.Assign(target=t, value=v):
            roots = [t, v]
        case A.If(cond=c):
            roots = [c]
        case A.For(start=a, stop=b, step=c):
            roots = [a, b, c]
    for r in roots:
        yield from A.walk_expr(r)


FAMILIES = {"elementwise": elementwise, "reduction": scalar_reduction,
            "rowwise": rowwise, "grid2d": grid2d, "tensor": tensor_stmt,
            "sequential": prefix_sum, "stripmined": stripmined}


@st.composite
def programs(draw, families: tuple[str, ...] = tuple(FAMILIES)) -> AppyProgram:
    dtype = draw(st.sampled_from(DTYPES))
    ctx = _Ctx(dtype)
    body: list[A.Stmt] = []
    for _ in range(draw(st.integers(1, 2))):
        fam = draw(st.sampled_from(families))
        body += draw(FAMILIES[fam](ctx))
    n = draw(st.sampled_from(SIZES))
    m = draw(st.sampled_from(ROWS))
    uses_2d = any("M" in dims for _, dims in ctx.arrays.values())
    uses_2d = uses_2d or any(isinstance(x, A.Name) and x.id == "M"
                             for s in A.walk_stmts(tuple(body)) for x in _exprs(s))
    if uses_2d:
        n = draw(st.sampled_from(COLS))
    sizes = {"N": n, "M": m, "1": 1}
    used = {x.array for s in A.walk_stmts(tuple(body)) for x in _exprs(s)
            if isinstance(x, A.Subscript)}
    arrays = tuple((name, dt, tuple(sizes[d] for d in dims))
                   for name, (dt, dims) in ctx.arrays.items() if name in used)
    scalars = (("N", n),) + ((("M", m),) if uses_2d else ())
    params = tuple(A.Param(name, True) for name, _, _ in arrays) + tuple(
        A.Param(k, False) for k, _ in scalars)
    fn = A.Function("kernel", params, tuple(body))
    return AppyProgram(fn, arrays, scalars, draw(st.integers(0, 2**16)),
                       negative=draw(st.integers(0, 4)) == 0)
