"""Kernel families of the APPy generator, part 1: the loop-oriented model (Section 3).

Each family draws one kernel (a list of top-level statements), legal by construction
(`strategies.py` says how). `FAMILIES` gathers these and `kernels_more.py`'s (the
tensor-oriented model of Section 4 and the NPBench shapes); `LAST_ONLY` families end
the function (`return`) and are drawn only as the last kernel.
"""

from __future__ import annotations

from gpusem.calculus.appy import ast as A
from gpusem.fuzz.appy.exprs import Ctx, add, c_, cond, expr, n_
from gpusem.fuzz.appy.kernels_more import MORE
from hypothesis import strategies as st


def _directive(draw, simd_ok: bool = True) -> A.ParallelFor:
    simd = draw(st.sampled_from((None, True, 64, 128) if simd_ok else (None,)))
    return A.ParallelFor(simd=simd is not None,
                         width=simd if isinstance(simd, int) and simd is not True
                         else None)


@st.composite
def elementwise(draw, ctx: Ctx, data: bool = False) -> list[A.Stmt]:
    """`parallel for [simd]` over range(lo, N-hi, step): shifted, indirect and negative
    reads, private scalars, a plain loop in the worker, guarded and in-place stores."""
    lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    step = draw(st.sampled_from((1, 1, 2, 3)))
    src = [ctx.new_array(("N",), "A") for _ in range(draw(st.integers(1, 2)))]
    out = ctx.new_array(("N",), "C")
    i = n_("i")
    leaves: list[A.Expr] = [A.Subscript(a, (add(i, draw(st.integers(-lo, hi))),))
                            for a in src for _ in range(draw(st.integers(1, 2)))]
    leaves.append(A.Subscript(out, (i,)))  # self-assignment reads its own cell
    extra = draw(st.sampled_from(("none",) * 4 + ("indirect", "negative", "index")))
    if extra == "indirect":  # A[idx[i]] (spmv's x[col], kmeans' labels)
        idx = ctx.index_array(("N",), f"idx:{ctx.sizes['N']}")
        leaves.append(A.Subscript(src[0], (A.Subscript(idx, (i,)),)))
    elif extra == "negative":  # Python's A[-1] and A[i - N] (== A[i])
        leaves.append(A.Subscript(src[0], (draw(st.sampled_from(
            (c_(-1), A.BinOp("-", i, n_("N"))))),)))
    elif extra == "index":
        leaves.append(i)
    body: list[A.Stmt] = []
    if draw(st.booleans()):
        t = ctx.fresh("t")
        body.append(A.Assign(n_(t), draw(expr(ctx, leaves))))
        if draw(st.integers(0, 3)) == 0:  # a sequential loop inside the worker
            body.append(A.For("k", c_(0), n_("K"), c_(1), (A.Assign(
                n_(t), A.BinOp("+", n_(t), draw(expr(ctx, leaves, 1)))),)))
        leaves = leaves + [n_(t)]
    store = A.Assign(A.Subscript(out, (i,)), draw(expr(ctx, leaves)),
                     draw(st.sampled_from((None, None, "+", "*"))))
    guard = draw(st.integers(0, 5))
    if guard == 0:  # guarded store
        body.append(A.If(draw(cond(ctx, leaves, 1)), (store,)))
    elif guard == 1:  # if / else
        other = A.Assign(A.Subscript(out, (i,)), draw(expr(ctx, leaves, 1)))
        body.append(A.If(draw(cond(ctx, leaves, 1)), (store,), (other,)))
    else:
        body.append(store)
    d = _directive(draw)
    if data:  # every array the loop reads goes in, the written one comes back
        read = [a for a in src if any(isinstance(x, A.Subscript) and x.array == a
                                      for s in A.walk_stmts(tuple(body))
                                      for e in A.stmt_exprs(s) for x in A.walk_expr(e))]
        d = A.ParallelFor(d.simd, d.width, (), tuple(read) + (out,), (out,))
    loop = A.For("i", c_(lo), add(n_("N"), -hi), c_(step), tuple(body), d)
    return [loop, A.Return(n_(out))] if data else [loop]


@st.composite
def data_return(draw, ctx: Ctx) -> list[A.Stmt]:
    """appyc's data clauses `to(..)`/`from(..)` and `return` (the last kernel)."""
    return draw(elementwise(ctx, data=True))


