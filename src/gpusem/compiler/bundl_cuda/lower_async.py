"""Pass `lower_async_copies`: async_partition / async_memcpy -> cp.async or plain copies.

Semantics (A.3.4): `async_memcpy(x, y)` only records `memcpy(x, y)` in Φ(φ); the copy
happens when `async_partition_φ` unwinds at the end of its scope. The body cannot read
the renamed destination (T-Async-Partition), but it may still write the source, so the
copy must observe the source as it is at the END of the scope. Hence:
  - copies whose statement is followed, inside the scope, only by other async copies
    become `cp.async` (issued in place, completed by `cp.async.wait_all` at scope end),
    when the element type is 4 bytes; shared destination and global source are not
    required by the harness, but nvcc's cp.async needs them, so only those qualify
    (the arrays, or views of them: pieces of a shared array and of a global one);
  - any other copy is performed as a plain element-wise copy at the end of the scope.
"""

from __future__ import annotations

from dataclasses import replace

from gpusem.calculus.bundl.ast import BaseType
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.paths import note
from gpusem.compiler.bundl_cuda.traverse import map_bodies, rewrite_program


def _copy_count(dst: str, src: str) -> K.KExpr:
    return K.KRaw(f"gs_imin({dst}_len, {src}_len)")


# global memory: a Bundl global's parameter, or the scratch of `alloc in Global`
GLOBAL_ROOTS = ("g_", "gs_gscratch_")


def _root(roots: dict[str, str], e: K.KExpr) -> str:
    """The array a pointer expression views: a shared allocation's or a global
    parameter's name (`g_<x>`, `gs_gscratch_<type>`), through the views partition /
    lower / claim and `alloc in Global` declare."""
    match e:
        case K.KVar(name):
            return roots.get(name, name)
        case K.KPtrAdd(inner, _):
            return _root(roots, inner)
    return ""


def _lower_scope(s: K.KAsyncScope, use_cp_async: bool, shared: set[str],
                 roots: dict[str, str]) -> tuple:
    body = list(s.body)
    tail_start = len(body)
    while tail_start > 0 and isinstance(body[tail_start - 1], K.KAsyncCopy):
        tail_start -= 1
    deferred: list[K.KStmt] = []
    issued = False
    out: list[K.KStmt] = [K.KComment(f"async_partition {s.source} into {s.target} "
                                     "(S-Async-Partition)", s.span),
                          K.KDecl(s.target + "_len", "int", s.source_len, s.span),
                          K.KDecl(s.target, K.CTYPE[s.elem] + "*", K.KVar(s.source),
                                  s.span)]
    for i, stmt in enumerate(body):
        if not isinstance(stmt, K.KAsyncCopy):
            out.append(stmt)
            continue
        count = _copy_count(stmt.dst, stmt.src)
        qualifies = (use_cp_async and i >= tail_start and stmt.elem != BaseType.BOOL
                     and _root(roots, K.KVar(s.source)) in shared
                     and _root(roots, K.KVar(stmt.src)).startswith(GLOBAL_ROOTS))
        note("compile:lower_async:cp.async" if qualifies
             else "compile:lower_async:copy at unwind")
        if qualifies:
            out.append(K.KComment(f"async_memcpy({stmt.dst}, {stmt.src}) as cp.async",
                                  stmt.span))
            out.append(K.KPrim(f"for (int gs_i = 0; gs_i < {_text(count)}; ++gs_i) "
                               f"gs_cp_async({stmt.dst} + gs_i, {stmt.src} + gs_i, 4);",
                               stmt.span))
            issued = True
        else:
            deferred.append(K.KComment(f"async_memcpy({stmt.dst}, {stmt.src}): "
                                       "performed at unwind (S-Async-Partition-Unwind)",
                                       stmt.span))
            deferred.append(K.KCopy(K.KVar(stmt.dst), K.KVar(stmt.src), count,
                                    K.CTYPE[stmt.elem], stmt.span))
    if issued:
        out.append(K.KPrim("gs_cp_async_commit();", s.span))
        out.append(K.KPrim("gs_cp_async_wait_all();", s.span))
    out.extend(deferred)
    return (K.KBlock(tuple(out), s.span),)


def _text(e: K.KExpr) -> str:
    assert isinstance(e, K.KRaw)
    return e.text


def lower_async_copies(prog: K.KProgram, use_cp_async: bool = True) -> K.KProgram:
    """`roots` follows pointer views back to the array they view (binder names are
    unique in a function), so a piece of a shared array (the destination) and a piece
    of a global parameter (the source) qualify for cp.async, as the arrays themselves
    do."""

    def stmts(body: tuple, shared: set[str], roots: dict[str, str]) -> tuple:
        out: list = []
        for s in body:
            if isinstance(s, K.KDecl) and s.ctype.endswith("*") and s.init is not None:
                roots[s.name] = _root(roots, s.init)
            if isinstance(s, K.KSharedAlloc):
                inner = shared | {s.name}
                out.append(replace(s, body=stmts(s.body, inner, roots)))
            elif isinstance(s, K.KAsyncScope):
                s = replace(s, body=stmts(s.body, shared, roots))
                out.extend(_lower_scope(s, use_cp_async, shared, roots))
            else:
                out.append(map_bodies(s, lambda b: stmts(b, shared, roots)))
        return tuple(out)

    return rewrite_program(prog, lambda f: replace(f, body=stmts(f.body, set(), {})))
