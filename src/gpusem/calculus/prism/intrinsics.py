"""Models of Prism's collective intrinsics (Sec 3.6) as Bundl code.

`intrinsic.mma(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3, out=[d0, d1, d2, d3])`: the warp
instruction mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (Fig. 4, B.1). Its
perspective signature is thread[32] (one warp); each lane holds fragments of
A (16x8, row-major), B (8x8) and C, D (16x8) in the layout of the PTX ISA (with
g = lane / 4, t = lane % 4):

  a0 A[g][t]   a1 A[g+8][t]   a2 A[g][t+4]   a3 A[g+8][t+4]
  b0 B[t][g]   b1 B[t+4][g]
  c0, d0 (g, 2t)   c1, d1 (g, 2t+1)   c2, d2 (g+8, 2t)   c3, d3 (g+8, 2t+1)

The model: the warp's lanes store their A and B fragments into a scratch array of
the warp (`alloc in Global` at thread[32]: one per warp, S-Alloc-Global fixed), the
partition's end is the warp's barrier, then every lane computes its four D elements
as c + Σ_k A[r][k]·B[k][c] in float32, k = 0..7 in order. The hardware's TF32 inputs
(10-bit mantissa) and its accumulation order are not modelled: the model is exact
when every product and partial sum is exact in float32 and in TF32, e.g. on small
integers (errata "Prism: the mma.sync model").
"""

from __future__ import annotations

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.ast import BaseType, MemKind
from gpusem.calculus.bundl.perspective import Level, Perspective
from gpusem.calculus.errors import BadInput
from gpusem.calculus.prism import ast as S
from gpusem.calculus.prism.elaborate_expr import expr
from gpusem.calculus.prism.scope import Scope
from gpusem.calculus.span import Span

WARP = Perspective(Level.THREAD, 32)
_A = ((0, 0), (8, 0), (0, 4), (8, 4))  # (row + g, col + t) of a0..a3
_B = ((0, 0), (4, 0))  # (row + t, col + g) of b0, b1
_D = ((0, 0), (0, 1), (8, 0), (8, 1))  # (row g + dr, col 2t + dc) of d0..d3


def mma_m16n8k8(call: S.CallExpr, sc: Scope, span: Span) -> list[B.Stmt]:
    outs = dict(call.kwargs).get("out")
    if sc.persp != WARP:
        raise BadInput(f"perspective mismatch: intrinsic.mma needs code at thread[32] "
                       f"(one warp), code is at {sc.persp}", rule="Intrinsic-Mma",
                       span=span)
    if (len(call.args) != 10 or not isinstance(outs, S.CallExpr)
            or outs.fn != "list" or len(outs.args) != 4):
        raise BadInput("bad call: intrinsic.mma(a0..a3, b0, b1, c0..c3, "
                       "out=[d0..d3])", rule="Intrinsic-Mma", span=span)
    f, i = BaseType.FLOAT, BaseType.INT
    scratch, piece = sc.names.fresh("mma_frag"), sc.names.fresh("mma_lane")
    g, t = sc.names.fresh("mma_g"), sc.names.fresh("mma_t")
    one = sc.at(Perspective(Level.THREAD, 1))

    def n(k: int) -> B.Expr:
        return B.IntLit(k, span)

    def v(name: str) -> B.Expr:
        return B.Var(name, span)

    def add(a: B.Expr, b: B.Expr) -> B.Expr:
        return B.BinOp("+", a, b, span)

    def mul(a: B.Expr, b: B.Expr) -> B.Expr:
        return B.BinOp("*", a, b, span)

    stores: list[B.Stmt] = []
    for (dr, dc), a in zip(_A, call.args[:4], strict=True):
        at = add(mul(add(v(g), n(dr)), n(8)), add(v(t), n(dc)))
        stores.append(B.ArrAssign(v(piece), at, expr(a, one, f), span))
    for (dr, dc), b in zip(_B, call.args[4:6], strict=True):
        at = add(n(128), add(mul(add(v(t), n(dr)), n(8)), add(v(g), n(dc))))
        stores.append(B.ArrAssign(v(piece), at, expr(b, one, f), span))
    results: list[B.Stmt] = []
    for (dr, dc), c, d in zip(_D, call.args[6:], outs.args, strict=True):
        row = add(v(g), n(dr))
        col = add(mul(v(t), n(2)), n(dc))
        acc = expr(c, one, f)
        for k in range(8):
            a_rk = B.Index(v(scratch), add(mul(row, n(8)), n(k)), span)
            b_kc = B.Index(v(scratch), add(n(128 + 8 * k), col), span)
            acc = add(acc, mul(a_rk, b_kc))
        results += _store(d, acc, one, span)
    # lane = partition_id at thread[1] from the warp's code (E-Partition-Id)
    one_p = Perspective(Level.THREAD, 1)
    ids = [B.Decl(g, i, one_p, B.BinOp("/", B.PartitionId(span), n(4), span),
                  B.Skip(), span),
           B.Decl(t, i, one_p, B.BinOp("%", B.PartitionId(span), n(4), span),
                  B.Skip(), span)]
    fill = B.Partition(None, scratch, piece, 32, B.Group(32, B.seq(*stores), span),
                       span, n(0))
    compute = B.Group(32, B.seq(*results), span)
    return [B.Alloc(scratch, f, 128 + 64, MemKind.GLOBAL, B.Skip(), span), *ids,
            fill, compute]