@st.composite
def scalar_reduction(draw, ctx: Ctx) -> list[A.Stmt]:
    """Sum into s[0] via `#pragma atomic` or `reduction(+:acc)`, the initial value a
    literal, a parameter, a cell or an expression of the size."""
    src = ctx.new_array(("N",), "A")
    s = ctx.new_array(("1",), "S")
    i = n_("i")
    value = draw(expr(ctx, [A.Subscript(src, (i,))], 1))
    simd = draw(st.booleans())
    lo, step = draw(st.sampled_from((0, 0, 1))), draw(st.sampled_from((1, 1, 2)))
    if draw(st.booleans()):
        upd = A.Assign(A.Subscript(s, (c_(0),)), value, "+", atomic=True)
        return [A.For("i", c_(lo), n_("N"), c_(step), (upd,), A.ParallelFor(simd=simd))]
    init: A.Expr = draw(st.sampled_from((
        ctx.const(0), ctx.const(1), ctx.const(-3), ctx.param(2),
        A.Subscript(src, (c_(0),)),
        A.BinOp("*", n_("N"), ctx.const(1 if not ctx.is_float else 0.5)))))
    acc = ctx.fresh("acc")
    upd2 = draw(st.sampled_from((A.Assign(n_(acc), value, "+"), A.Assign(
        n_(acc), A.BinOp("+", n_(acc), value)))))
    loop = A.For("i", c_(lo), n_("N"), c_(step), (upd2,),
                 A.ParallelFor(simd=simd, reduction=(acc,)))
    return [A.Assign(n_(acc), init), loop, A.Assign(A.Subscript(s, (c_(0),)), n_(acc))]


@st.composite
def rowwise(draw, ctx: Ctx) -> list[A.Stmt]:
    """Per row i (a worker): a simd reduction (sum / max / min / into a cell) over j,
    then a store; bounds from the row index (triangular) where the shape allows."""
    a = ctx.new_array(("M", "N"), "A")
    b = ctx.new_array(("M",), "B")
    i, j = n_("i"), n_("j")
    elem = A.Subscript(a, (i, j))
    kind = draw(st.sampled_from(("sum", "max", "min", "cell")))
    r = n_(ctx.fresh("acc"))
    big = 1000
    init = {"sum": ctx.const(0), "cell": ctx.const(0),
            "max": A.Const(float("-inf")) if ctx.is_float else c_(-big),
            "min": A.Const(float("inf")) if ctx.is_float else c_(big)}
    acc = (A.Assign(r, elem, "+") if kind == "sum" else A.Assign(
        r, A.Call("maximum" if kind == "max" else "minimum", (r, elem))))
    w = draw(st.sampled_from((None, 32, 128)))
    tri = ctx.sizes["N"] >= ctx.sizes["M"] and draw(st.integers(0, 3)) == 0
    stop: A.Expr = add(i, 1) if tri else n_("N")
    if kind == "cell":  # spmv's idiom (Listing 4): lanes reduce into the cell B[i]
        body_c = (A.Assign(A.Subscript(b, (i,)), ctx.const(0)), A.For(
            "j", c_(0), stop, c_(1), (A.Assign(A.Subscript(b, (i,)), elem, "+"),),
            A.Simd(w)))
        return [A.For("i", c_(0), n_("M"), c_(1), body_c, A.ParallelFor())]
    inner = A.For("j", c_(0), stop, c_(1), (acc,), A.Simd(w))
    body: list[A.Stmt] = [A.Assign(r, init[kind]), inner,
                          A.Assign(A.Subscript(b, (i,)), r)]
    if draw(st.booleans()):  # a second simd loop using the row result (softmax shape)
        c = ctx.new_array(("M", "N"), "C")
        body.append(A.For("j", c_(0), n_("N"), c_(1), (A.Assign(
            A.Subscript(c, (i, j)), A.BinOp("-", elem, r)),), A.Simd(w)))
    return [A.For("i", c_(0), n_("M"), c_(1), tuple(body), A.ParallelFor())]


@st.composite
def grid2d(draw, ctx: Ctx) -> list[A.Stmt]:
    """C[i, j] = f(A[i, j], x[j]) with i parallel and j parallel, simd or plain; or the
    3-D form of heat_3d (i, k, j)."""
    i, j, k = n_("i"), n_("j"), n_("k")
    inner_d = draw(st.sampled_from((A.Simd(), A.ParallelFor(), A.ParallelFor(simd=True),
                                    None)))
    if draw(st.integers(0, 3)) == 0:  # rank 3
        a = ctx.new_array(("M", "K", "N"), "A")
        c = ctx.new_array(("M", "K", "N"), "C")
        leaves: list[A.Expr] = [A.Subscript(a, (i, k, j))]
        store = A.Assign(A.Subscript(c, (i, k, j)), draw(expr(ctx, leaves)))
        mid = A.For("k", c_(0), n_("K"), c_(1), (A.For(
            "j", c_(0), n_("N"), c_(1), (store,), inner_d),),
            draw(st.sampled_from((None, A.ParallelFor()))))
        return [A.For("i", c_(0), n_("M"), c_(1), (mid,), A.ParallelFor())]
    a = ctx.new_array(("M", "N"), "A")
    x = ctx.new_array(("N",), "X")
    c = ctx.new_array(("M", "N"), "C")
    leaves = [A.Subscript(a, (i, j)), A.Subscript(x, (j,))]
    store = A.Assign(A.Subscript(c, (i, j)), draw(expr(ctx, leaves)))
    tri = ctx.sizes["N"] >= ctx.sizes["M"] and draw(st.integers(0, 3)) == 0
    inner = A.For("j", add(i, 0) if tri else c_(0), n_("N"), c_(1), (store,), inner_d)
    return [A.For("i", c_(0), n_("M"), c_(1), (inner,), A.ParallelFor())]


