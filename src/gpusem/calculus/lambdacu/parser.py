"""Parser for lambda-cu (`.lcu`; seed 002, Section 5): `grammar.lark` (LALR(1)) and a
transformer to the frozen dataclasses of `calculus.lambdacu.ast`, a `Span` on every
node.

Well-formedness decided here (all `BadInput`, CLI exit 2, one line
`file:line:col: message`): syntax errors; int literals fit int32; float literals are
rounded to binary32 once, here, and stay finite; char literals are ASCII; an array
literal is homogeneous; no two kernels/functions share a name, no two parameters of one
definition; the nesting and literal-digits budgets. Everything else (scoping, SOAC
arity, types) is the checker's (`typing_rules.lambdacu`), which names its rules.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, NoReturn, cast

import lark
import numpy as np
from lark import Token, Transformer, v_args
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)
from lark.tree import Meta

from gpusem.calculus.budgets import check_int_literal, check_nesting
from gpusem.calculus.errors import BadInput
from gpusem.calculus.grammar_cache import cached_lark
from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import (
    F32,
    I32,
    INT32_MAX,
    INT32_MIN,
    Arr,
    ArrayT,
    Base,
    Bool,
    Char,
    Scalar,
    Type,
    tuple_type,
)
from gpusem.calculus.span import Span

SUFFIX = ".lcu"


@functools.cache
def _lark() -> lark.Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text()
    return cached_lark(grammar, "lambdacu", parser="lalr", lexer="contextual",
                       propagate_positions=True, maybe_placeholders=True)


def parse_program(text: str, file: str = "<input>") -> ast.Program:
    """A whole `.lcu` file."""
    try:
        tree = _lark().parse(text)
        check_nesting(tree, file)
        result = cast(ast.Program, ToAst(file).transform(tree))
    except UnexpectedInput as err:
        raise _syntax_error(err, text, file) from None
    except VisitError as err:
        if isinstance(err.orig_exc, BadInput):
            raise err.orig_exc from None
        raise
    except RecursionError:
        raise BadInput("nesting too deep: the program nests expressions hundreds of "
                       "levels deep", span=Span(file, 1, 1, 1, 1)) from None
    return result


def _syntax_error(err: UnexpectedInput, text: str, file: str) -> BadInput:
    line, col = max(err.line, 1), max(err.column, 1)
    if isinstance(err, UnexpectedToken):
        got = "end of input" if err.token.type == "$END" else f"'{err.token}'"
        expected: set[str] = set(err.expected)
    elif isinstance(err, UnexpectedCharacters):
        pos = cast(int, err.pos_in_stream)
        got = f"'{text[pos]}'" if pos < len(text) else "?"
        expected = set(err.allowed or ())
    else:
        lines = text.split("\n")
        line, col, got = len(lines), len(lines[-1]) + 1, "end of input"
        expected = set(getattr(err, "expected", ()))
    shown = ", ".join(sorted(_describe(t) for t in expected)) or "nothing"
    return BadInput(f"syntax error: expected one of {shown}, got {got}",
                    span=Span(file, line, col, line, col))


@functools.cache
def _terminal_text() -> dict[str, str]:
    out = {"NAME": "a name", "INT": "an integer", "FLOAT": "a float", "CHAR": "a char",
           "SOAC": "a SOAC", "ROP": "a reduction operator", "BASE": "a base type",
           "$END": "end of input"}
    for term in _lark().terminals:
        if term.name not in out and term.pattern.type == "str":
            out[term.name] = f"'{term.pattern.value}'"
    return out


def _describe(terminal: str) -> str:
    return _terminal_text().get(terminal, terminal.lower())


def _span(file: str, meta: Meta) -> Span:
    if getattr(meta, "empty", True):
        return Span(file, 0, 0, 0, 0)
    return Span(file, meta.line, meta.column, meta.end_line,
                max(meta.end_column - 1, 1))


def _tok_span(file: str, tok: Token) -> Span:
    return Span(file, cast(int, tok.line), cast(int, tok.column),
                cast(int, tok.end_line), max(cast(int, tok.end_column) - 1, 1))


def float32_literal(text: str) -> float:
    """The binary32 value of a decimal literal, rounded once from its float64 value.

    Note: float64 first can round twice on an exact binary32 tie; literals the printer
    writes are the float64 reprs of binary32 values, which round back exactly."""
    with np.errstate(over="ignore"):
        return float(np.float32(float(text)))


@v_args(meta=True, inline=True)
class ToAst(Transformer[Token, Any]):
    """Parse tree -> AST, one method per grammar alias."""

    def __init__(self, file: str) -> None:
        super().__init__()
        self.file = file

    def _bad(self, span: Span, message: str) -> NoReturn:
        raise BadInput(message, span=span)

    def _sp(self, meta: Meta) -> Span:
        return _span(self.file, meta)

    def _unique(self, names: list[tuple[str, Span]], what: str) -> None:
        seen: set[str] = set()
        for name, span in names:
            if name in seen:
                self._bad(span, f"duplicate {what}: {name}")
            seen.add(name)

    # program -------------------------------------------------------------
    def start(self, meta: Meta, *defs: ast.Kernel | ast.Function) -> ast.Program:
        kernels = tuple(d for d in defs if isinstance(d, ast.Kernel))
        functions = tuple(d for d in defs if isinstance(d, ast.Function))
        self._unique([(d.name, d.span) for d in defs], "definition")
        return ast.Program(kernels, functions, self._sp(meta))

    def kernel(self, meta: Meta, name: Token, params: tuple[ast.Param, ...] | None,
               ret: Type, body: ast.KExp) -> ast.Kernel:
        ps = params or ()
        self._unique([(p.name, p.span) for p in ps], "parameter")
        return ast.Kernel(str(name), ps, ret, body, self._sp(meta))

    def function(self, meta: Meta, name: Token, params: tuple[ast.Param, ...] | None,
                 ret: Type, body: ast.CExp) -> ast.Function:
        ps = params or ()
        self._unique([(p.name, p.span) for p in ps], "parameter")
        return ast.Function(str(name), ps, ret, body, self._sp(meta))

    def params(self, meta: Meta, *ps: ast.Param) -> tuple[ast.Param, ...]:
        return ps

    def param(self, meta: Meta, name: Token, type_: Type) -> ast.Param:
        return ast.Param(str(name), type_, self._sp(meta))

    def base_t(self, meta: Meta, base: Token) -> Type:
        return Base(str(base))

    def array_t(self, meta: Meta, base: Token) -> Type:
        return ArrayT(str(base))

    def tuple_t(self, meta: Meta, *items: Type | None) -> Type:
        return tuple_type(tuple(t for t in items if t is not None))

    # kernels -------------------------------------------------------------
    def k_let(self, meta: Meta, names: tuple[str, ...], app: ast.SoacApp,
              body: ast.KExp) -> ast.KLet:
        return ast.KLet(names, app, body, self._sp(meta))

    def k_ret(self, meta: Meta, names: tuple[str, ...]) -> ast.KRet:
        return ast.KRet(names, self._sp(meta))

    def names(self, meta: Meta, *names: Token) -> tuple[str, ...]:
        return tuple(str(n) for n in names)

    def soac_app(self, meta: Meta, soac: Token, *rest: Any) -> ast.SoacApp:
        *args, size = rest  # maybe_placeholders: None where there is no size
        return ast.SoacApp(str(soac), tuple(args), size, self._sp(meta))

    def rops(self, meta: Meta, *ops: Token) -> ast.Rops:
        return ast.Rops(tuple(str(o) for o in ops), self._sp(meta))

    def thunk(self, meta: Meta, params: tuple[str, ...] | None, body: ast.GExp,
              using: tuple[str, ...] | None) -> ast.Thunk:
        return ast.Thunk(params or (), body, using or (), self._sp(meta))

    def size_lit(self, meta: Meta, tok: Token) -> ast.Lit:
        return ast.Lit(self._int(tok), self._sp(meta))

    def size_var(self, meta: Meta, tok: Token) -> ast.Var:
        return ast.Var(str(tok), self._sp(meta))

    def size_len(self, meta: Meta, tok: Token) -> ast.Len:
        return ast.Len(str(tok), self._sp(meta))

    # thread code ---------------------------------------------------------
    def g_let(self, meta: Meta, names: tuple[str, ...], rhs: ast.GExp,
              body: ast.GExp) -> ast.GLet:
        return ast.GLet(names, rhs, body, self._sp(meta))

    def g_if(self, meta: Meta, cond: ast.Atom, then: ast.GExp,
             else_: ast.GExp) -> ast.GIf:
        return ast.GIf(cond, then, else_, self._sp(meta))

    def g_ret(self, meta: Meta, *atoms: ast.Atom) -> ast.GRet:
        return ast.GRet(atoms, self._sp(meta))

    def g_prim(self, meta: Meta, op: Token, *args: ast.Atom) -> ast.GPrim:
        return ast.GPrim(str(op), args, self._sp(meta))

    def g_sub(self, meta: Meta, array: Token, index: ast.Atom) -> ast.GSub:
        return ast.GSub(str(array), index, self._sp(meta))

    def g_atom(self, meta: Meta, atom: ast.Atom) -> ast.GAtom:
        return ast.GAtom(atom, self._sp(meta))

    # CPU code ------------------------------------------------------------
    def c_let(self, meta: Meta, names: tuple[str, ...] | None, rhs: ast.CExp,
              body: ast.CExp) -> ast.CLet:
        return ast.CLet(names or (), rhs, body, self._sp(meta))

    def c_if(self, meta: Meta, cond: ast.Atom, then: ast.CExp,
             else_: ast.CExp) -> ast.CIf:
        return ast.CIf(cond, then, else_, self._sp(meta))

    def c_run(self, meta: Meta, name: Token,
              args: tuple[ast.Atom, ...] | None) -> ast.CRun:
        return ast.CRun(str(name), args or (), self._sp(meta))

    def c_call(self, meta: Meta, name: Token,
               args: tuple[ast.Atom, ...] | None) -> ast.CCall | ast.CCmd:
        if str(name) in ast.COMMANDS:
            return ast.CCmd(str(name), args or (), self._sp(meta))
        return ast.CCall(str(name), args or (), self._sp(meta))

    def c_prim(self, meta: Meta, op: Token, *args: ast.Atom) -> ast.CPrim:
        return ast.CPrim(str(op), args, self._sp(meta))

    def c_tuple(self, meta: Meta, atoms: tuple[ast.Atom, ...] | None) -> ast.CTuple:
        return ast.CTuple(atoms or (), self._sp(meta))

    def c_atom(self, meta: Meta, atom: ast.Atom) -> ast.CTuple:
        return ast.CTuple((atom,), self._sp(meta))

    def atoms(self, meta: Meta, *atoms: ast.Atom) -> tuple[ast.Atom, ...]:
        return atoms

    # atoms ---------------------------------------------------------------
    def var(self, meta: Meta, tok: Token) -> ast.Var:
        return ast.Var(str(tok), self._sp(meta))

    def array_lit(self, meta: Meta, *items: ast.Lit) -> ast.Lit:
        scalars = [cast(Scalar, i.value) for i in items]
        elem = scalars[0].base
        for item, value in zip(items, scalars):
            if value.base != elem:
                self._bad(item.span, f"mixed array literal: a {value.base} in an "
                          f"array of {elem}")
        return ast.Lit(Arr(elem, tuple(scalars)), self._sp(meta))

    def empty_array(self, meta: Meta, base: Token) -> ast.Lit:
        return ast.Lit(Arr(str(base), ()), self._sp(meta))

    def int_lit(self, meta: Meta, tok: Token) -> ast.Lit:
        return ast.Lit(self._int(tok), self._sp(meta))

    def _int(self, tok: Token) -> I32:
        span = _tok_span(self.file, tok)
        text = str(tok)
        sign = -1 if text[0] == "-" else 1
        value = check_int_literal(text.lstrip("-"), span) * sign
        if not INT32_MIN <= value <= INT32_MAX:
            self._bad(span, f"int literal out of range: {text} does not fit int32")
        return I32(value)

    def float_lit(self, meta: Meta, tok: Token) -> ast.Lit:
        span = _tok_span(self.file, tok)
        mantissa = str(tok).lstrip("-").split("e")[0].split("E")[0].replace(".", "")
        check_int_literal(mantissa or "0", span)
        value = float32_literal(str(tok))
        if not np.isfinite(value):
            self._bad(span, f"float literal out of range: {tok} is not a finite "
                      "float32")
        return ast.Lit(F32(value), self._sp(meta))

    def char_lit(self, meta: Meta, tok: Token) -> ast.Lit:
        body = str(tok)[1:-1]
        code = int(body[2:], 16) if body.startswith("\\x") else ord(body)
        if code > 127:
            self._bad(_tok_span(self.file, tok), f"char literal not ASCII: {tok}")
        return ast.Lit(Char(code), self._sp(meta))

    def true_lit(self, meta: Meta) -> ast.Lit:
        return ast.Lit(Bool(True), self._sp(meta))

    def false_lit(self, meta: Meta) -> ast.Lit:
        return ast.Lit(Bool(False), self._sp(meta))
