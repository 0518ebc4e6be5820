"""Generic traversals over KIR, so that each pass writes only the cases it changes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass, replace
from typing import TYPE_CHECKING, Callable, TypeVar

from gpusem.compiler.bundl_cuda import kir as K

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

N = TypeVar("N", bound="DataclassInstance")
Body = tuple[K.KStmt, ...]

_EXPR_TYPES = (K.KConst, K.KVar, K.KPerspId, K.KBuiltin, K.KBin, K.KUn, K.KLoad,
               K.KPtrAdd, K.KRaw, K.KSmemTop, K.KFma)
_BODY_FIELDS = frozenset({"then", "orelse", "body", "left", "right"})


def is_expr(x: object) -> bool:
    return isinstance(x, _EXPR_TYPES)


def _replaced(node: N, changes: Mapping[str, object]) -> N:
    """`node` with the fields named in `changes` replaced (`node` if there are none)."""
    return replace(node, **changes) if changes else node


def map_expr(e: K.KExpr, fn: Callable[[K.KExpr], K.KExpr | None]) -> K.KExpr:
    """Bottom-up rewrite: `fn` returns a replacement or None to keep the node."""
    changes: dict[str, object] = {}
    for f in fields(e):
        value = getattr(e, f.name)
        if is_expr(value):
            changes[f.name] = map_expr(value, fn)
    node = _replaced(e, changes)
    out = fn(node)
    return node if out is None else out


def map_stmt_exprs(s: K.KStmt, fn: Callable[[K.KExpr], K.KExpr | None]) -> K.KStmt:
    """`s` with `map_expr(_, fn)` applied to its own expressions (not nested bodies)."""
    changes: dict[str, object] = {}
    for f in fields(s):
        value = getattr(s, f.name)
        if is_expr(value):
            changes[f.name] = map_expr(value, fn)
        elif f.name == "args":
            changes[f.name] = tuple(map_expr(a, fn) for a in value)
    return _replaced(s, changes)


def map_bodies(s: K.KStmt, rewrite: Callable[[Body], Body]) -> K.KStmt:
    """`s` with each nested statement tuple passed through `rewrite`."""
    changes = {f.name: rewrite(getattr(s, f.name))
               for f in fields(s) if f.name in _BODY_FIELDS
               and isinstance(getattr(s, f.name), tuple)}
    return _replaced(s, changes)


def bodies(s: K.KStmt) -> list[Body]:
    return [getattr(s, f.name) for f in fields(s)
            if f.name in _BODY_FIELDS and isinstance(getattr(s, f.name), tuple)]


def walk(stmts: Body, visit: Callable[[K.KStmt], None]) -> None:
    for s in stmts:
        visit(s)
        for b in bodies(s):
            walk(b, visit)


def exprs_of(s: K.KStmt) -> list[K.KExpr]:
    """The expressions directly in `s` (and all their subexpressions)."""
    out: list[K.KExpr] = []

    def collect(e: K.KExpr) -> None:
        out.append(e)

    for f in fields(s):
        value = getattr(s, f.name)
        if is_expr(value):
            map_expr(value, lambda e: collect(e))
        elif f.name == "args":
            for a in value:
                map_expr(a, lambda e: collect(e))
    return out


def rewrite_program(prog: K.KProgram,
                    per_function: Callable[[K.KFunction], K.KFunction]) -> K.KProgram:
    return replace(prog, functions=tuple(per_function(f) for f in prog.functions))


assert is_dataclass(K.KIf)