def _store(d: S.Expr, value: B.Expr, sc: Scope, span: Span) -> list[B.Stmt]:
    """d = value for an output register `r[i]` or a scalar."""
    from gpusem.calculus.prism.elaborate_expr import subscript

    if isinstance(d, S.Subscript):
        arr, idx = subscript(d.base, d.indices, sc, span)
        return [B.ArrAssign(arr, idx, value, span)]
    if isinstance(d, S.Name):
        return [B.Assign(sc.lookup(d.id, d.span).bname, value, span)]
    raise BadInput("bad call: an mma output is a register r[i] or a variable",
                   rule="Intrinsic-Mma", span=d.span)


def shfl_up(call: S.CallExpr, sc: Scope, span: Span) -> list[B.Stmt]:
    """`intrinsic.shfl_up(v, delta, out=r)`: __shfl_up_sync over the warp: lane l gets
    lane l − delta's v, or its own when l < delta. Modelled as the mma: every lane
    stores v into a per-warp scratch behind a partition barrier, then reads lane
    l − delta's cell (errata "Prism: the warp intrinsics")."""
    outs = dict(call.kwargs).get("out")
    if sc.persp != WARP:
        raise BadInput(f"perspective mismatch: intrinsic.shfl_up needs code at "
                       f"thread[32] (one warp), code is at {sc.persp}",
                       rule="Intrinsic-Shfl", span=span)
    if len(call.args) != 2 or outs is None:
        raise BadInput("bad call: intrinsic.shfl_up(v, delta, out=r)",
                       rule="Intrinsic-Shfl", span=span)
    one = sc.at(Perspective(Level.THREAD, 1))
    one_p = Perspective(Level.THREAD, 1)
    scratch, piece, lane = (sc.names.fresh(n) for n in
                            ("shfl_s", "shfl_lane_s", "shfl_l"))

    def v(name: str) -> B.Expr:
        return B.Var(name, span)

    value = expr(call.args[0], one, BaseType.INT)
    delta = expr(call.args[1], one, BaseType.INT)
    fill = B.Partition(None, scratch, piece, 32, B.Group(32, B.ArrAssign(
        v(piece), v(lane), value, span), span), span, B.IntLit(0, span))
    take = B.Index(v(scratch), B.BinOp("-", v(lane), delta, span), span)
    pick = B.If(B.BinOp(">=", v(lane), delta, span), B.seq(*_store(outs, take, one,
                                                                     span)),
                B.seq(*_store(outs, value, one, span)), span)
    return [B.Alloc(scratch, BaseType.INT, 32, MemKind.GLOBAL, B.Skip(), span),
            B.Decl(lane, BaseType.INT, one_p, B.PartitionId(span), B.Skip(), span),
            fill, B.Group(32, pick, span)]


WARPGROUP = Perspective(Level.THREAD, 128)


