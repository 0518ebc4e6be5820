"""Kernel families of the APPy generator, part 2: the tensor-oriented model (Section 4)
and the NPBench shapes of Section 6 that need more than one construct at once (spmv's
bounds from arrays, softmax's tensor rows, group_by_sum's atomic rows, syrk's
triangle). Legal by construction (`strategies.py` says how)."""

from __future__ import annotations

from gpusem.calculus.appy import ast as A
from gpusem.fuzz.appy.exprs import Ctx, add, c_, expr, n_
from hypothesis import strategies as st


def _sl(lo: int | None, upper: A.Expr) -> A.Slice:
    return A.Slice(None if lo is None else c_(lo), upper)


@st.composite
def tensor_stmt(draw, ctx: Ctx) -> list[A.Stmt]:
    """A tensor statement in sliced index notation with a `=>` pragma (Section 4):
    elementwise, broadcast, row sums, mv (Listing 7), stencils, shifted self-assignment
    (5.1.1) and `le(C)`."""
    n = ctx.sizes["N"]
    kinds = ["vec", "bcast", "rowsum", "mv"] + (["stencil", "shifted"] if n >= 3 else [])
    kind = draw(st.sampled_from(kinds))
    M, N = _sl(None, n_("M")), _sl(None, n_("N"))
    if kind == "vec":
        a, c = ctx.new_array(("N",), "A"), ctx.new_array(("N",), "C")
        value = draw(expr(ctx, [A.Subscript(a, (N,)), A.Subscript(c, (N,))], 1,
                                vector=True))
        props = draw(st.sampled_from(({"parallel": True}, {"parallel": True, "simd": True},
                                      {"simd": True}, {})))
        le = _le(draw, n)
        dims = (A.DimProps(N, le=le, **props),) if props or le else None
        return [A.Assign(A.Subscript(c, (N,)), value, draw(st.sampled_from((None, "+"))),
                         pragma=A.TensorPragma(dims) if dims else None)]
    if kind in ("stencil", "shifted"):  # 1:N-1 from its neighbours; or A[1:N] from A
        a = ctx.new_array(("N",), "A")
        inner = A.Slice(c_(1), add(n_("N"), -1))
        if kind == "shifted":
            tgt, rd = A.Slice(c_(1), n_("N")), A.Slice(c_(0), add(n_("N"), -1))
            value = A.BinOp("+", A.Subscript(a, (rd,)), A.Subscript(a, (tgt,)))
            return [A.Assign(A.Subscript(a, (tgt,)), value, pragma=A.TensorPragma(
                (A.DimProps(tgt, parallel=draw(st.booleans()), simd=True),)))]
        b = ctx.new_array(("N",), "B")
        parts = [A.Subscript(a, (A.Slice(c_(0), add(n_("N"), -2)),)),
                 A.Subscript(a, (inner,)), A.Subscript(a, (A.Slice(c_(2), n_("N")),))]
        s = A.BinOp("+", A.BinOp("+", parts[0], parts[1]), parts[2])
        value = A.BinOp("*", s, ctx.const(0.5)) if ctx.is_float else s
        return [A.Assign(A.Subscript(b, (inner,)), value, pragma=A.TensorPragma(
            (A.DimProps(inner, parallel=True),)))]
    a = ctx.new_array(("M", "N"), "A")
    if kind == "bcast":
        x, c = ctx.new_array(("N",), "X"), ctx.new_array(("M", "N"), "C")
        value = A.BinOp(draw(st.sampled_from(("+", "*"))), A.Subscript(a, (M, N)),
                        A.Subscript(x, (A.NewAxis(), N)))
        tp = A.TensorPragma((A.DimProps(M, parallel=True), A.DimProps(N, simd=True)))
        return [A.Assign(A.Subscript(c, (M, N)), value, pragma=tp)]
    y = ctx.new_array(("M",), "Y")
    tp = A.TensorPragma((A.DimProps(M, parallel=True), A.DimProps(N, reduce="sum",
                                                                    le=_le(draw, n))))
    if kind == "mv":
        x = ctx.new_array(("N",), "X")
        arg: A.Expr = A.Subscript(a, (M, N))
        if draw(st.booleans()):
            arg = A.BinOp("*", ctx.param(1.5), arg)  # gesummv's alpha * A[:M, :N]
        return [A.Assign(A.Subscript(y, (M,)), A.Call("mv", (arg, A.Subscript(x, (N,)))),
                         pragma=tp)]
    return [A.Assign(A.Subscript(y, (M,)), A.Call("sum", (A.Subscript(a, (M, N)),), 1),
                     pragma=tp)]


def _le(draw, n: int) -> int | None:
    """`le(C)` with C >= the dimension (the property promises it)."""
    if draw(st.integers(0, 2)) > 0:
        return None
    return next(c for c in (16, 64, 256, 1024, 2048) if c >= n)


