"""Pretty-printer for Bundl (`shared/spec/bundl-syntax.md`): the inverse of `parser.py`.

For every canonical AST `x` (`walk.is_canonical`), `parse(print(x)) == x` (spans aside);
the property test `tests/bundl/test_print_parse.py` checks it on generated programs.

Layout: 2-space indent, one statement per line, a block whose body is `skip` as `{}`,
`else` omitted when the else-branch is `skip` (the parser restores it), `machine` and
`uses` always printed. A `let`/`alloc` prints its body at the same level after it (its
scope is the rest of the block), so the input must be canonical: a binder in the middle
of a `Seq` has no concrete syntax.

Expressions get the fewest parentheses the precedence allows (loosest first: `||`, `&&`,
comparisons, `+ -`, `* / %`, unary, indexing; binary operators are left-associative,
so a right operand of equal precedence is parenthesised). Literals:
  - a negative `IntLit`/`FloatLit` prints as `-1` (the parser folds a `-` directly before
    a bare literal), a negation of a literal as `-(1)`: both survive the round trip;
  - a float prints as the shortest decimal that reads back as the same binary32 value
    (always with a `.` or an exponent, so that it parses as a float, not an int).
"""

from __future__ import annotations

import math
from typing import assert_never

import numpy as np
from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.to_ast import float32_of

INDENT = "  "

# ------------------------------------------------------------------- expressions

_BINARY_PREC = {
    "||": 1, "&&": 2,
    "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
    "+": 4, "-": 4,
    "*": 5, "/": 5, "%": 5,
}
_UNARY, _POSTFIX, _ATOM = 6, 7, 8


def print_expr(e: ast.Expr) -> str:
    return _expr(e)[0]


def format_float(value: float) -> str:
    """The shortest text that parses back to the binary32 `value` (finite only)."""
    if not math.isfinite(value):
        raise ValueError(f"cannot print a non-finite float literal: {value}")
    text = str(np.float32(value))
    if not any(c in text for c in ".eE") or float32_of(text.lstrip("-")) != abs(value):
        text = repr(float(np.float32(value)))  # exact in float64, so always reads back
    return text


def _paren(e: ast.Expr, min_prec: int) -> str:
    text, prec = _expr(e)
    return f"({text})" if prec < min_prec else text


def _expr(e: ast.Expr) -> tuple[str, int]:
    """`e` printed, with the precedence level of its outermost operator."""
    match e:
        case ast.IntLit(value):
            return str(value), (_UNARY if value < 0 else _ATOM)
        case ast.FloatLit(value):
            text = format_float(value)
            return text, (_UNARY if text.startswith("-") else _ATOM)
        case ast.BoolLit(value):
            return ("true" if value else "false"), _ATOM
        case ast.Var(name):
            return name, _ATOM
        case ast.PartitionId():
            return "partition_id", _ATOM
        case ast.Index(array, index):
            return f"{_paren(array, _POSTFIX)}[{print_expr(index)}]", _POSTFIX
        case ast.UnOp(op, operand):
            return f"{op}{_unary_operand(operand)}", _UNARY
        case ast.Fma(a, b, c):
            return f"fma({print_expr(a)}, {print_expr(b)}, {print_expr(c)})", _ATOM
        case ast.BinOp(op, left, right):
            prec = _BINARY_PREC[op]
            return f"{_paren(left, prec)} {op} {_paren(right, prec + 1)}", prec
        case _:
            assert_never(e)


def _unary_operand(e: ast.Expr) -> str:
    # A literal operand must not fold into the sign on re-parsing: `-(1)`, `-(-1)`.
    if isinstance(e, (ast.IntLit, ast.FloatLit)):
        return f"({print_expr(e)})"
    return _paren(e, _UNARY)


# -------------------------------------------------------------------- statements


def print_stmt(s: ast.Stmt, indent: int = 0) -> str:
    return "\n".join(_stmt(s, indent))


def _label(label: str | None) -> str:
    return "" if label is None else f" [{label}]"


def _block(header: str, body: ast.Stmt, indent: int) -> list[str]:
    pad = INDENT * indent
    if isinstance(body, ast.Skip):
        return [f"{pad}{header} {{}}"]
    return [f"{pad}{header} {{", *_stmt(body, indent + 1), f"{pad}}}"]


