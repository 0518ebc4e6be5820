"""Surface expressions -> Bundl expressions (the expression half of `elaborate.py`).

Numeric literals take the type their context asks for (`tmp : float = 0` is a float
0): Prism's surface writes C-like literals, Bundl has no conversions. Everything else
keeps its type; a mismatch is left to Bundl's T-Bop / T-Decl, whose error carries the
surface span (every Bundl node built here gets the span of the surface node it came
from).
"""

from __future__ import annotations

import numpy as np

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.ast import BaseType
from gpusem.calculus.errors import BadInput
from gpusem.calculus.prism import ast as S
from gpusem.calculus.prism.scope import Scope, Sym

_ARITH = ("+", "-", "*", "/", "%")
_CMP = ("<", "<=", ">", ">=", "==", "!=")


def expr(e: S.Expr, sc: Scope, want: BaseType | None = None) -> B.Expr:
    """Bundl's reading of `e` at the scope's code perspective."""
    match e:
        case S.Num(v, span):
            if isinstance(v, float) or want is BaseType.FLOAT:
                return B.FloatLit(float(np.float32(v)), span)
            return B.IntLit(v, span)
        case S.BoolConst(v, span):
            return B.BoolLit(v, span)
        case S.Name(name, span):
            sym = sc.lookup(name, span)
            if sym.kind != "scalar":
                raise BadInput(f"not a scalar: {name} is a {sym.kind}",
                               rule="Elab-Name", span=span)
            return B.Var(sym.bname, span)
        case S.Id(span):
            return B.PartitionId(span)
        case S.Un(op, a, span):
            return B.UnOp(op, expr(a, sc, want if op == "-" else None), span)
        case S.Bin(op, a, b, span):
            return _binop(op, a, b, sc, want, span)
        case S.Subscript(base, indices, span):
            arr, idx = subscript(base, indices, sc, span)
            return B.Index(arr, idx, span)
        case S.Attr(base, fld, span):
            return B.Var(float4_field(base, fld, sc), span)
        case S.Ternary(_, _, _, span):
            raise BadInput("unsupported expression: a ternary only as the whole "
                           "right-hand side of a declaration or assignment",
                           rule="Elab-Ternary", span=span)
        case S.CallExpr(fn, _, _, span):
            raise BadInput(f"unsupported call: {fn}(...) inside an expression (a "
                           "function result only as a declaration's value)",
                           rule="Elab-Call", span=span)
    raise BadInput(f"unsupported expression: {type(e).__name__.lower()}",
                   rule="Elab-Expression", span=e.span)


def _binop(op: str, a: S.Expr, b: S.Expr, sc: Scope, want: BaseType | None,
           span: object) -> B.Expr:
    if op in ("&&", "||"):
        return B.BinOp(op, expr(a, sc, BaseType.BOOL), expr(b, sc, BaseType.BOOL),
                       span)  # type: ignore[arg-type]
    if op not in _ARITH and op not in _CMP:
        raise BadInput(f"unsupported operator: {op} (Bundl has + - * / % and "
                       "comparisons)", rule="Elab-Operator", span=a.span)
    operand = synth(a, sc) or synth(b, sc) or (want if op in _ARITH else None)
    return B.BinOp(op, expr(a, sc, operand), expr(b, sc, operand),
                   span)  # type: ignore[arg-type]


def synth(e: S.Expr, sc: Scope) -> BaseType | None:
    """The type of `e` when it does not depend on a literal's context."""
    match e:
        case S.Num(v):
            return BaseType.FLOAT if isinstance(v, float) else None
        case S.BoolConst():
            return BaseType.BOOL
        case S.Name(name) | S.Subscript(S.Name(name)):
            sym = sc.env.get(name)
            return sym.elem if sym is not None else None
        case S.Attr():
            return BaseType.FLOAT
        case S.Id():
            return BaseType.INT
        case S.Un("!", _):
            return BaseType.BOOL
        case S.Un(_, a):
            return synth(a, sc)
        case S.Bin(op, a, b):
            if op in _CMP or op in ("&&", "||"):
                return BaseType.BOOL
            return synth(a, sc) or synth(b, sc)
    return None


def subscript(base: S.Expr, indices: tuple[S.Expr, ...], sc: Scope,
              span: object) -> tuple[B.Expr, B.Expr]:
    """x[i] / x[i, j] / x[i][j]: the array and one flat index (row-major over a local
    array's dims); through an index-function partition, y[i] reads x[f(i)]."""
    flat: list[S.Expr] = list(indices)
    while isinstance(base, S.Subscript):
        flat = list(base.indices) + flat
        base = base.base
    if not isinstance(base, S.Name):
        raise BadInput("unsupported subscript: only a named array is indexed",
                       rule="Elab-Subscript", span=base.span)
    sym = sc.lookup(base.id, base.span)
    if sym.kind != "array":
        raise BadInput(f"not an array: {base.id} is a {sym.kind}",
                       rule="Elab-Subscript", span=base.span)
    if sym.index is not None:
        return B.Var(sym.bname, base.span), _apply(sym, flat, sc)
    dims = sym.dims or (0,)
    if len(flat) != len(dims):
        raise BadInput(f"bad subscript: {base.id} has {len(dims)} dimension(s), "
                       f"indexed with {len(flat)}", rule="Elab-Subscript",
                       span=base.span)
    idx = expr(flat[0], sc, BaseType.INT)
    for d, i in zip(dims[1:], flat[1:], strict=True):
        idx = B.BinOp("+", B.BinOp("*", idx, B.IntLit(d, i.span), i.span),
                      expr(i, sc, BaseType.INT), i.span)
    return B.Var(sym.bname, base.span), idx


def _apply(sym: Sym, args: list[S.Expr], sc: Scope) -> B.Expr:
    fn = sym.index
    assert fn is not None  # the caller's guard
    if len(args) != len(fn.params):
        raise BadInput(f"bad subscript: the index function takes {len(fn.params)} "
                       f"indices, got {len(args)}", rule="Elab-Subscript",
                       span=fn.span)
    return expr(substitute(fn.body, dict(zip(fn.params, args, strict=True))), sc,
                BaseType.INT)


def substitute(e: S.Expr, sub: dict[str, S.Expr]) -> S.Expr:
    """e[sub]: a lambda's body with its parameters replaced (inlining, Fig. 5/6)."""
    from dataclasses import fields, replace

    if isinstance(e, S.Name):
        return sub.get(e.id, e)
    if isinstance(e, S.Lambda):
        inner = {k: v for k, v in sub.items() if k not in e.params}
        return replace(e, body=substitute(e.body, inner))
    changes: dict[str, object] = {}
    for f in fields(e):
        v = getattr(e, f.name)
        if isinstance(v, S.EXPR_CLASSES):
            changes[f.name] = substitute(v, sub)
        elif isinstance(v, tuple) and v and isinstance(v[0], S.EXPR_CLASSES):
            changes[f.name] = tuple(substitute(x, sub) for x in v)
    return replace(e, **changes)  # type: ignore[arg-type]


def float4_field(base: S.Expr, fld: str, sc: Scope) -> str:
    if not isinstance(base, S.Name):
        raise BadInput("unsupported field: only a float4 variable has .x .y .z .w",
                       rule="Elab-Float4", span=base.span)
    sym = sc.lookup(base.id, base.span)
    if sym.kind != "float4":
        raise BadInput(f"not a float4: {base.id}", rule="Elab-Float4", span=base.span)
    return sym.fields["xyzw".index(fld)]