@st.composite
def tensor_worker(draw, ctx: Ctx) -> list[A.Stmt]:
    """Tensor expressions inside a worker: softmax's rows (Listing 6), group_by_sum's
    atomic row update through a label (Listing 2), a scaled row, a dot product."""
    kind = draw(st.sampled_from(("softmax", "group", "scale", "dot")))
    i = n_("i")
    N = _sl(None, n_("N"))
    a = ctx.new_array(("M", "N"), "A")
    row = A.Subscript(a, (i, N))
    if kind == "group":
        labels = ctx.index_array(("M",), f"idx:{ctx.sizes['K']}", "L")
        cs = ctx.new_array(("K", "N"), "G")
        lab = ctx.fresh("l")
        body: tuple[A.Stmt, ...] = (
            A.Assign(n_(lab), A.Subscript(labels, (i,))),
            A.Assign(A.Subscript(cs, (n_(lab), N)), row, "+", atomic=True))
        return [A.For("i", c_(0), n_("M"), c_(1), body, A.ParallelFor())]
    b = ctx.new_array(("M", "N"), "B")
    out = A.Subscript(b, (i, N))
    if kind == "scale":
        x = ctx.new_array(("N",), "X")
        value = draw(expr(ctx, [row, A.Subscript(x, (N,))], 1, vector=True))
        return [A.For("i", c_(0), n_("M"), c_(1), (A.Assign(out, value),),
                      A.ParallelFor())]
    if kind == "dot":
        x, y = ctx.new_array(("N",), "X"), ctx.new_array(("M",), "Y")
        return [A.For("i", c_(0), n_("M"), c_(1), (A.Assign(A.Subscript(y, (i,)), A.Call(
            "dot", (row, A.Subscript(x, (N,))))),), A.ParallelFor())]
    m, s = n_(ctx.fresh("m")), n_(ctx.fresh("s"))
    shifted = A.BinOp("-", row, m)
    if ctx.is_float:
        e: A.Expr = A.Call("exp", (shifted,))
        last: A.Expr = A.BinOp("/", e, s)
    else:
        e, last = shifted, A.BinOp("+", shifted, s)
    red = draw(st.sampled_from(("max", "min")))
    body = (A.Assign(m, A.Call(red, (row,))), A.Assign(s, A.Call("sum", (e,))),
            A.Assign(out, last))
    return [A.For("i", c_(0), n_("M"), c_(1), body, A.ParallelFor())]


@st.composite
def spmv(draw, ctx: Ctx) -> list[A.Stmt]:
    """CSR sparse matrix-vector product (Listing 4): inner bounds read from the row
    starts, an indirect read x[col], the lanes reducing into y[i] (simd) or a private
    accumulator (a plain loop)."""
    m, n = ctx.sizes["M"], ctx.sizes["N"]
    per_row = 3
    rows = ctx.index_array((str(m + 1),), f"csr:{per_row}", "R")
    cols = ctx.index_array((str(m * per_row),), f"idx:{n}", "J")
    vals = ctx.new_array((str(m * per_row),), "V")
    x, y = ctx.new_array(("N",), "X"), ctx.new_array(("M",), "Y")
    i, j = n_("i"), n_("j")
    lo, hi = A.Subscript(rows, (i,)), A.Subscript(rows, (add(i, 1),))
    col = ctx.fresh("col")
    term = A.BinOp("*", A.Subscript(vals, (j,)), A.Subscript(x, (n_(col),)))
    if draw(st.booleans()):
        body: tuple[A.Stmt, ...] = (
            A.Assign(A.Subscript(y, (i,)), ctx.const(0)),
            A.For("j", lo, hi, c_(1), (A.Assign(n_(col), A.Subscript(cols, (j,))),
                                       A.Assign(A.Subscript(y, (i,)), term, "+")),
                  A.Simd(draw(st.sampled_from((None, 32))))))
    else:
        acc = ctx.fresh("acc")
        body = (A.Assign(n_(acc), ctx.const(0)),
                A.For("j", lo, hi, c_(1), (A.Assign(n_(col), A.Subscript(cols, (j,))),
                                           A.Assign(n_(acc), term, "+"))),
                A.Assign(A.Subscript(y, (i,)), n_(acc)))
    return [A.For("i", c_(0), n_("M"), c_(1), body, A.ParallelFor())]


@st.composite
def triangle(draw, ctx: Ctx) -> list[A.Stmt]:
    """syrk/trmm's lower triangle: C[i, j] for j <= i, in a plain or simd inner loop,
    scaled by a parameter (beta)."""
    c = ctx.new_array(("M", "M"), "C")
    a = ctx.new_array(("M", "M"), "A")
    i, j = n_("i"), n_("j")
    value = A.BinOp("+", A.BinOp("*", A.Subscript(c, (i, j)), ctx.param(
        draw(st.sampled_from((2, -1))))), draw(expr(ctx, [A.Subscript(a, (i, j)),
                                                           A.Subscript(a, (j, i))], 1)))
    inner = A.For("j", c_(0), add(i, 1), c_(1), (A.Assign(A.Subscript(c, (i, j)), value),),
                  draw(st.sampled_from((None, A.Simd()))))
    return [A.For("i", c_(0), n_("M"), c_(1), (inner,), A.ParallelFor())]


MORE = {"tensor": tensor_stmt, "tensor_worker": tensor_worker, "spmv": spmv,
        "triangle": triangle}
