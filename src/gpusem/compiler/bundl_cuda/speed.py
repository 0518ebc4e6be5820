"""Speed passes of the Bundl -> CUDA pipeline (issue 4, "Speed of what it emits").

Each pass is semantics-preserving on every program, small, and named:

    restrict_kernel_pointers    kernel pointer parameters get `__restrict__`
    merge_adjacent_syncthreads  a `__syncthreads()` reached right after another one,
                                with only thread-local work between, is dropped
    hint_unroll_counted_loops   `#pragma unroll` on short counted while loops
    contract_fma                (only with CompileOptions.fast_fma, never for the
                                oracle) float `a * b + c` -> one fused multiply-add

Conventions: `prog` a KProgram after `lower_barriers`; statement tuples are bodies.
"""

from __future__ import annotations

from dataclasses import replace

from gpusem.calculus.bundl.ast import BaseType
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.paths import note
from gpusem.compiler.bundl_cuda.traverse import (
    bodies,
    exprs_of,
    map_bodies,
    map_stmt_exprs,
    rewrite_program,
)

SYNC = "__syncthreads();"
MAX_UNROLL_TRIPS = 8
UNROLL_PRAGMA = "#if GS_CUDA\n#pragma unroll\n#endif"


# ------------------------------------------------------------------ restrict
def restrict_kernel_pointers(prog: K.KProgram) -> K.KProgram:
    """Every kernel pointer parameter is one Bundl global or one scratch array of
    `alloc in Global`, each its own allocation (`launch.kernel_spec` passes one array
    per parameter), so no two parameters alias: `__restrict__` only states that,
    letting nvcc keep loads across stores."""

    def per_function(f: K.KFunction) -> K.KFunction:
        if not f.is_kernel:
            return f
        params = tuple(replace(p, ctype=f"{p.ctype} __restrict__")
                       if p.ctype.endswith("*") else p for p in f.params)
        return replace(f, params=params)

    return rewrite_program(prog, per_function)


# ------------------------------------------------------------------ barriers
def _touches_memory(s: K.KStmt) -> bool:
    """Conservatively: may `s` read or write memory another thread can see? Only
    declarations / assignments of locals whose expressions load nothing are not."""
    match s:
        case K.KComment() | K.KDecl() | K.KAssign():
            return any(isinstance(e, K.KLoad) for e in exprs_of(s))
    return True


def _ends_with_sync(s: K.KStmt) -> bool:
    """Does executing `s` end with a block-wide barrier (nothing after it)?"""
    match s:
        case K.KPrim(text) if text == SYNC:
            return True
        case K.KBlock(body):
            rest = [b for b in body if not isinstance(b, K.KComment)]
            return bool(rest) and _ends_with_sync(rest[-1])
    return False


def _merge(body: tuple, synced: bool) -> tuple:
    """`synced`: every thread of the block has just passed a __syncthreads and done
    nothing since that another thread could observe or disturb. A second barrier then
    orders nothing more, and every thread reaches it (straight-line code or a KBlock,
    never across if / while), so dropping it is exact."""
    out: list[K.KStmt] = []
    for s in body:
        if isinstance(s, K.KPrim) and s.text == SYNC:
            if not synced:
                out.append(s)
            else:
                note("compile:speed:merged __syncthreads")
            synced = True
            continue
        if isinstance(s, K.KBlock):
            s = replace(s, body=_merge(s.body, synced))
            synced = _ends_with_sync(s) or (synced and not _touches_memory(s))
        else:
            s = map_bodies(s, lambda b: _merge(b, False))
            synced = _ends_with_sync(s) or (
                synced and not isinstance(s, (K.KIf, K.KWhile, K.KPrim, K.KCall))
                and not _touches_memory(s))
        out.append(s)
    return tuple(out)


def merge_adjacent_syncthreads(prog: K.KProgram) -> K.KProgram:
    return rewrite_program(prog, lambda f: replace(f, body=_merge(f.body, False)))


