"""GPU IR parser, expressions and arguments: Figure 1 of Exo-GPU (seed 000).

The half of the parse-tree -> AST builder (`calculus.gpuir.parser`) that reads
expressions: control `CExpr`, boolean `BExpr`, data `DExpr` and barrier `ZRead` forms
of Figure 1 with their window coordinates, and the argument forms of statements
(collective units, Figure 11; memory types, Figures 12-14; synchronization timelines;
integer and string literals). `ExprBuilder` holds the scope stack against which every
name is resolved into its Figure 1 form, so the AST never needs a symbol table; the
statement and procedure half (Figure 2) subclasses it. Everything malformed is a
`BadInput` carrying its span.
"""

from __future__ import annotations

import math
from typing import Any, cast

from gpusem.calculus.budgets import check_int_literal
from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.span import Span
from lark import Token, Tree

RESERVED = frozenset({
    "seq", "cuda_tasks", "cuda_threads", "CudaDeviceFunction", "CudaWarps",
    "CudaWarpConfig", "Fence", "Arrive", "Await", "barrier", "size", "index",
})

INT32_MAX = 2**31 - 1

# The kinds of name a scope binds.
CTRL, DATA, BARRIER = "control", "data", "barrier"

# A parse-tree node as the builder meets it: a `Tree`, a `Token`, or `None` for an
# absent optional part (the parser keeps placeholders). Lark types children as
# `Token | Tree[Token]` without the `None`; which one a child is, the grammar says, and
# the builder checks it where the source decides it.
Node = Any