def wgmma(call: S.CallExpr, sc: Scope, span: Span) -> list[B.Stmt]:
    """`intrinsic.wgmma(a[i], b[j], scale_d, 1, 1, 0, 0, out=[d[k]], n=N, ld=L)`:
    Hopper's wgmma.mma_async m64nNk16 (B.5's `intrinsic.wgmma256`, N = 256), a
    warpgroup instruction: its perspective signature is thread[128]. A (64 x 16) and
    B (N x 16) are read from shared memory, both K-major: row r of A is a[i + r*L ..
    i + r*L + 15], row c of B (column c of the product) is b[j + c*L ..]; in the
    paper the layout is in the operands' descriptors (with a 128-byte swizzle), here
    `ld=` says it, unswizzled. Each lane holds N/2 accumulators in the PTX ISA's
    layout, 8 per 16 columns: with w = lane / 32, g = lane % 32 / 4, t = lane % 4,
    element e of chunk j is D[16w + g + 8(e/2 % 2)][16j + 2t + e % 2 + 8(e/4)] (the
    order B.5's write-back reads). The model: every lane computes its elements as
    scale_d * d + sum_k A[r][k] * B[c][k] in float32, k = 0..15 in order, at once
    (the asynchrony, `with wgmma_async()`, is the statement's end; errata "Prism:
    the wgmma and TMA models"). bf16 inputs are floats: exact on small integers."""
    kw = dict(call.kwargs)
    outs, n_arg, ld_arg = kw.get("out"), kw.get("n"), kw.get("ld")
    if sc.persp != WARPGROUP:
        raise BadInput(f"perspective mismatch: intrinsic.wgmma needs code at "
                       f"thread[128] (one warpgroup), code is at {sc.persp}",
                       rule="Intrinsic-Wgmma", span=span)
    if (len(call.args) != 7 or not isinstance(outs, S.CallExpr) or outs.fn != "list"
            or len(outs.args) != 1 or not isinstance(n_arg, S.Num)
            or not isinstance(n_arg.value, int) or n_arg.value % 16
            or not 16 <= n_arg.value <= 256 or ld_arg is None):
        raise BadInput("bad call: intrinsic.wgmma(a[i], b[j], scale_d, 1, 1, 0, 0, "
                       "out=[d[k]], n=N (a multiple of 16, at most 256), ld=L)",
                       rule="Intrinsic-Wgmma", span=span)
    fixed = [a.value if isinstance(a, S.Num) else None for a in call.args[3:]]
    if fixed != [1, 1, 0, 0]:
        raise BadInput("unmodelled: wgmma with scale-a/b other than 1 or transposed "
                       "operands", rule="Intrinsic-Wgmma", span=span)
    from gpusem.calculus.prism.elaborate_expr import subscript

    one = sc.at(Perspective(Level.THREAD, 1))
    refs = []
    for arg in (call.args[0], call.args[1], outs.args[0]):
        if not isinstance(arg, S.Subscript):
            raise BadInput("bad call: a wgmma operand is an element x[i] (its start)",
                           rule="Intrinsic-Wgmma", span=arg.span)
        refs.append(subscript(arg.base, arg.indices, one, span))
    (a_arr, a0), (b_arr, b0), (d_arr, d0) = refs
    ld = expr(ld_arg, one, BaseType.INT)
    scale = expr(call.args[2], one, BaseType.FLOAT)
    lane = sc.names.fresh("wgmma_lane")

    def n(k: int) -> B.Expr:
        return B.IntLit(k, span)

    def op(o: str, a: B.Expr, b: B.Expr) -> B.Expr:
        return B.BinOp(o, a, b, span)

    v = B.Var(lane, span)
    base_r = op("+", op("*", op("/", v, n(32)), n(16)), op("/", op("%", v, n(32)),
                                                           n(4)))
    base_c = op("*", op("%", v, n(4)), n(2))
    stores: list[B.Stmt] = []
    for j in range(int(n_arg.value) // 16):
        for e in range(8):
            r = op("+", base_r, n(8 * (e // 2 % 2)))
            c = op("+", base_c, n(16 * j + e % 2 + 8 * (e // 4)))
            at = op("+", d0, n(8 * j + e))
            acc = op("*", scale, B.Index(d_arr, at, span))
            for k in range(16):
                a_rk = B.Index(a_arr, op("+", a0, op("+", op("*", r, ld), n(k))), span)
                b_ck = B.Index(b_arr, op("+", b0, op("+", op("*", c, ld), n(k))), span)
                acc = op("+", acc, op("*", a_rk, b_ck))
            stores.append(B.ArrAssign(d_arr, at, acc, span))
    return [B.Decl(lane, BaseType.INT, Perspective(Level.THREAD, 1),
                   B.PartitionId(span), B.Skip(), span),
            B.Group(128, B.seq(*stores), span)]
