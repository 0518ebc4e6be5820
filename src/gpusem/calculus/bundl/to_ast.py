"""Bundl parse tree -> AST: the transformer behind `calculus.bundl.parser`.

Builds the frozen dataclasses of `calculus.bundl.ast` (Prism paper, Appendix A.1-A.3)
from the parse tree of `grammar.lark`, one method per grammar alias (the Appendix A.2
typing rule of each statement and expression is named beside it), with a `Span` on
every node, and checks the well-formedness listed in `calculus.bundl.parser`: int32
literals (a `-` directly before a bare literal folds into it, see `ToAst.neg`), float
literals rounded to binary32 once (`float32_of`) and finite, positive sizes, global
initializer lists, and unique names.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, NoReturn, Union, cast

from gpusem.calculus.budgets import check_int_literal
from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.perspective import Level, Perspective
from gpusem.calculus.errors import BadInput
from gpusem.calculus.span import Span
from lark import Token, Transformer, v_args
from lark.tree import Meta

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# What a parse yields: a program, a statement (list) or an expression, by entry point.
Parsed = Union[ast.Program, ast.Stmt, ast.Expr]


# ------------------------------------------------------------------------ literals


def float32_of(text: str) -> float:
    """The binary32 value nearest to the decimal `text` (ties to even), as a float.

    Note: converting through float64 first can round twice; when the float64 lands
    exactly halfway between two binary32 values, the exact decimal decides.
    """
    import numpy as np  # here, not above: a program without a float literal (and
    # `gpusem check`'s start) does without NumPy's ~0.25 CPU-s import

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


def _span(file: str, meta: Meta) -> Span:
    if getattr(meta, "empty", True):
        return Span(file, 0, 0, 0, 0)
    return Span(file, meta.line, meta.column, meta.end_line, max(meta.end_column - 1, 1))


def _tok_span(file: str, tok: Token) -> Span:
    # The tokens of a parse always carry their position (lark types them Optional).
    line, column = cast(int, tok.line), cast(int, tok.column)
    end_line, end_column = cast(int, tok.end_line), cast(int, tok.end_column)
    return Span(file, line, column, end_line, max(end_column - 1, 1))


# --------------------------------------------------------------------- transformer

# A literal of a `global` initializer list; what a `-` before an operand builds.
InitLit = Union[ast.IntLit, ast.FloatLit, ast.BoolLit]
Signed = Union[ast.IntLit, ast.FloatLit, ast.UnOp]


@v_args(meta=True, inline=True)
class ToAst(Transformer[Token, Parsed]):
    """Parse tree -> AST. One method per grammar alias (= AST class, snake_case)."""

    def __init__(self, file: str) -> None:
        super().__init__()
        self.file = file
        self._bare: set[int] = set()  # ids of literals written without sign or parens
        self._int_overflow: dict[int, ast.IntLit] = {}  # 2147483648 awaiting a `-`

    def finish(self) -> None:
        for lit in self._int_overflow.values():
            self._bad(lit.span, f"int literal out of range: {lit.value} does not fit int32")

    def _bad(self, span: Span, message: str) -> NoReturn:
        raise BadInput(message, span=span)

    def _sp(self, meta: Meta) -> Span:
        return _span(self.file, meta)

    def _nat(self, tok: Token, what: str, *, positive: bool = True) -> int:
        value = check_int_literal(str(tok), _tok_span(self.file, tok))
        if (positive and value <= 0) or value > INT32_MAX:
            rng = "positive" if positive else "non-negative"
            self._bad(_tok_span(self.file, tok),
                      f"bad {what}: {value} (must be {rng} and fit int32)")
        return value

    # entry points ------------------------------------------------------------
    def start_program(self, meta: Meta, program: ast.Program) -> ast.Program:
        return program

    def start_stmts(self, meta: Meta, *stmts: ast.Stmt) -> ast.Stmt:
        return ast.seq(*stmts, span=self._sp(meta))

    def start_expr(self, meta: Meta, expr: ast.Expr) -> ast.Expr:
        return expr

    # program -----------------------------------------------------------------
    def program(self, meta: Meta, machine: ast.Machine | None,
                *rest: ast.GlobalDecl | ast.FnDef | ast.Stmt) -> ast.Program:
        globals_ = tuple(x for x in rest if isinstance(x, ast.GlobalDecl))
        fns = tuple(x for x in rest if isinstance(x, ast.FnDef))
        main = cast(ast.Stmt, rest[-1])  # the grammar ends a program with `main`
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

    def machine(self, meta: Meta, blocks: Token, threads: Token) -> ast.Machine:
        return ast.Machine(self._nat(blocks, "machine blocks"),
                           self._nat(threads, "machine threads"), self._sp(meta))

    def global_decl(self, meta: Meta, name: Token, elem: ast.BaseType, size: Token,
                    init: ast.GlobalInit) -> ast.GlobalDecl:
        span = self._sp(meta)
        n = self._nat(size, "global size")
        if isinstance(init, tuple):
            self._check_init(span, str(name), elem, n, init)
        return ast.GlobalDecl(str(name), elem, n, init, span)

    def _check_init(self, span: Span, name: str, elem: ast.BaseType, n: int,
                    init: tuple[InitLit, ...]) -> None:
        if len(init) != n:
            self._bad(span, f"bad global initializer: {name} has size {n} "
                            f"but {len(init)} values")
        want = {ast.BaseType.INT: ast.IntLit, ast.BaseType.FLOAT: ast.FloatLit,
                ast.BaseType.BOOL: ast.BoolLit}[elem]
        for i, lit in enumerate(init):
            if not isinstance(lit, want):
                self._bad(lit.span, f"bad global initializer: {name}[{i}] is not "
                                    f"{elem.value}")

    def iota(self, meta: Meta) -> ast.Iota:
        return ast.Iota(self._sp(meta))

    def lit_list(self, meta: Meta, *lits: InitLit) -> tuple[InitLit, ...]:
        return tuple(lits)

    def neg_int_lit(self, meta: Meta, tok: Token) -> Signed:
        return self.neg(meta, self.int_lit(meta, tok))

    def neg_float_lit(self, meta: Meta, tok: Token) -> Signed:
        return self.neg(meta, self.float_lit(meta, tok))

    # rest: Param-or-None..., Perspective, uses (int or None), body
    def fn_def(self, meta: Meta, name: Token, *rest: Any) -> ast.FnDef:
        *written, persp, uses, body = rest
        params: tuple[ast.Param, ...] = tuple(p for p in written if p is not None)
        self._unique([p.name for p in params], [p.span for p in params], "parameter")
        return ast.FnDef(str(name), params, persp, 0 if uses is None else uses, body,
                         self._sp(meta))

    def uses(self, meta: Meta, tok: Token) -> int:
        return self._nat(tok, "uses", positive=False)

    def param(self, meta: Meta, name: Token, ty: ast.BaseType | ast.ArrayType,
              persp: Perspective) -> ast.Param:
        return ast.Param(str(name), ty, persp, self._sp(meta))

    def array_type(self, meta: Meta, mem: ast.MemKind,
                   elem: ast.BaseType) -> ast.ArrayType:
        return ast.ArrayType(elem, mem)

    def base(self, meta: Meta, tok: Token) -> ast.BaseType:
        return ast.BaseType(str(tok))

    def mem(self, meta: Meta, tok: Token) -> ast.MemKind:
        return ast.MemKind(str(tok))

    def persp(self, meta: Meta, level: Token, n: Token) -> Perspective:
        return Perspective(Level[str(level).upper()], self._nat(n, "perspective size"))

    def label(self, meta: Meta, name: Token) -> str:
        return str(name)

    def block(self, meta: Meta, *stmts: ast.Stmt) -> ast.Stmt:
        return ast.seq(*stmts, span=self._sp(meta))

    # statements (Appendix A.2 rule in each comment) --------------------------
    def decl(self, meta: Meta, name: Token, ty: ast.BaseType, persp: Perspective,
             init: ast.Expr) -> ast.Decl:  # T-Decl
        return ast.Decl(str(name), ty, persp, init, ast.Skip(), self._sp(meta))

    def alloc(self, meta: Meta, name: Token, elem: ast.BaseType, size: Token,
              persp: Perspective | None, mem: ast.MemKind) -> ast.Alloc:
        # T-Alloc, T-Alloc-Shared; with `@ π'`, T-Alloc-Local-At (our extension)
        return ast.Alloc(str(name), elem, self._nat(size, "alloc size"), mem,
                         ast.Skip(), self._sp(meta), persp)

    def assign(self, meta: Meta, name: Token, value: ast.Expr) -> ast.Assign:  # T-Assn
        return ast.Assign(str(name), value, self._sp(meta))

    def arr_assign(self, meta: Meta, array: ast.Expr, index: ast.Expr,
                   value: ast.Expr) -> ast.ArrAssign:  # T-Arr-Assn(-Shared)
        return ast.ArrAssign(array, index, value, self._sp(meta))

    def if_(self, meta: Meta, cond: ast.Expr, then: ast.Stmt,
            orelse: ast.Stmt | None) -> ast.If:  # T-If
        return ast.If(cond, then, orelse if orelse is not None else ast.Skip(),
                      self._sp(meta))

    def while_(self, meta: Meta, cond: ast.Expr,
               body: ast.Stmt) -> ast.While:  # T-While
        return ast.While(cond, body, self._sp(meta))

    def skip(self, meta: Meta) -> ast.Skip:  # T-Skip
        return ast.Skip(self._sp(meta))

    def split(self, meta: Meta, n1: Token, n2: Token, left: ast.Stmt,
              right: ast.Stmt) -> ast.Split:  # T-Split
        return ast.Split(self._nat(n1, "split size", positive=False),
                         self._nat(n2, "split size", positive=False), left, right,
                         self._sp(meta))

    def group(self, meta: Meta, q: Token, body: ast.Stmt) -> ast.Group:  # T-Group
        return ast.Group(self._nat(q, "group size"), body, self._sp(meta))

    def destruct(self, meta: Meta, body: ast.Stmt) -> ast.Destruct:  # T-Destruct
        return ast.Destruct(body, self._sp(meta))

    def partition(self, meta: Meta, label: str | None, x: Token, y: Token, c: Token,
                  offset: ast.Expr | None, body: ast.Stmt) -> ast.Partition:
        # T-Partition; with `at e`, T-Partition-Offset (our extension, errata)
        return ast.Partition(label, str(x), str(y), self._nat(c, "partition factor"),
                             body, self._sp(meta), offset)

    def claim(self, meta: Meta, label: str | None, x: Token, y: Token, at: Token,
              body: ast.Stmt) -> ast.Claim:  # T-Claim
        return ast.Claim(label, str(x), str(y),
                         self._nat(at, "claim size", positive=False), body,
                         self._sp(meta))

    def lower(self, meta: Meta, label: str | None, x: Token, y: Token,
              body: ast.Stmt) -> ast.Lower:  # T-Lower
        return ast.Lower(label, str(x), str(y), body, self._sp(meta))

    def async_partition(self, meta: Meta, label: str | None, x: Token, y: Token,
                        body: ast.Stmt) -> ast.AsyncPartition:  # T-Async-Partition
        return ast.AsyncPartition(label, str(x), str(y), body, self._sp(meta))

    def async_memcpy(self, meta: Meta, x: Token,
                     y: Token) -> ast.AsyncMemcpy:  # T-Async-Memcpy
        return ast.AsyncMemcpy(str(x), str(y), self._sp(meta))

    def memcpy(self, meta: Meta, x: Token, y: Token) -> ast.Memcpy:  # T-Memcpy
        return ast.Memcpy(str(x), str(y), self._sp(meta))

    def sync_init(self, meta: Meta,
                  name: Token) -> ast.SyncInit:  # T-Sync-Init (runtime form)
        return ast.SyncInit(str(name), self._sp(meta))

    def sync_dec(self, meta: Meta,
                 name: Token) -> ast.SyncDec:  # T-Sync-Dec (runtime form)
        return ast.SyncDec(str(name), self._sp(meta))

    def sync_wait(self, meta: Meta,
                  name: Token) -> ast.SyncWait:  # T-Sync-Wait (runtime form)
        return ast.SyncWait(str(name), self._sp(meta))

    def free(self, meta: Meta, n: Token) -> ast.Free:  # T-Free (runtime form)
        return ast.Free(self._nat(n, "free amount", positive=False), self._sp(meta))

    def call(self, meta: Meta, name: Token,
             *args: ast.Expr | None) -> ast.Call:  # T-Function-Call
        given = tuple(a for a in args if a is not None)
        return ast.Call(str(name), given, self._sp(meta))

    # expressions -------------------------------------------------------------
    def int_lit(self, meta: Meta, tok: Token) -> ast.IntLit:  # T-Int
        span = _tok_span(self.file, tok)
        value = check_int_literal(str(tok), span)
        if value > INT32_MAX + 1:
            self._bad(span, f"int literal out of range: {value} does not fit int32")
        lit = ast.IntLit(value, span)
        self._bare.add(id(lit))
        if value == INT32_MAX + 1:
            self._int_overflow[id(lit)] = lit
        return lit

    def float_lit(self, meta: Meta, tok: Token) -> ast.FloatLit:  # T-Float
        span = _tok_span(self.file, tok)
        value = float32_of(str(tok))
        if not math.isfinite(value):
            self._bad(span, f"float literal out of range: {tok} overflows float32")
        lit = ast.FloatLit(value, span)
        self._bare.add(id(lit))
        return lit

    def true(self, meta: Meta) -> ast.BoolLit:  # T-Bool
        return ast.BoolLit(True, self._sp(meta))

    def false(self, meta: Meta) -> ast.BoolLit:  # T-Bool
        return ast.BoolLit(False, self._sp(meta))

    def partition_id(self, meta: Meta) -> ast.PartitionId:  # T-Partition-Id
        return ast.PartitionId(self._sp(meta))

    # T-Fma (extension: explicit fused multiply-add)
    def fma(self, meta: Meta, a: ast.Expr, b: ast.Expr, c: ast.Expr) -> ast.Fma:
        return ast.Fma(a, b, c, self._sp(meta))

    def var(self, meta: Meta, name: Token) -> ast.Var:  # T-Var
        return ast.Var(str(name), self._sp(meta))

    def index(self, meta: Meta, array: ast.Expr,
              idx: ast.Expr) -> ast.Index:  # T-Arr-Access(-Shared)
        return ast.Index(array, idx, self._sp(meta))

    def paren(self, meta: Meta, inner: ast.Expr) -> ast.Expr:
        self._bare.discard(id(inner))  # `-(1)` stays a negation
        return inner

    def bin_op(self, meta: Meta, left: ast.Expr, op: str,
               right: ast.Expr) -> ast.BinOp:  # T-Bop, T-Cmp
        return ast.BinOp(op, left, right, self._sp(meta))

    def neg(self, meta: Meta, operand: ast.Expr) -> Signed:
        span = self._sp(meta)
        if id(operand) in self._bare:  # a bare literal: fold the sign into it
            self._bare.discard(id(operand))
            self._int_overflow.pop(id(operand), None)
            if isinstance(operand, ast.IntLit):
                return ast.IntLit(-operand.value, span)
            return ast.FloatLit(-cast(ast.FloatLit, operand).value, span)
        return ast.UnOp("-", operand, span)

    def not_(self, meta: Meta, operand: ast.Expr) -> ast.UnOp:
        return ast.UnOp("!", operand, self._sp(meta))

    def or_op(self, meta: Meta, tok: Token) -> str:
        return str(tok)

    and_op = cmp_op = add_op = mul_op = or_op
