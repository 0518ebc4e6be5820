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


# Membership of the exact type: no KIR class is subclassed, so this is isinstance's
# answer, without trying eleven classes on every str and int field (issue 31.3).
_EXPR_TYPE_SET = frozenset(_EXPR_TYPES)


def is_expr(x: object) -> bool:
    return type(x) in _EXPR_TYPE_SET


_NAMES: dict[type, tuple[str, ...]] = {}
_BODY_NAMES: dict[type, tuple[str, ...]] = {}


def _names(node: DataclassInstance) -> tuple[str, ...]:
    """A node's field names, read once per class (`fields` is slow, and the passes ask
    for every node of every program: issue 31.3)."""
    names = _NAMES.get(type(node))
    if names is None:
        names = _NAMES[type(node)] = tuple(f.name for f in fields(node))
    return names


def _body_names(node: DataclassInstance) -> tuple[str, ...]:
    names = _BODY_NAMES.get(type(node))
    if names is None:
        names = _BODY_NAMES[type(node)] = tuple(
            n for n in _names(node) if n in _BODY_FIELDS)
    return names


_EXPR_NAMES: dict[type, tuple[str, ...]] = {}
# The annotations kir.py gives a field that holds an expression, or a tuple of them
# (KCall's args); they are strings there (`from __future__ import annotations`).
_DECLARED_EXPR = frozenset({"KExpr", "KExpr | None", "tuple[KExpr, ...]"})


def _expr_names(node: DataclassInstance) -> tuple[str, ...]:
    """The fields of `node`'s class declared to hold an expression or a tuple of
    them, in field order.

    Note: the walks below read only these, where they read every field before and
    asked of each value whether it was an expression: an operator, a type, a name or a
    span never is, and a leaf (a constant, a variable) has no such field at all, so a
    walk of a leaf is one lookup (issue 31.3: the walks of `lower_code` and `smem`
    were a third of the compile stage). That every expression a KIR node holds sits
    in a declared field is tests/compiler/test_bundl_traverse.py's."""
    names = _EXPR_NAMES.get(type(node))
    if names is None:
        names = _EXPR_NAMES[type(node)] = tuple(
            f.name for f in fields(node) if f.type in _DECLARED_EXPR)
    return names


def _replaced(node: N, changes: Mapping[str, object]) -> N:
    """`node` with the fields named in `changes` replaced (`node` if there are none).

    Note: built by its class from every field in order, which is what `replace` does
    after checking each field's kind: every KIR field is a plain init field (no
    `init=False`, no `InitVar`, no `__post_init__`: tests/compiler/
    test_bundl_sync_cost.py), and `replace`'s checks cost half the call (issue 31.3)."""
    if not changes:
        return node
    return type(node)(*[changes[n] if n in changes else getattr(node, n)
                        for n in _names(node)])


def map_expr(e: K.KExpr, fn: Callable[[K.KExpr], K.KExpr | None]) -> K.KExpr:
    """Bottom-up rewrite: `fn` returns a replacement or None to keep the node."""
    node = e
    names = _expr_names(e)
    if names:  # a leaf has no subexpression to rewrite first
        changes: dict[str, object] = {}
        for name in names:
            value = getattr(e, name)
            if is_expr(value) and (new := map_expr(value, fn)) is not value:
                changes[name] = new  # an unchanged subtree keeps its node: no copy
        node = _replaced(e, changes)
    out = fn(node)
    return node if out is None else out


def map_stmt_exprs(s: K.KStmt, fn: Callable[[K.KExpr], K.KExpr | None]) -> K.KStmt:
    """`s` with `map_expr(_, fn)` applied to its own expressions (not nested bodies)."""
    changes: dict[str, object] = {}
    for name in _expr_names(s):
        value = getattr(s, name)
        if is_expr(value):
            if (new := map_expr(value, fn)) is not value:
                changes[name] = new  # as in map_expr: an unchanged field, no copy
        elif isinstance(value, tuple):  # KCall's args
            args = tuple(map_expr(a, fn) for a in value)
            if any(a is not b for a, b in zip(args, value, strict=True)):
                changes[name] = args
    return _replaced(s, changes)


def map_bodies(s: K.KStmt, rewrite: Callable[[Body], Body]) -> K.KStmt:
    """`s` with each nested statement tuple passed through `rewrite`.

    Note: a body that `rewrite` gives back with the very same statements (most bodies
    in most passes) is not a change, and a statement none of whose bodies changed is
    `s` itself, not a copy: an unchanged subtree is not rebuilt by every pass (issue
    31.3), as `map_expr` keeps an unchanged expression (KIR nodes are frozen: an equal
    copy and the node itself are interchangeable)."""
    names = _body_names(s)
    if not names:  # most statements: no nested body to rewrite
        return s
    changes: dict[str, object] = {}
    for n in names:
        if isinstance(b := getattr(s, n), tuple) and not _same(new := rewrite(b), b):
            changes[n] = new
    return _replaced(s, changes)


def _same(new: Body, old: Body) -> bool:
    """Whether `new` holds the very statements of `old`, in order."""
    return new is old or (len(new) == len(old)
                          and all(a is b for a, b in zip(new, old, strict=True)))


def bodies(s: K.KStmt) -> list[Body]:
    names = _body_names(s)
    if not names:
        return []
    return [b for n in names if isinstance(b := getattr(s, n), tuple)]


def walk(stmts: Body, visit: Callable[[K.KStmt], None]) -> None:
    for s in stmts:
        visit(s)
        for b in bodies(s):
            walk(b, visit)


def exprs_of(s: K.KStmt) -> list[K.KExpr]:
    """The expressions directly in `s` (and all their subexpressions)."""
    out: list[K.KExpr] = []
    for name in _expr_names(s):
        value = getattr(s, name)
        if is_expr(value):
            _post_order(value, out)
        elif isinstance(value, tuple):  # KCall's args
            for a in value:
                _post_order(a, out)
    return out


def _post_order(e: K.KExpr, out: list[K.KExpr]) -> None:
    """`e`'s subexpressions, children first, in the order `map_expr` visits them (a
    walk that copies nothing, for readers)."""
    for name in _expr_names(e):
        value = getattr(e, name)
        if is_expr(value):
            _post_order(value, out)
    out.append(e)


def rewrite_program(prog: K.KProgram,
                    per_function: Callable[[K.KFunction], K.KFunction]) -> K.KProgram:
    return replace(prog, functions=tuple(per_function(f) for f in prog.functions))


assert is_dataclass(K.KIf)