@st.composite
def prefix_sum(draw, ctx: Ctx) -> list[A.Stmt]:
    """`sequential for`: a loop-carried dependence run by one worker (Section 3.1)."""
    a = ctx.new_array(("N",), "P")
    i = n_("i")
    lag = draw(st.integers(1, 2))
    upd = A.Assign(A.Subscript(a, (i,)), A.BinOp("+", A.Subscript(a, (i,)), A.Subscript(
        a, (A.BinOp("-", i, c_(lag)),))))
    return [A.For("i", c_(lag), n_("N"), c_(1), (upd,), A.SequentialFor())]


@st.composite
def time_steps(draw, ctx: Ctx) -> list[A.Stmt]:
    """A host loop around two kernels (jacobi_1d/2d, heat_3d, fdtd_2d's time steps):
    B from A's neighbours, then A from B."""
    a, b = ctx.new_array(("N",), "A"), ctx.new_array(("N",), "B")
    i = n_("i")
    half = ctx.const(0.25) if ctx.is_float else None
    s = A.BinOp("+", A.BinOp("+", A.Subscript(a, (add(i, -1),)), A.Subscript(a, (i,))),
                A.Subscript(a, (add(i, 1),)))
    val = A.BinOp("*", s, half) if half is not None else A.BinOp("//", s, c_(2))
    d1, d2 = _directive(draw), _directive(draw)
    k1 = A.For("i", c_(1), add(n_("N"), -1), c_(1), (A.Assign(A.Subscript(b, (i,)),
                                                               val),), d1)
    k2 = A.For("i", c_(1), add(n_("N"), -1), c_(1), (A.Assign(
        A.Subscript(a, (i,)), A.Subscript(b, (i,))),), d2)
    return [A.For("t", c_(0), n_("T"), c_(1), (k1, k2))]


@st.composite
def stripmined(draw, ctx: Ctx) -> list[A.Stmt]:
    """Assembly-level APPy (Section 3.2): a worker per strip, `appy.vidx` vectors."""
    width = draw(st.sampled_from((A.Mvl(), A.Const(32), A.Const(128))))
    src = ctx.new_array(("N",), "A")
    vi = ctx.fresh("v")
    v = A.Subscript(src, (A.Name(vi),))
    head = A.Assign(n_(vi), A.Vidx(n_("i"), width, n_("N")))
    if draw(st.booleans()):
        out = ctx.new_array(("N",), "C")
        body = (head, A.Assign(A.Subscript(out, (A.Name(vi),)),
                                 draw(expr(ctx, [v], 1, vector=True))))
    else:  # a strip's sum added atomically: the paper's vector_sum by hand
        s = ctx.new_array(("1",), "S")
        body = (head, A.Assign(A.Subscript(s, (c_(0),)), A.Call("sum", (v,)), "+",
                               atomic=True))
    return [A.For("i", c_(0), n_("N"), width, body, A.ParallelFor())]


@st.composite
def histogram(draw, ctx: Ctx) -> list[A.Stmt]:
    """Atomic updates at indirect indices: `H[idx[i]] += e` (histogram, kmeans)."""
    m = ctx.sizes["M"]
    idx = ctx.index_array(("N",), f"idx:{m}")
    h = ctx.new_array(("M",), "H")
    src = ctx.new_array(("N",), "A")
    i = n_("i")
    value = draw(st.sampled_from((ctx.const(1), A.Subscript(src, (i,)))))
    upd = A.Assign(A.Subscript(h, (A.Subscript(idx, (i,)),)), value, "+", atomic=True)
    body: tuple[A.Stmt, ...] = (upd,)
    if draw(st.booleans()):  # through a private scalar, as Listing 2's `label`
        lab = ctx.fresh("l")
        body = (A.Assign(n_(lab), A.Subscript(idx, (i,))),
                A.Assign(A.Subscript(h, (n_(lab),)), value, "+", atomic=True))
    return [A.For("i", c_(0), n_("N"), c_(1), body, _directive(draw))]


FAMILIES = {"elementwise": elementwise, "reduction": scalar_reduction,
            "rowwise": rowwise, "grid2d": grid2d, "sequential": prefix_sum,
            "time_steps": time_steps, "stripmined": stripmined, "histogram": histogram,
            "data_return": data_return} | MORE
LAST_ONLY = ("data_return",)
