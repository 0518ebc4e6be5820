"""Parser for Bundl's concrete syntax (`shared/spec/bundl-syntax.md`; Prism, Appendix A).

`grammar.lark` is an LALR(1) grammar; `_ToAst` turns its parse tree into the frozen
dataclasses of `calculus.bundl.ast`, with a `Span` on every node. Blocks are built with
`ast.seq`, so that every parsed statement is canonical (`ast.is_canonical`).

Well-formedness checked here (all `BadInput`, CLI exit 2, one line):
  - syntax errors: `file:line:col: syntax error: expected one of ..., got '...'`;
  - int literals fit int32 (`-2147483648` is one literal: a `-` directly before a bare
    literal folds into it, see `_ToAst.neg`);
  - float literals are rounded to binary32 once, here, and must stay finite;
  - sizes (`alloc`, `global`), `machine` B and T, perspective counts `n`, `group q` and
    `partition ... by c` are positive; every size fits int32;
  - a `global` initializer list has exactly `size` literals of the element type;
  - no two globals, functions, or parameters of one function share a name.

Negative literals. `-1` parses as `IntLit(-1)`, `-(1)` as `UnOp("-", IntLit(1))`: the
printer prints each back the same way, so print-then-parse is the identity on both.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from pathlib import Path

import lark
import numpy as np
from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.perspective import Level, Perspective
from gpusem.calculus.errors import BadInput
from gpusem.calculus.span import Span
from lark import Token, Transformer, v_args
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_ENTRY = {"program": "start_program", "stmts": "start_stmts", "expr": "start_expr"}


@functools.cache
def _lark() -> lark.Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text()
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        start=list(_ENTRY.values()),
        propagate_positions=True,
        maybe_placeholders=True,
        cache=False,
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


def _parse(text: str, file: str, entry: str):
    try:
        tree = _lark().parse(text, start=_ENTRY[entry])
        builder = _ToAst(file)
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
        got = f"'{text[err.pos_in_stream]}'" if err.pos_in_stream < len(text) else "?"
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
        return set(err.interactive_parser.accepts()) or set(err.expected)
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


# ------------------------------------------------------------------------ literals


def float32_of(text: str) -> float:
    """The binary32 value nearest to the decimal `text` (ties to even), as a float.

    Note: converting through float64 first can round twice; when the float64 lands
    exactly halfway between two binary32 values, the exact decimal decides.
    """
    wide = float(text)
    with np.errstate(over="ignore"):
        narrow = np.float32(wide)  # inf when out of range: the caller reports it
    if not np.isfinite(narrow) or float(narrow) == wide:
        return float(narrow)
    toward = np.float32(np.inf if wide > float(narrow) else -np.inf)
    with np.errstate(over="ignore"):
        other = np.nextafter(narrow, toward)
    # Past FLT_MAX the next step would be 2^128 if the exponent were unbounded.
    other_q = Fraction(float(other)) if np.isfinite(other) else Fraction(
        int(np.sign(toward)) * 2**128)
    narrow_q = Fraction(float(narrow))
    mid = (narrow_q + other_q) / 2
    if Fraction(wide) != mid:
        return float(narrow)  # float64 is not on a binary32 tie: one rounding suffices
    exact = Fraction(text)
    if exact != mid:
        return float(other if abs(exact - other_q) < abs(exact - narrow_q) else narrow)
    return float(narrow)  # a true tie: float32() already rounded it to even


def _span(file: str, meta) -> Span:
    if getattr(meta, "empty", True):
        return Span(file, 0, 0, 0, 0)
    return Span(file, meta.line, meta.column, meta.end_line, max(meta.end_column - 1, 1))


def _tok_span(file: str, tok: Token) -> Span:
    return Span(file, tok.line, tok.column, tok.end_line, max(tok.end_column - 1, 1))


# --------------------------------------------------------------------- transformer


@v_args(meta=True, inline=True)
class _ToAst(Transformer):
    """Parse tree -> AST. One method per grammar alias (= AST class, snake_case)."""

    def __init__(self, file: str):
        super().__init__()
        self.file = file
        self._bare: set[int] = set()  # ids of literals written without sign or parens
        self._int_overflow: dict[int, ast.IntLit] = {}  # 2147483648 awaiting a `-`

    def finish(self) -> None:
        for lit in self._int_overflow.values():
            self._bad(lit.span, f"int literal out of range: {lit.value} does not fit int32")

    def _bad(self, span: Span, message: str):
        raise BadInput(message, span=span)

    def _sp(self, meta) -> Span:
        return _span(self.file, meta)

    def _nat(self, tok: Token, what: str, *, positive: bool = True) -> int:
        value = int(tok)
        if (positive and value <= 0) or value > INT32_MAX:
            rng = "positive" if positive else "non-negative"
            self._bad(_tok_span(self.file, tok),
                      f"bad {what}: {value} (must be {rng} and fit int32)")
        return value

    # entry points ------------------------------------------------------------
    def start_program(self, meta, program):
        return program

    def start_stmts(self, meta, *stmts):
        return ast.seq(*stmts, span=self._sp(meta))

    def start_expr(self, meta, expr):
        return expr

    # program -----------------------------------------------------------------
    def program(self, meta, machine, *rest):
        globals_ = tuple(x for x in rest if isinstance(x, ast.GlobalDecl))
        fns = tuple(x for x in rest if isinstance(x, ast.FnDef))
        main = rest[-1]
        self._unique([g.name for g in globals_] + [f.name for f in fns],
                     [g.span for g in globals_] + [f.span for f in fns], "definition")
        return ast.Program(machine or ast.DEFAULT_MACHINE, globals_, fns, main,
                           self._sp(meta))

    def _unique(self, names: list[str], spans: list[Span], what: str) -> None:
        seen: set[str] = set()
        for name, span in zip(names, spans):
            if name in seen:
                self._bad(span, f"duplicate {what}: {name}")
            seen.add(name)

    def machine(self, meta, blocks, threads):
        return ast.Machine(self._nat(blocks, "machine blocks"),
                           self._nat(threads, "machine threads"), self._sp(meta))

    def global_decl(self, meta, name, elem, size, init):
        span = self._sp(meta)
        n = self._nat(size, "global size")
        if isinstance(init, tuple):
            self._check_init(span, str(name), elem, n, init)
        return ast.GlobalDecl(str(name), elem, n, init, span)

    def _check_init(self, span, name, elem, n, init) -> None:
        if len(init) != n:
            self._bad(span, f"bad global initializer: {name} has size {n} "
                            f"but {len(init)} values")
        want = {ast.BaseType.INT: ast.IntLit, ast.BaseType.FLOAT: ast.FloatLit,
                ast.BaseType.BOOL: ast.BoolLit}[elem]
        for i, lit in enumerate(init):
            if not isinstance(lit, want):
                self._bad(lit.span, f"bad global initializer: {name}[{i}] is not "
                                    f"{elem.value}")

    def iota(self, meta):
        return ast.Iota(self._sp(meta))

    def lit_list(self, meta, *lits):
        return tuple(lits)

    def neg_int_lit(self, meta, tok):
        return self.neg(meta, self.int_lit(meta, tok))

    def neg_float_lit(self, meta, tok):
        return self.neg(meta, self.float_lit(meta, tok))

    def fn_def(self, meta, name, *rest):
        *params, persp, uses, body = rest
        params = tuple(p for p in params if p is not None)
        self._unique([p.name for p in params], [p.span for p in params], "parameter")
        return ast.FnDef(str(name), params, persp, 0 if uses is None else uses, body,
                         self._sp(meta))

    def uses(self, meta, tok):
        return self._nat(tok, "uses", positive=False)

    def param(self, meta, name, ty, persp):
        return ast.Param(str(name), ty, persp, self._sp(meta))

    def array_type(self, meta, mem, elem):
        return ast.ArrayType(elem, mem)

    def base(self, meta, tok):
        return ast.BaseType(str(tok))

    def mem(self, meta, tok):
        return ast.MemKind(str(tok))

    def persp(self, meta, level, n):
        return Perspective(Level[str(level).upper()], self._nat(n, "perspective size"))

    def label(self, meta, name):
        return str(name)

    def block(self, meta, *stmts):
        return ast.seq(*stmts, span=self._sp(meta))

    # statements (Appendix A.2 rule in each comment) --------------------------
    def decl(self, meta, name, ty, persp, init):  # T-Decl
        return ast.Decl(str(name), ty, persp, init, ast.Skip(), self._sp(meta))

    def alloc(self, meta, name, elem, size, mem):  # T-Alloc, T-Alloc-Shared
        return ast.Alloc(str(name), elem, self._nat(size, "alloc size"), mem,
                         ast.Skip(), self._sp(meta))

    def assign(self, meta, name, value):  # T-Assn
        return ast.Assign(str(name), value, self._sp(meta))

    def arr_assign(self, meta, array, index, value):  # T-Arr-Assn(-Shared)
        return ast.ArrAssign(array, index, value, self._sp(meta))

    def if_(self, meta, cond, then, orelse):  # T-If
        return ast.If(cond, then, orelse if orelse is not None else ast.Skip(),
                      self._sp(meta))

    def while_(self, meta, cond, body):  # T-While
        return ast.While(cond, body, self._sp(meta))

    def skip(self, meta):  # T-Skip
        return ast.Skip(self._sp(meta))

    def split(self, meta, n1, n2, left, right):  # T-Split
        return ast.Split(self._nat(n1, "split size", positive=False),
                         self._nat(n2, "split size", positive=False), left, right,
                         self._sp(meta))

    def group(self, meta, q, body):  # T-Group
        return ast.Group(self._nat(q, "group size"), body, self._sp(meta))

    def destruct(self, meta, body):  # T-Destruct
        return ast.Destruct(body, self._sp(meta))

    def partition(self, meta, label, x, y, c, body):  # T-Partition
        return ast.Partition(label, str(x), str(y), self._nat(c, "partition factor"),
                             body, self._sp(meta))

    def claim(self, meta, label, x, y, at, body):  # T-Claim
        return ast.Claim(label, str(x), str(y),
                         self._nat(at, "claim size", positive=False), body,
                         self._sp(meta))

    def lower(self, meta, label, x, y, body):  # T-Lower
        return ast.Lower(label, str(x), str(y), body, self._sp(meta))

    def async_partition(self, meta, label, x, y, body):  # T-Async-Partition
        return ast.AsyncPartition(label, str(x), str(y), body, self._sp(meta))

    def async_memcpy(self, meta, x, y):  # T-Async-Memcpy
        return ast.AsyncMemcpy(str(x), str(y), self._sp(meta))

    def memcpy(self, meta, x, y):  # T-Memcpy
        return ast.Memcpy(str(x), str(y), self._sp(meta))

    def sync_init(self, meta, name):  # T-Sync-Init (runtime form)
        return ast.SyncInit(str(name), self._sp(meta))

    def sync_dec(self, meta, name):  # T-Sync-Dec (runtime form)
        return ast.SyncDec(str(name), self._sp(meta))

    def sync_wait(self, meta, name):  # T-Sync-Wait (runtime form)
        return ast.SyncWait(str(name), self._sp(meta))

    def free(self, meta, n):  # T-Free (runtime form)
        return ast.Free(self._nat(n, "free amount", positive=False), self._sp(meta))

    def call(self, meta, name, *args):  # T-Function-Call
        args = tuple(a for a in args if a is not None)
        return ast.Call(str(name), args, self._sp(meta))

    # expressions -------------------------------------------------------------
    def int_lit(self, meta, tok):  # T-Int
        value, span = int(tok), _tok_span(self.file, tok)
        if value > INT32_MAX + 1:
            self._bad(span, f"int literal out of range: {value} does not fit int32")
        lit = ast.IntLit(value, span)
        self._bare.add(id(lit))
        if value == INT32_MAX + 1:
            self._int_overflow[id(lit)] = lit
        return lit

    def float_lit(self, meta, tok):  # T-Float
        span = _tok_span(self.file, tok)
        value = float32_of(str(tok))
        if not np.isfinite(value):
            self._bad(span, f"float literal out of range: {tok} overflows float32")
        lit = ast.FloatLit(value, span)
        self._bare.add(id(lit))
        return lit

    def true(self, meta):  # T-Bool
        return ast.BoolLit(True, self._sp(meta))

    def false(self, meta):  # T-Bool
        return ast.BoolLit(False, self._sp(meta))

    def partition_id(self, meta):  # T-Partition-Id
        return ast.PartitionId(self._sp(meta))

    def fma(self, meta, a, b, c):  # T-Fma (extension: explicit fused multiply-add)
        return ast.Fma(a, b, c, self._sp(meta))

    def var(self, meta, name):  # T-Var
        return ast.Var(str(name), self._sp(meta))

    def index(self, meta, array, idx):  # T-Arr-Access(-Shared)
        return ast.Index(array, idx, self._sp(meta))

    def paren(self, meta, inner):
        self._bare.discard(id(inner))  # `-(1)` stays a negation
        return inner

    def bin_op(self, meta, left, op, right):  # T-Bop, T-Cmp
        return ast.BinOp(op, left, right, self._sp(meta))

    def neg(self, meta, operand):
        span = self._sp(meta)
        if id(operand) in self._bare:  # a bare literal: fold the sign into it
            self._bare.discard(id(operand))
            self._int_overflow.pop(id(operand), None)
            if isinstance(operand, ast.IntLit):
                return ast.IntLit(-operand.value, span)
            return ast.FloatLit(-operand.value, span)
        return ast.UnOp("-", operand, span)

    def not_(self, meta, operand):
        return ast.UnOp("!", operand, self._sp(meta))

    def or_op(self, meta, tok):
        return str(tok)

    and_op = cmp_op = add_op = mul_op = or_op
