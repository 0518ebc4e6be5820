"""Parser for Bundl's concrete syntax (`shared/spec/bundl-syntax.md`; Prism, Appendix A).

`grammar.lark` is an LALR(1) grammar; `ToAst` (`calculus.bundl.to_ast`) turns its parse
tree into the frozen dataclasses of `calculus.bundl.ast`, with a `Span` on every node.
Blocks are built with `ast.seq`, so that every parsed statement is canonical
(`walk.is_canonical`).

Well-formedness checked (syntax errors here, the rest by `ToAst`; all `BadInput`, CLI
exit 2, one line):
  - syntax errors: `file:line:col: syntax error: expected one of ..., got '...'`;
  - int literals fit int32 (`-2147483648` is one literal: a `-` directly before a bare
    literal folds into it, see `ToAst.neg`);
  - float literals are rounded to binary32 once, here, and must stay finite;
  - sizes (`alloc`, `global`), `machine` B and T, perspective counts `n`, `group q` and
    `partition ... by c` are positive; every size fits int32;
  - a `global` initializer list has exactly `size` literals of the element type;
  - no two globals, functions, or parameters of one function share a name;
  - the nesting and literal_digits budgets (`gpusem.calculus.budgets`; the threads
    and elements budgets, `calculus.bundl.limits`, are the interpreters' and `check`'s).

Negative literals. `-1` parses as `IntLit(-1)`, `-(1)` as `UnOp("-", IntLit(1))`: the
printer prints each back the same way, so print-then-parse is the identity on both.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable, Literal, cast, overload

import lark
from gpusem.calculus.budgets import check_nesting
from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.to_ast import Parsed, ToAst
from gpusem.calculus.errors import BadInput
from gpusem.calculus.grammar_cache import cached_lark
from gpusem.calculus.span import Span
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

_ENTRY = {"program": "start_program", "stmts": "start_stmts", "expr": "start_expr"}


@functools.cache
def _lark() -> lark.Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text()
    return cached_lark(
        grammar,
        "bundl",
        parser="lalr",
        lexer="contextual",
        start=list(_ENTRY.values()),
        propagate_positions=True,
        maybe_placeholders=True,
    )


# --------------------------------------------------------------------- entry points


def parse_program(text: str, file: str = "<input>") -> ast.Program:
    """A whole `.bundl` file."""
    return _parse(text, file, "program")


def parse_stmt(text: str, file: str = "<input>") -> ast.Stmt:
    """A statement list (zero or more statements), as the canonical `ast.seq` of them."""
    return _parse(text, file, "stmts")


def parse_expr(text: str, file: str = "<input>") -> ast.Expr:
    return _parse(text, file, "expr")


@overload
def _parse(text: str, file: str, entry: Literal["program"]) -> ast.Program: ...
@overload
def _parse(text: str, file: str, entry: Literal["stmts"]) -> ast.Stmt: ...
@overload
def _parse(text: str, file: str, entry: Literal["expr"]) -> ast.Expr: ...
def _parse(text: str, file: str, entry: str) -> Parsed:
    try:
        tree = _lark().parse(text, start=_ENTRY[entry])
        check_nesting(tree, file)
        builder = ToAst(file)
        result = builder.transform(tree)
    except UnexpectedInput as err:
        raise _syntax_error(err, text, file) from None
    except VisitError as err:
        if isinstance(err.orig_exc, BadInput):
            raise err.orig_exc from None
        if isinstance(err.orig_exc, RecursionError):
            raise _too_deep(file) from None
        raise
    except RecursionError:  # the tree walk is recursive; say so in one line
        raise _too_deep(file) from None
    builder.finish()
    return result


def _too_deep(file: str) -> BadInput:
    return BadInput("nesting too deep: the program nests blocks or parentheses "
                    "hundreds of levels deep", span=Span(file, 1, 1, 1, 1))


# ------------------------------------------------------------------- syntax errors


def _syntax_error(err: UnexpectedInput, text: str, file: str) -> BadInput:
    line, col = max(err.line, 1), max(err.column, 1)
    if isinstance(err, UnexpectedToken):
        got = "end of input" if err.token.type == "$END" else f"'{err.token}'"
        expected = _acceptable(err)
    elif isinstance(err, UnexpectedCharacters):
        pos = cast(int, err.pos_in_stream)  # lark declares it None, sets an int
        got = f"'{text[pos]}'" if pos < len(text) else "?"
        expected = err.allowed or set()
    else:  # UnexpectedEOF
        got, expected = "end of input", getattr(err, "expected", set())
        line, col = _end_position(text)
    span = Span(file, line, col, line, col)
    shown = ", ".join(_summarise({_describe(t) for t in expected})) or "nothing"
    return BadInput(f"syntax error: expected one of {shown}, got {got}", span=span)


def _acceptable(err: UnexpectedToken) -> set[str]:
    """The terminals that really continue the input here. LALR's lookahead sets are
    merged across states (after `x = 1` it would also list ')' and ']'); the
    interactive parser tries each one."""
    try:
        accepts: Callable[[], set[str]] = err.interactive_parser.accepts  # unannotated
        return set(accepts()) or set(err.expected)
    except (AttributeError, lark.exceptions.LarkError):  # cannot replay: LALR's set
        return set(err.expected)


_OPERATORS = {f"'{op}'" for op in ast.BINARY_OPS}


def _summarise(shown: set[str]) -> list[str]:
    """After a complete operand LALR may continue with any binary operator: name them
    once ("an operator") so that the punctuation that was probably missing stands out."""
    ops = shown & _OPERATORS
    if len(ops) >= 5:
        shown = (shown - ops) | {"an operator"}
    return sorted(shown)


def _end_position(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1


@functools.cache
def _terminal_text() -> dict[str, str]:
    """Terminal name -> what a user reads: `';'` for punctuation, `a name` for NAME."""
    out = {"NAME": "a name", "INT": "an integer", "FLOAT": "a float",
           "LEVEL": "'thread', 'block' or 'grid'", "$END": "end of input"}
    for term in _lark().terminals:
        if term.name not in out and term.pattern.type == "str":
            out[term.name] = f"'{term.pattern.value}'"
    return out


def _describe(terminal: str) -> str:
    return _terminal_text().get(terminal, terminal.lower())