# ------------------------------------------------------------------ unrolling
def _trip_count(init: K.KStmt, loop: K.KWhile) -> int | None:
    """Trips of `int v = c0; while (v < c1) { ...; v = v + c; }` when v is assigned
    nowhere else in the body (then the count is static), else None."""
    match init, loop.cond:
        case (K.KDecl(v, "int", K.KConst(c0, BaseType.INT)),
              K.KBin("<", K.KVar(w), K.KConst(c1, BaseType.INT), _)) if v == w:
            pass
        case _:
            return None
    if not loop.body:
        return None
    match loop.body[-1]:
        case K.KAssign(x, K.KBin("+", K.KVar(y), K.KConst(step, BaseType.INT), _)) \
                if x == y == v and step > 0:
            pass
        case _:
            return None
    if any(v in _assigned_in(s, {}) for s in loop.body[:-1]):
        return None
    return max(0, -(-(int(c1) - int(c0)) // int(step)))  # int constants (INT)


def _assigned_in(s: K.KStmt, memo: dict[int, tuple[K.KStmt, set[str]]]) -> set[str]:
    """The names declared or assigned anywhere in `s` (nested bodies too), each
    statement's found once per pass (`memo`, by identity, holding the statement):
    `_hint` asks again at every enclosing level."""
    hit = memo.get(id(s))
    if hit is None:
        found = {s.name} if isinstance(s, (K.KAssign, K.KDecl)) else set()
        for b in bodies(s):
            for inner in b:
                found |= _assigned_in(inner, memo)
        hit = memo[id(s)] = (s, found)
    return hit[1]


def _hint(body: tuple, max_trips: int = MAX_UNROLL_TRIPS,
          memo: dict[int, tuple[K.KStmt, set[str]]] | None = None) -> tuple:
    memo = {} if memo is None else memo
    out: list[K.KStmt] = []
    prev_decl: dict[str, K.KDecl] = {}
    for s in body:
        s = map_bodies(s, lambda b: _hint(b, max_trips, memo))
        if isinstance(s, K.KWhile) and isinstance(s.cond, K.KBin) \
                and isinstance(s.cond.left, K.KVar) and s.cond.left.name in prev_decl:
            trips = _trip_count(prev_decl[s.cond.left.name], s)
            if trips is not None and 1 < trips <= max_trips:
                note("compile:speed:unroll hint")
                out.append(K.KPrim(UNROLL_PRAGMA, s.span))
        # a start value is known only while nothing has assigned the variable since
        if prev_decl:  # one walk of s for all of them (issue 31.3), not one each
            assigned = _assigned_in(s, memo)
            for name in [n for n in prev_decl if n in assigned]:
                del prev_decl[name]
        if isinstance(s, K.KDecl):
            prev_decl[s.name] = s
        out.append(s)
    return tuple(out)


def hint_unroll_counted_loops(prog: K.KProgram,
                              max_trips: int = MAX_UNROLL_TRIPS) -> K.KProgram:
    """nvcc unrolls fully only what it is asked to; a short counted loop (the k-tile
    loads and the dot loop of SGEMM) unrolled keeps its loads ahead of their uses."""
    return rewrite_program(prog, lambda f: replace(f, body=_hint(f.body, max_trips)))


# ------------------------------------------------------------------ fast FMA
def _contract(e: K.KExpr) -> K.KExpr | None:
    match e:
        case K.KBin("+", K.KBin("*", a, b, BaseType.FLOAT), c, BaseType.FLOAT):
            return K.KFma(a, b, c)
        case K.KBin("+", c, K.KBin("*", a, b, BaseType.FLOAT), BaseType.FLOAT):
            return K.KFma(a, b, c)
    return None


def contract_fma(prog: K.KProgram) -> K.KProgram:
    """Note: NOT semantics-preserving (one rounding instead of two); only behind
    CompileOptions(fast_fma=True), for benchmarks, never used by the oracle. The
    contraction is deterministic (left product first), so a reference can mirror it."""

    def stmts(body: tuple) -> tuple:
        return tuple(map_bodies(map_stmt_exprs(s, _contract), stmts) for s in body)

    return rewrite_program(prog, lambda f: replace(f, body=stmts(f.body)))
