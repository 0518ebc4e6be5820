"""The statement templates of the CKernel generator and the kernel strategy.

One template per idiom (coverage.py counts them in the drawn programs): stores to
plain and `__restrict__` parameters, the T1 shape (loads from a read-only and a written
buffer in the two arms of a branch) and pointer selects, unrolled loops, division by
constants, 16/64-bit conversions, vector loads and stores, shared-memory exchange
across `__syncthreads()`, warp shuffles, atomics, short predicable branches, and dead
code behind a guard the inputs never satisfy (equivalence modulo inputs, emi.py).
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import strategies as st

from gpusem.calculus.ckernel import ast as A
from gpusem.fuzz.ckernel.strategies import Ctx, Draw, expr

RO_LIMIT = 100  # interpreter/ckernel/inputs.RO_LIMIT: read-only cells never exceed it
TEMPLATES = ("let", "let", "store", "t1", "psel", "loop", "vector", "exchange",
             "atomic", "short_if", "dead", "wide")
# Templates a campaign steers away from once their bug is known, so that it does not
# hide others (as the APPy target avoids a known cause's trigger): T1 (issue 23) is
# `GPUSEM_CKERNEL_AVOID=t1,psel`. Read at each draw; an unknown name is bad input.
# Besides templates, a name may be a known bug's shape that no one template makes:
# `t2` (toolchain finding T2) refuses kernels with T2's ingredients
# (coverage.t2_ingredients); `t1,psel,t2` moves a campaign past both.
AVOID_ENV = "GPUSEM_CKERNEL_AVOID"
SHAPES = ("t2",)


def avoided() -> frozenset[str]:
    names = frozenset(n for n in os.environ.get(AVOID_ENV, "").split(",") if n)
    unknown = names - set(TEMPLATES) - set(SHAPES)
    if unknown:
        from gpusem.calculus.errors import BadInput

        raise BadInput(f"{AVOID_ENV}: unknown template(s) {', '.join(sorted(unknown))}"
                       f" (templates: {', '.join(sorted(set(TEMPLATES)))}; shapes: "
                       f"{', '.join(SHAPES)})")
    return names


def allowed(kinds: tuple[str, ...]) -> tuple[str, ...]:
    """`kinds` without the avoided templates (never empty: `let` is never avoided)."""
    skip = avoided()
    return tuple(k for k in kinds if k not in skip) or ("let",)


def _store(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    if not ctx.written:
        return []
    buf = draw(st.sampled_from(sorted(ctx.written)))
    ty = ctx.written[buf]
    value = _typed(draw, ctx, ty)
    return [A.Store(buf, A.Own(draw(st.integers(0, A.CELLS - 1))), value)]


def _typed(draw: Draw, ctx: Ctx, ty: str) -> A.Expr:
    """An expression of any type, 16-bit ones as a narrowing cast of an i32."""
    if ty in ("i16", "u16"):
        return A.Cast(ty, expr(draw, ctx, "i32"))
    return expr(draw, ctx, ty)


def _let(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    ty = draw(st.sampled_from(("i32", "i32", "u32", "i64", "u64", "f32", "i16")))
    e = _typed(draw, ctx, ty)
    name = ctx.name()
    ctx.declare(name, ty)
    return [A.Let(name, ty, e)]


def _t1(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    """`if (p) v = ro[i]; else v = written[own];` (issue 23 T1) and its variations:
    the arms swapped, `__ldg` or not, the written cell stored just before."""
    ro = [n for n, t in ctx.ro.items() if t == "i32"]
    wr = [n for n, t in ctx.written.items() if t == "i32"]
    if not ro or not wr:
        return []
    r, w = draw(st.sampled_from(ro)), draw(st.sampled_from(wr))
    slot = draw(st.integers(0, A.CELLS - 1))
    out: list[A.Stmt] = []
    if draw(st.booleans()):
        out.append(A.Store(w, A.Own(slot), expr(draw, ctx, "i32", 1)))
    v = ctx.name()
    uniform, ctx.uniform = ctx.uniform, False  # the index is computed in an arm
    idx = (A.Own(draw(st.integers(0, A.CELLS - 1))) if draw(st.booleans())
           else A.Masked(expr(draw, ctx, "i32", 1)))
    ctx.uniform = uniform
    ro_load: A.Expr = A.Load(r, idx, draw(st.booleans()), "i32")
    wr_load: A.Expr = A.Load(w, A.Own(slot), False, "i32")
    first, second = (ro_load, wr_load) if draw(st.booleans()) else (wr_load, ro_load)
    cond = expr(draw, ctx, "i32", 1)
    if draw(st.booleans()):  # both arms store into one cell (T1 as found)
        dst = A.Own(draw(st.integers(0, A.CELLS - 1)))
        out.append(A.If(cond, A.Block((A.Store(w, dst, first),)),
                        A.Block((A.Store(w, dst, second),))))
        return out
    out += [A.Let(v, "i32", A.Lit("i32", 0)),
            A.If(cond, A.Block((A.Assign(v, first),)), A.Block((A.Assign(v, second),)))]
    ctx.declare(v, "i32")
    return out


def _psel(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    """A load through `c ? a : b`: read-only and written, or both read-only."""
    pairs = [(a, b) for a, ta in ctx.ro.items() for b, tb in
             {**ctx.ro, **ctx.written}.items() if a != b and ta == tb]
    if not pairs:
        return []
    a, b = draw(st.sampled_from(pairs))
    if draw(st.booleans()):
        a, b = b, a
    both_ro = a in ctx.ro and b in ctx.ro
    idx = (A.Masked(expr(draw, ctx, "u32", 1)) if both_ro and draw(st.booleans())
           else A.Own(draw(st.integers(0, A.CELLS - 1))))
    ty = ctx.ro.get(a) or ctx.written[a]
    value = A.PtrSelect(expr(draw, ctx, "i32", 1), a, b, idx, ty)
    name = ctx.name()
    ctx.declare(name, ty)
    return [A.Let(name, ty, value)]


def _nested(draw: Draw, ctx: Ctx, uniform: bool, size: int, var: str = "") -> A.Block:
    saved = (ctx.uniform, ctx.top)
    ctx.uniform, ctx.top = ctx.uniform and uniform, ctx.top and uniform
    ctx.scopes.append({var: "i32"} if var else {})
    if var:
        ctx.loop_vars.add(var)
    stmts: list[A.Stmt] = []
    for _ in range(draw(st.integers(1, size))):
        kind = draw(st.sampled_from(allowed(("let", "store", "assign", "atomic",
                                                "t1"))))
        stmts += _assign(draw, ctx) if kind == "assign" else TEMPLATE_FNS[kind](draw,
                                                                               ctx)
    ctx.scopes.pop()
    ctx.loop_vars.discard(var)
    ctx.uniform, ctx.top = saved
    return A.Block(tuple(stmts))


def _assign(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    ty = draw(st.sampled_from(("i32", "u32", "i64", "f32")))
    names = ctx.locals_of(ty, assignable=True)
    if not names:
        return []
    return [A.Assign(draw(st.sampled_from(names)), expr(draw, ctx, ty))]


def _loop(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    var = ctx.name("i")
    return [A.For(var, draw(st.integers(1, 8)), draw(st.booleans()),
                  _nested(draw, ctx, True, 3, var))]


def _short_if(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    """A one-statement arm: predication rather than a branch, for ptxas."""
    cond = expr(draw, ctx, "i32", 1)
    uniform, ctx.uniform = ctx.uniform, False
    body = _assign(draw, ctx) or _store(draw, ctx)
    ctx.uniform = uniform
    return [A.If(cond, A.Block(tuple(body)), A.Block(()))] if body else []


def _dead(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    """Code behind a guard no input satisfies: read-only cells never exceed RO_LIMIT
    (equivalence modulo inputs: the reference knows the guard is false)."""
    ro = [n for n, t in ctx.ro.items() if t in ("i32", "i64")]
    if not ro:
        return []
    r = draw(st.sampled_from(ro))
    ty = ctx.ro[r]
    cell = A.Load(r, A.Masked(expr(draw, ctx, "i32", 1)), draw(st.booleans()), ty)
    bound = A.Lit(ty, RO_LIMIT + draw(st.integers(1, 1000)))
    cond: A.Expr = draw(st.sampled_from((
        A.Binary("<", bound, cell, "i32"), A.Binary("==", cell, bound, "i32"),
        A.Binary("<=", bound, cell, "i32"))))
    dead = _nested(draw, ctx, False, 4)
    live = _nested(draw, ctx, False, 2) if draw(st.booleans()) else A.Block(())
    return [A.If(cond, dead, live)]


def _vector(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    ty = draw(st.sampled_from(("i32", "f32")))
    width = draw(st.sampled_from((2, 4)))
    src = [n for n, t in {**ctx.ro, **ctx.written}.items() if t == ty]
    out: list[A.Stmt] = []
    if src:
        buf = draw(st.sampled_from(sorted(src)))
        idx = (A.Masked(expr(draw, ctx, "i32", 1))
               if buf in ctx.ro and draw(st.booleans())
               else A.Own(draw(st.integers(0, A.CELLS // width - 1))))
        names = tuple(ctx.name() for _ in range(width))
        out.append(A.VecLoad(names, ty, buf, idx))
        for n in names:
            ctx.declare(n, ty)
    dst = [n for n, t in ctx.written.items() if t == ty]
    if dst and draw(st.booleans()):
        buf = draw(st.sampled_from(sorted(dst)))
        exprs = tuple(expr(draw, ctx, ty, 1) for _ in range(width))
        out.append(A.VecStore(buf, draw(st.integers(0, A.CELLS // width - 1)), exprs))
    return out


def _exchange(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    """Shared memory across a barrier: every thread writes its slot, `sync`, reads a
    neighbour's (the first `sync` closes any earlier phase's neighbour reads)."""
    if ctx.shared is None or not ctx.top or len(ctx.scopes) != 1:
        return []
    slot = draw(st.integers(0, A.CELLS - 1))
    name = ctx.name()
    out: list[A.Stmt] = [A.Sync(), A.Store(ctx.shared, A.Own(slot),
                                           expr(draw, ctx, "i32")), A.Sync()]
    ctx.defined_slots.add(slot)
    read = A.Load(ctx.shared, A.Neighbour(draw(st.integers(1, 63)), slot), False, "i32")
    out.append(A.Let(name, "i32", read))
    ctx.declare(name, "i32")
    return out


def _atomic(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    if not ctx.atomics:
        return []
    buf = draw(st.sampled_from(sorted(ctx.atomics)))
    return [A.Atomic(ctx.atomics[buf], buf, draw(st.integers(0, A.ATOMIC_CELLS - 1)),
                     expr(draw, ctx, "i32"))]


def _wide(draw: Draw, ctx: Ctx) -> list[A.Stmt]:
    """64-bit and 16-bit arithmetic with the conversions around it."""
    ty = draw(st.sampled_from(("i64", "u64")))
    name = ctx.name()
    wide = A.Cast(ty, expr(draw, ctx, draw(st.sampled_from(("i32", "u32"))), 1))
    value = A.Binary(draw(st.sampled_from(("*", "+", "<<", ">>"))), wide,
                     expr(draw, ctx, ty, 1), ty)
    ctx.declare(name, ty)
    narrow = draw(st.sampled_from(("i16", "u16", "i32")))
    out: list[A.Stmt] = [A.Let(name, ty, value)]
    back = ctx.name()
    out.append(A.Let(back, narrow, A.Cast(narrow, A.Var(name, ty))))
    ctx.declare(back, narrow)
    return out


TEMPLATE_FNS: dict[str, Any] = {
    "let": _let, "store": _store, "t1": _t1, "psel": _psel, "loop": _loop,
    "vector": _vector, "exchange": _exchange, "atomic": _atomic,
    "short_if": _short_if, "dead": _dead, "wide": _wide,
}


@st.composite
def kernels(draw: Draw, max_templates: int = 10) -> A.Kernel:
    """A well-formed kernel: its buffers, then a list of templates."""
    params = [A.Param("x0", "ro", "i32"), A.Param("xf", "ro", "f32"),
              A.Param("st", draw(st.sampled_from(("rw", "rwr"))), "i32")]
    if draw(st.booleans()):
        params.append(A.Param("xl", "ro", draw(st.sampled_from(("i64", "i16", "u32")))))
    params.append(A.Param("of", draw(st.sampled_from(("rw", "rwr"))), "f32"))
    if draw(st.booleans()):
        params.append(A.Param("ow", draw(st.sampled_from(("rw", "rwr"))),
                              draw(st.sampled_from(("i64", "u16", "u32")))))
    op = draw(st.sampled_from(A.ATOMIC_OPS))
    params.append(A.Param("acc", "atomic", "i32"))
    shared = (A.Shared("s0", "i32"),)
    ctx = Ctx(ro={p.name: p.ty for p in params if p.mode == "ro"},
              written={p.name: p.ty for p in params if p.mode in ("rw", "rwr")},
              shared="s0", atomics={"acc": op})
    stmts: list[A.Stmt] = []
    for kind in draw(st.lists(st.sampled_from(allowed(TEMPLATES)), min_size=1,
                              max_size=max_templates)):
        stmts += TEMPLATE_FNS[kind](draw, ctx)
    stmts += _checksum(ctx)
    kernel = A.Kernel("k", draw(st.sampled_from((1, 2))),
                      draw(st.sampled_from((32, 64))), draw(st.integers(0, 2**16)),
                      tuple(params), shared, A.Block(tuple(stmts)))
    skip = avoided()
    if "t1" in skip:  # other templates can make T1's shape too: refuse the shape
        from hypothesis import assume

        from gpusem.fuzz.ckernel.coverage import coverage_of

        assume(not {"idiom:t1-branch", "idiom:t1-branch-store"} & coverage_of(kernel))
    if "t2" in skip:
        from hypothesis import assume

        from gpusem.fuzz.ckernel.coverage import t2_ingredients

        assume(not t2_ingredients(kernel))
    return kernel


def _checksum(ctx: Ctx) -> list[A.Stmt]:
    """Every top-level local leaves through memory (an xor of the int ones into
    `st`, the last float into `of`), so the compiler cannot drop what computed it."""
    ints = [A.Cast("i32", A.Var(n, t)) if t != "i32" else A.Var(n, t)
            for n, t in ctx.scopes[0].items() if t != "f32"][-24:]
    out: list[A.Stmt] = []
    if ints and "st" in ctx.written:
        total: A.Expr = ints[0]
        for e in ints[1:]:
            total = A.Binary("^", total, e, "i32")
        out.append(A.Store("st", A.Own(3), total))
    floats = [n for n, t in ctx.scopes[0].items() if t == "f32"]
    if floats and "of" in ctx.written:
        out.append(A.Store("of", A.Own(3), A.Var(floats[-1], "f32")))
    return out
