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
