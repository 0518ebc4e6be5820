"""The idioms a CKernel program exercises, read off its AST (and, for dead code, its
reference run): the campaign's coverage table (issue 23 item 5: no idiom at 0).

Labels are `idiom:<name>`; `LABELS` lists them all, so a campaign shows those it
never reached.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpusem.calculus.ckernel import ast as A

LABELS = tuple(f"idiom:{n}" for n in (
    "restrict-ro-load", "ldg", "store-plain", "store-restrict", "t1-branch",
    "t1-branch-store",
    "ptr-select", "ptr-select-written", "select", "loop-pragma-unroll", "loop-plain",
    "div-signed", "div-unsigned", "div-negative-divisor", "div-pow2", "div-not-pow2",
    "mod", "int64", "int16", "int-conversion", "int-to-float", "float-arith",
    "vector-int2", "vector-int4", "vector-float2", "vector-float4", "vector-store",
    "shared-store", "syncthreads", "shared-neighbour-read", "shfl-idx", "shfl-xor",
    "atomic-add", "atomic-min", "atomic-max", "atomic-and", "atomic-or",
    "atomic-xor", "short-branch", "min", "max", "abs", "popc", "clz", "brev",
    "shift-left", "shift-right", "wrapping-mul", "dead-code"))


def stmts(block: A.Block) -> Iterator[A.Stmt]:
    for s in block.stmts:
        yield s
        for child in A.children(s):
            yield from stmts(child)


def exprs_of(s: A.Stmt) -> Iterator[A.Expr]:
    match s:
        case A.Let(expr=e) | A.Assign(expr=e) | A.Store(expr=e) | A.Atomic(expr=e):
            yield e
        case A.VecLoad(index=A.Masked(expr=e)):
            yield e
        case A.VecStore(exprs=es):
            yield from es
        case A.If(cond=c):
            yield c


def subexprs(e: A.Expr) -> Iterator[A.Expr]:
    yield e
    match e:
        case A.Unary(arg=a) | A.Cast(arg=a) | A.DivC(a=a):
            yield from subexprs(a)
        case A.Binary(a=a, b=b):
            yield from subexprs(a)
            yield from subexprs(b)
        case A.Select(cond=c, a=a, b=b):
            for x in (c, a, b):
                yield from subexprs(x)
        case A.Load(index=A.Masked(expr=i)):
            yield from subexprs(i)
        case A.PtrSelect(cond=c, index=idx):
            yield from subexprs(c)
            if isinstance(idx, A.Masked):
                yield from subexprs(idx.expr)
        case A.Shfl(value=v):
            yield from subexprs(v)


def _arm_loads(block: A.Block) -> set[str]:
    return {x.buf for s in block.stmts for e in exprs_of(s) for x in subexprs(e)
            if isinstance(x, A.Load)}


def _expr_labels(k: A.Kernel, e: A.Expr) -> set[str]:
    out: set[str] = set()
    mode = {p.name: p.mode for p in k.params}
    match e:
        case A.Load(buf, idx, ldg):
            if mode.get(buf) == "ro":
                out.add("ldg" if ldg else "restrict-ro-load")
            if isinstance(idx, A.Neighbour):
                out.add("shared-neighbour-read")
        case A.PtrSelect(_, ba, bb):
            out.add("ptr-select")
            if "ro" != mode.get(ba) or "ro" != mode.get(bb):
                out.add("ptr-select-written")
        case A.Select():
            out.add("select")
        case A.DivC(op, _, d, ty):
            out.add("mod" if op == "%" else
                    "div-signed" if ty in A.SIGNED else "div-unsigned")
            out.add("div-pow2" if abs(d) & (abs(d) - 1) == 0 else "div-not-pow2")
            if d < 0:
                out.add("div-negative-divisor")
        case A.Cast(ty, arg):
            if ty == "f32" and arg.ty != "f32":
                out.add("int-to-float")
            elif ty != arg.ty:
                out.add("int-conversion")
        case A.Shfl(xor):
            out.add("shfl-xor" if xor else "shfl-idx")
        case A.Unary(op) if op in ("abs", "popc", "clz", "brev"):
            out.add(op)
        case A.Binary(op, _, _, ty):
            if op in ("min", "max"):
                out.add(op)
            elif op == "<<":
                out.add("shift-left")
            elif op == ">>":
                out.add("shift-right")
            elif op == "*" and ty in A.INT_TYPES:
                out.add("wrapping-mul")
            if ty == "f32" and op in ("+", "-", "*"):
                out.add("float-arith")
    if e.ty in ("i64", "u64"):
        out.add("int64")
    if e.ty in ("i16", "u16"):
        out.add("int16")
    return out


def _stmt_labels(k: A.Kernel, s: A.Stmt) -> set[str]:
    mode = {p.name: p.mode for p in k.params}
    out: set[str] = set()
    match s:
        case A.Store(buf):
            out.add("shared-store" if buf not in mode else
                    "store-restrict" if mode[buf] == "rwr" else "store-plain")
        case A.VecLoad(names, ty):
            out.add(f"vector-{'int' if ty == 'i32' else 'float'}{len(names)}")
        case A.VecStore(buf, _, exprs):
            out.add("vector-store")
            out.add("store-restrict" if mode.get(buf) == "rwr" else "store-plain")
            p = k.param(buf)
            out.add(f"vector-{'int' if p and p.ty == 'i32' else 'float'}{len(exprs)}")
        case A.If(_, then, orelse):
            if len(then.stmts) + len(orelse.stmts) == 1:
                out.add("short-branch")
            loads = _arm_loads(then), _arm_loads(orelse)
            ro = {p.name for p in k.params if p.mode == "ro"}
            if any(a & ro and b - ro - {x.name for x in k.shared}
                   for a, b in (loads, loads[::-1])):
                out.add("t1-branch")
                if (len(then.stmts) == len(orelse.stmts) == 1
                        and isinstance(then.stmts[0], A.Store)
                        and isinstance(orelse.stmts[0], A.Store)
                        and then.stmts[0].index == orelse.stmts[0].index
                        and then.stmts[0].buf == orelse.stmts[0].buf):
                    out.add("t1-branch-store")  # both arms store one cell: T1 as found
        case A.For(unroll=u):
            out.add("loop-pragma-unroll" if u else "loop-plain")
        case A.Sync():
            out.add("syncthreads")
        case A.Atomic(op):
            out.add(f"atomic-{op}")
        case A.Let(_, ty):
            if ty in ("i16", "u16"):
                out.add("int16")
    return out


def coverage_of(k: A.Kernel, reached: set[tuple[int, ...]] | None = None) -> set[str]:
    """The idioms of kernel `k`; `reached` (the reference's reached blocks) adds
    `dead-code` when some block no thread entered holds statements."""
    out: set[str] = set()
    for s in stmts(k.body):
        out |= _stmt_labels(k, s)
        for e in exprs_of(s):
            for x in subexprs(e):
                out |= _expr_labels(k, x)
    if reached is not None and dead_blocks(k.body, reached):
        out.add("dead-code")
    return {f"idiom:{n}" for n in out}


def t2_ingredients(k: A.Kernel) -> bool:
    """Whether kernel `k` has what toolchain finding T2 needs (FINDINGS.md: ptxas
    folds `min(c - x, y)` into `VIADDMNMX x, -c`, c known through a shuffle and used
    again: by an atomic in the minimal kernel, by the checksum in the campaign's):
    a warp shuffle, a min or max, and a subtraction. Coarse on purpose (the value may
    pass through locals): what `t2` in GPUSEM_CKERNEL_AVOID refuses."""
    seen: set[str] = set()
    for s in stmts(k.body):
        for e in exprs_of(s):
            for x in subexprs(e):
                if isinstance(x, A.Shfl):
                    seen.add("shfl")
                elif isinstance(x, A.Binary) and x.op in ("min", "max", "-"):
                    seen.add("-" if x.op == "-" else "minmax")
    return seen == {"shfl", "minmax", "-"}


def dead_blocks(block: A.Block, reached: set[tuple[int, ...]],
                path: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    """The outermost non-empty blocks no thread entered (interpreter/ckernel paths)."""
    if path not in reached:
        return [path] if block.stmts else []
    out: list[tuple[int, ...]] = []
    for i, s in enumerate(block.stmts):
        for j, child in enumerate(A.children(s)):
            out += dead_blocks(child, reached, (*path, i, j))
    return out