def _stmt(s: ast.Stmt, indent: int) -> list[str]:
    pad = INDENT * indent
    match s:
        case ast.Skip():
            return [f"{pad}skip;"]
        case ast.Seq(stmts):
            return [line for x in stmts for line in _stmt(x, indent)]
        case ast.Decl(name, ty, persp, init, body):
            head = f"{pad}let {name} : {ty.value} @ {persp} = {print_expr(init)};"
            return [head, *_binder_body(body, indent)]
        case ast.Alloc(name, elem, size, mem, body, _, at):
            where = "" if at is None else f" @ {at}"
            head = f"{pad}alloc {name} : {elem.value}[{size}]{where} in {mem.value};"
            return [head, *_binder_body(body, indent)]
        case ast.Assign(name, value):
            return [f"{pad}{name} = {print_expr(value)};"]
        case ast.ArrAssign(array, index, value):
            target = f"{_paren(array, _POSTFIX)}[{print_expr(index)}]"
            return [f"{pad}{target} = {print_expr(value)};"]
        case ast.If(cond, then, orelse):
            lines = _block(f"if {print_expr(cond)}", then, indent)
            if isinstance(orelse, ast.Skip):
                return lines
            rest = _block("else", orelse, indent)
            return [*lines[:-1], f"{lines[-1]} {rest[0].lstrip()}", *rest[1:]]
        case ast.While(cond, body):
            return _block(f"while {print_expr(cond)}", body, indent)
        case ast.Split(n1, n2, left, right):
            lines = _block(f"split({n1}, {n2})", left, indent)
            rest = _block("", right, indent)
            return [*lines[:-1], f"{lines[-1]} {rest[0].lstrip()}", *rest[1:]]
        case ast.Group(q, body):
            return _block(f"group {q}", body, indent)
        case ast.Destruct(body):
            return _block("destruct", body, indent)
        case ast.Partition(label, x, y, c, body, _, off):
            # with `at e`: T-Partition-Offset (our extension)
            shift = "" if off is None else f" at {print_expr(off)}"
            return _block(f"partition{_label(label)} {x} into {y} by {c}{shift}", body,
                          indent)
        case ast.Claim(label, x, y, at, body):
            return _block(f"claim{_label(label)} {x} into {y} at {at}", body, indent)
        case ast.Lower(label, x, y, body):
            return _block(f"lower{_label(label)} {x} into {y}", body, indent)
        case ast.AsyncPartition(label, x, y, body):
            return _block(f"async_partition{_label(label)} {x} into {y}", body, indent)
        case ast.AsyncMemcpy(x, y):
            return [f"{pad}async_memcpy({x}, {y});"]
        case ast.Memcpy(x, y):
            return [f"{pad}memcpy({x}, {y});"]
        case ast.SyncInit(label):
            return [f"{pad}init {label};"]
        case ast.SyncDec(label):
            return [f"{pad}dec {label};"]
        case ast.SyncWait(label):
            return [f"{pad}wait {label};"]
        case ast.Free(n):
            return [f"{pad}free {n};"]
        case ast.Call(fn, args):
            return [f"{pad}{fn}({', '.join(print_expr(a) for a in args)});"]
        case _:
            assert_never(s)


def _binder_body(body: ast.Stmt, indent: int) -> list[str]:
    # The scope of a `let`/`alloc` is the rest of its block (ast.seq); `skip` is empty.
    return [] if isinstance(body, ast.Skip) else _stmt(body, indent)


# ---------------------------------------------------------------------- programs


def _type(ty: ast.BaseType | ast.ArrayType) -> str:
    match ty:
        case ast.BaseType():
            return ty.value
        case ast.ArrayType(elem, mem):
            return f"{mem.value} {elem.value}[]"
        case _:
            assert_never(ty)


def _literal(lit: ast.IntLit | ast.FloatLit | ast.BoolLit) -> str:
    return print_expr(lit)


def print_global(g: ast.GlobalDecl) -> str:
    match g.init:
        case None:
            init = ""
        case ast.Iota():
            init = " = iota"
        case tuple(lits):
            init = f" = [{', '.join(_literal(x) for x in lits)}]"
        case _:
            assert_never(g.init)
    return f"global {g.name} : {g.elem.value}[{g.size}]{init};"


def print_fn(f: ast.FnDef) -> str:
    params = ", ".join(f"{p.name} : {_type(p.type)} @ {p.persp}" for p in f.params)
    head = f"fn {f.name}({params}) at {f.persp} uses {f.uses}"
    return "\n".join(_block(head, f.body, 0))


def print_program(p: ast.Program) -> str:
    m = p.machine
    parts = [f"machine blocks = {m.blocks}, threads = {m.threads};"]
    if p.globals:
        parts.append("\n".join(print_global(g) for g in p.globals))
    parts.extend(print_fn(f) for f in p.fns)
    parts.append("\n".join(_block("main", p.main, 0)))
    return "\n\n".join(parts) + "\n"