class ExprBuilder:
    """Parse tree -> AST for expressions, resolving names against a stack of scopes."""

    _CBIN = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}
    _DBIN = {"add": "+", "sub": "-", "mul": "*", "div": "/"}

    def __init__(self, file: str):
        self.file = file
        self.scopes: list[dict[str, str]] = []

    # ------------------------------------------------------------- spans, errors
    def span(self, node: Tree[Token] | Token) -> Span:
        if isinstance(node, Token):
            # The tokens of a parse always carry their position (lark: Optional).
            line, column = cast(int, node.line), cast(int, node.column)
            end_line, end_column = cast(int, node.end_line), cast(int, node.end_column)
            return Span(self.file, line, column, end_line, max(end_column - 1, column))
        m = node.meta
        if getattr(m, "empty", True):
            return Span(self.file, 0, 0, 0, 0)
        return Span(self.file, m.line, m.column, m.end_line, max(m.end_column - 1, 1))

    def fail(self, node: Tree[Token] | Token, msg: str) -> BadInput:
        return BadInput(msg, span=self.span(node))

    # ------------------------------------------------------------------ scopes
    def lookup(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def bind(self, tok: Token, kind: str) -> str:
        name = str(tok)
        if name in RESERVED:
            raise self.fail(tok, f"reserved name: {name} cannot be bound")
        if self.lookup(name) is not None:
            raise self.fail(tok, f"shadowing: {name} is already bound in this scope")
        self.scopes[-1][name] = kind
        return name

    # ------------------------------------------------------------ call helpers
    def call_parts(self, t: Node) -> tuple[str, list[Node], dict[str, Node]]:
        if not (isinstance(t, Tree) and t.data == "call"):
            raise self.fail(t, "syntax error: expected a call")
        name, *rest = t.children
        args: list[Node] = []
        kwargs: dict[str, Node] = {}
        for a in rest:
            if a is None:
                continue
            if isinstance(a, Tree) and a.data == "kwarg":
                key, value = a.children
                if str(key) in kwargs:
                    raise self.fail(key, f"duplicate keyword argument: {key}")
                kwargs[str(key)] = value
            elif kwargs:
                raise self.fail(a, "syntax error: positional argument after keyword")
            else:
                args.append(a)
        return str(name), args, kwargs

    def no_extra(self, head: Tree[Token], kwargs: dict[str, Node],
                 allowed: set[str]) -> None:
        for key in kwargs:
            if key not in allowed:
                raise self.fail(head, f"unknown keyword argument: {key}")

    def int_const(self, t: Node) -> int:
        if isinstance(t, Tree) and t.data == "int_lit":
            return self.int_value(cast(Token, t.children[0]))
        if isinstance(t, Tree) and t.data == "neg" and t.children[0].data == "int_lit":
            return self.int_value(cast(Token, t.children[0].children[0]), negative=True)
        raise self.fail(t, "expected an integer literal")

    def int_value(self, tok: Token, negative: bool = False) -> int:
        """An integer literal: a 32-bit int, as the int it is in the generated C++
        (4294967296 would otherwise compile as 0). `-2147483648` is one literal: a
        `-` directly before a literal folds into it, as in Bundl."""
        span = self.span(tok)
        value = check_int_literal(str(tok), span)
        if value > INT32_MAX + (1 if negative else 0):
            sign = "-" if negative else ""
            raise BadInput(f"int literal out of range: {sign}{value} does not fit "
                           "int32", span=span)
        return -value if negative else value

    def float_value(self, tok: Token, negative: bool = False) -> float:
        value = float(str(tok))
        if not math.isfinite(value):
            raise BadInput(f"float literal out of range: {tok} overflows",
                           span=self.span(tok))
        return -value if negative else value

    def string(self, t: Node) -> str:
        if isinstance(t, Tree) and t.data == "str_lit":
            return str(t.children[0])[1:-1]
        raise self.fail(t, 'expected a string literal "..."')

    def tl(self, t: Node) -> str:
        if isinstance(t, Tree) and t.data == "name":
            return str(t.children[0])
        raise self.fail(t, "expected a synchronization timeline name")

    def unit(self, t: Node) -> A.UnitExpr:
        """`[n *] name[(ints)]` (Figure 11)."""
        count = 1
        if isinstance(t, Tree) and t.data == "mul":
            count, t = self.int_const(t.children[0]), t.children[1]
        if isinstance(t, Tree) and t.data == "name":
            return A.UnitExpr(str(t.children[0]), count, (), self.span(t))
        if isinstance(t, Tree) and t.data == "call":
            name, args, kwargs = self.call_parts(t)
            if kwargs:
                raise self.fail(t, "bad unit: no keyword arguments")
            ints = tuple(self.int_const(a) for a in args)
            return A.UnitExpr(name, count, ints, self.span(t))
        raise self.fail(t, "bad unit: expected [n *] cuda_unit")

    def mem(self, t: Node) -> A.MemExpr:
        if isinstance(t, Tree) and t.data == "name":
            return A.MemExpr(str(t.children[0]), (), self.span(t))
        if isinstance(t, Tree) and t.data == "call":
            name, args, kwargs = self.call_parts(t)
            if kwargs:
                raise self.fail(t, "bad memory: no keyword arguments")
            return A.MemExpr(name, tuple(self.int_const(a) for a in args), self.span(t))
        raise self.fail(t, "bad memory: expected a memory type name")

    # -------------------------------------------------------------- expressions
    def require_kind(self, tok: Token, kind: str) -> None:
        found = self.lookup(str(tok))
        if found is None:
            raise self.fail(tok, f"unknown name: {tok}")
        if found != kind:
            raise self.fail(tok, f"bad name: {tok} is a {found} variable, "
                            f"expected a {kind} variable")

    def expr_kind(self, t: Node) -> str:
        """Whether `t` reads data (then it is a data expression) or only control."""
        if isinstance(t, Tree) and t.data in ("name", "index"):
            kind = self.lookup(str(t.children[0]))
            if kind is None:
                raise self.fail(t.children[0], f"unknown name: {t.children[0]}")
            return kind
        if isinstance(t, Tree) and t.data == "float_lit":
            return DATA
        if isinstance(t, Tree) and t.data in ("add", "sub", "mul", "div", "neg",
                                              "paren"):
            kinds = {self.expr_kind(c) for c in t.children}
            return DATA if DATA in kinds else CTRL
        return CTRL

    def cexpr(self, t: Node) -> A.CExpr:
        sp = self.span(t)
        match t.data if isinstance(t, Tree) else None:
            case "int_lit":
                return A.CInt(self.int_value(t.children[0]), sp)
            case "name":
                self.require_kind(t.children[0], CTRL)
                return A.CVar(str(t.children[0]), sp)
            case "neg" if t.children[0].data == "int_lit":
                return A.CInt(self.int_value(t.children[0].children[0], True), sp)
            case "paren":
                return self.cexpr(t.children[0])
            case op if op in self._CBIN:
                lhs, rhs = t.children
                return A.CBin(self._CBIN[op], self.cexpr(lhs), self.cexpr(rhs), sp)
        raise self.fail(t, "bad control expression: expected integers, control "
                        "variables and + - * / %")

    def bexpr(self, t: Node) -> A.BExpr:
        sp = self.span(t)
        match t.data if isinstance(t, Tree) else None:
            case "true_lit" | "false_lit":
                return A.BConst(t.data == "true_lit", sp)
            case "rel":
                lhs, op, rhs = t.children
                return A.BRel(str(op), self.cexpr(lhs), self.cexpr(rhs), sp)
            case "b_and" | "b_or":
                lhs, rhs = t.children
                op = "and" if t.data == "b_and" else "or"
                return A.BLog(op, self.bexpr(lhs), self.bexpr(rhs), sp)
            case "b_not":
                return A.BNot(self.bexpr(t.children[0]), sp)
            case "paren":
                return self.bexpr(t.children[0])
        raise self.fail(t, "bad condition: expected comparisons of control "
                        "expressions joined by and / or / not")

    def dexpr(self, t: Node) -> A.DExpr:
        sp = self.span(t)
        match t.data if isinstance(t, Tree) else None:
            case "int_lit":
                return A.DConst(self.int_value(t.children[0]), sp)
            case "float_lit":
                return A.DConst(self.float_value(t.children[0]), sp)
            case "neg" if t.children[0].data == "int_lit":
                return A.DConst(self.int_value(t.children[0].children[0], True), sp)
            case "neg" if t.children[0].data == "float_lit":
                return A.DConst(self.float_value(t.children[0].children[0], True), sp)
            case "neg":
                return A.DNeg(self.dexpr(t.children[0]), sp)
            case "paren":
                return self.dexpr(t.children[0])
            case "name":
                self.require_kind(t.children[0], DATA)
                return A.DRead(str(t.children[0]), (), sp)
            case "index":
                name, coords = t.children
                self.require_kind(name, DATA)
                return A.DRead(str(name), self.wcoords(coords), sp)
            case op if op in self._DBIN:
                lhs, rhs = t.children
                return A.DBin(self._DBIN[op], self.dexpr(lhs), self.dexpr(rhs), sp)
        raise self.fail(t, "bad data expression: expected literals, reads x[...] "
                        "and + - * /")

    def zread(self, t: Node) -> A.ZRead:
        if isinstance(t, Tree) and t.data in ("name", "index"):
            name = cast(Token, t.children[0])
            self.require_kind(name, BARRIER)
            coords = self.wcoords(t.children[1]) if t.data == "index" else ()
            return A.ZRead(str(name), coords, self.span(t))
        raise self.fail(t, "bad barrier expression: expected z or z[w, ...]")

    def wcoords(self, t: Node) -> tuple[A.WCoord, ...]:
        out: list[A.WCoord] = []
        for c in t.children:
            if isinstance(c, Tree) and c.data == "interval":
                lo, hi = c.children
                out.append(A.WInterval(
                    None if lo is None else self.cexpr(lo),
                    None if hi is None else self.cexpr(hi), self.span(c)))
            else:
                out.append(A.WPoint(self.cexpr(c), self.span(c)))
        return tuple(out)
