"""Generic traversals over KIR, so that each pass writes only the cases it changes."""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Callable

from gpusem.compiler.bundl_cuda import kir as K

_EXPR_TYPES = (K.KConst, K.KVar, K.KPerspId, K.KBuiltin, K.KBin, K.KUn, K.KLoad,
               K.KPtrAdd, K.KRaw, K.KSmemTop, K.KFma)
_BODY_FIELDS = frozenset({"then", "orelse", "body", "left", "right"})


def is_expr(x) -> bool:
    return isinstance(x, _EXPR_TYPES)


def map_expr(e: K.KExpr, fn: Callable[[K.KExpr], K.KExpr | None]) -> K.KExpr:
    """Bottom-up rewrite: `fn` returns a replacement or None to keep the node."""
    changes = {}
    for f in fields(e):
        value = getattr(e, f.name)
        if is_expr(value):
            changes[f.name] = map_expr(value, fn)
    node = replace(e, **changes) if changes else e
    out = fn(node)
    return node if out is None else out


def map_stmt_exprs(s: K.KStmt, fn) -> K.KStmt:
    """`s` with `map_expr(_, fn)` applied to its own expressions (not nested bodies)."""
    changes = {}
    for f in fields(s):
        value = getattr(s, f.name)
        if is_expr(value):
            changes[f.name] = map_expr(value, fn)
        elif f.name == "args":
            changes[f.name] = tuple(map_expr(a, fn) for a in value)
    return replace(s, **changes) if changes else s


def map_bodies(s: K.KStmt, rewrite: Callable[[tuple], tuple]) -> K.KStmt:
    """`s` with each nested statement tuple passed through `rewrite`."""
    changes = {f.name: rewrite(getattr(s, f.name))
               for f in fields(s) if f.name in _BODY_FIELDS
               and isinstance(getattr(s, f.name), tuple)}
    return replace(s, **changes) if changes else s


def bodies(s: K.KStmt) -> list[tuple]:
    return [getattr(s, f.name) for f in fields(s)
            if f.name in _BODY_FIELDS and isinstance(getattr(s, f.name), tuple)]


def walk(stmts: tuple, visit: Callable[[K.KStmt], None]) -> None:
    for s in stmts:
        visit(s)
        for b in bodies(s):
            walk(b, visit)


def exprs_of(s: K.KStmt):
    """The expressions directly in `s` (and all their subexpressions)."""
    out = []

    def collect(e):
        out.append(e)

    for f in fields(s):
        value = getattr(s, f.name)
        if is_expr(value):
            map_expr(value, lambda e: collect(e))
        elif f.name == "args":
            for a in value:
                map_expr(a, lambda e: collect(e))
    return out


def rewrite_program(prog: K.KProgram, per_function) -> K.KProgram:
    return replace(prog, functions=tuple(per_function(f) for f in prog.functions))


assert is_dataclass(K.KIf)
