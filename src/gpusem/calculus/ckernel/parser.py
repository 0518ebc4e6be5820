"""CKernel's concrete syntax, read (printer.py writes it; parse . print = id).

A hand-written recursive descent over a regular tokenizer: the grammar is LL(1) and an
S-expression core, so a Lark grammar would only add a transformer of the same length.
Every node gets the span of its first token. Malformed text is `BadInput` naming the
file, line and column; types are computed here (the printer writes none for
expressions but literals), so the tree is fully typed; whether the types *agree* is
typing_rules/ckernel's judgment, not the parser's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpusem.calculus.ckernel import ast as A
from gpusem.calculus.errors import BadInput
from gpusem.calculus.span import Span

_TYPE = "|".join(A.TYPES)
_TOKEN = re.compile(
    rf"(?P<ws>\s+|//[^\n]*)"
    rf"|(?P<lit>-?\d+(?:\.\d+)?(?:e[+-]?\d+)?:(?:{_TYPE}))"
    r"|(?P<int>-?\d+)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op><<|>>|<=|==|!=|[-+*&|^<%/(){};,=:])"
)


@dataclass(frozen=True, slots=True)
class Tok:
    kind: str
    text: str
    span: Span


def tokenize(text: str, file: str) -> list[Tok]:
    toks: list[Tok] = []
    pos, line, col = 0, 1, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise BadInput(f"bad character: {text[pos]!r}",
                           span=Span(file, line, col, line, col))
        chunk = m.group()
        if m.lastgroup != "ws":
            toks.append(Tok(m.lastgroup or "", chunk,
                            Span(file, line, col, line, col + len(chunk) - 1)))
        newlines = chunk.count("\n")
        line += newlines
        col = len(chunk) - chunk.rfind("\n") if newlines else col + len(chunk)
        pos = m.end()
    toks.append(Tok("eof", "", Span(file, line, col, line, col)))
    return toks


class _Parser:
    def __init__(self, text: str, file: str) -> None:
        self.toks = tokenize(text, file)
        self.i = 0
        self.types: dict[str, str] = {}  # buffers
        self.scopes: list[dict[str, str]] = []  # locals

    # ------------------------------------------------------------------ tokens
    @property
    def tok(self) -> Tok:
        return self.toks[self.i]

    def fail(self, what: str) -> BadInput:
        t = self.tok
        return BadInput(f"syntax error: expected {what}, got {t.text or 'end of file'!r}",
                        span=t.span)

    def take(self, text: str) -> Tok:
        if self.tok.text != text:
            raise self.fail(repr(text))
        self.i += 1
        return self.toks[self.i - 1]

    def accept(self, text: str) -> bool:
        if self.tok.text == text:
            self.i += 1
            return True
        return False

    def name(self) -> str:
        if self.tok.kind != "name":
            raise self.fail("a name")
        self.i += 1
        return self.toks[self.i - 1].text

    def integer(self) -> int:
        if self.tok.kind != "int":
            raise self.fail("an integer")
        self.i += 1
        return int(self.toks[self.i - 1].text)

    def type_name(self) -> str:
        t = self.tok
        ty = self.name()
        if ty not in A.TYPES:
            raise BadInput(f"unknown type: {ty}", span=t.span)
        return ty

    # ------------------------------------------------------------------ program
    def kernel(self) -> A.Kernel:
        span = self.take("kernel").span
        name = self.name()
        self.take("grid")
        grid = self.integer()
        self.take("block")
        block = self.integer()
        self.take("inputs")
        inputs = self.integer()
        params: list[A.Param] = []
        shared: list[A.Shared] = []
        while self.tok.text in ("param", "shared"):
            t = self.tok
            self.i += 1
            pname = self.name()
            if pname in self.types:
                raise BadInput(f"duplicate buffer: {pname}", span=t.span)
            if t.text == "param":
                mode = self.name()
                if mode not in A.MODES:
                    raise BadInput(f"unknown mode: {mode}", span=t.span)
                params.append(A.Param(pname, mode, self.type_name(), t.span))
                self.types[pname] = params[-1].ty
            else:
                shared.append(A.Shared(pname, self.type_name(), t.span))
                self.types[pname] = shared[-1].ty
        body = self.block()
        if self.tok.kind != "eof":
            raise self.fail("end of file")
        return A.Kernel(name, grid, block, inputs, tuple(params), tuple(shared), body,
                        span)

    def block(self) -> A.Block:
        span = self.take("{").span
        self.scopes.append({})
        stmts: list[A.Stmt] = []
        while not self.accept("}"):
            stmts.append(self.stmt())
        self.scopes.pop()
        return A.Block(tuple(stmts), span)

    def declare(self, name: str, ty: str) -> None:
        self.scopes[-1][name] = ty

    def lookup(self, tok: Tok) -> str:
        for scope in reversed(self.scopes):
            if tok.text in scope:
                return scope[tok.text]
        raise BadInput(f"unknown variable: {tok.text}", span=tok.span)

    def stmt(self) -> A.Stmt:
        t = self.tok
        if self.accept("let"):
            name = self.name()
            self.take(":")
            ty = self.type_name()
            self.take("=")
            e = self.expr()
            self.take(";")
            self.declare(name, ty)
            return A.Let(name, ty, e, t.span)
        if self.accept("store"):
            buf = self.buffer()
            idx = self.index()
            if not isinstance(idx, A.Own):
                raise BadInput("bad store: a store writes an (own N) cell", span=t.span)
            self.take("=")
            e = self.expr()
            self.take(";")
            return A.Store(buf, idx, e, t.span)
        if self.accept("vload"):
            self.take("(")
            names = [self.name()]
            while self.accept(","):
                names.append(self.name())
            self.take(")")
            self.take(":")
            ty = self.type_name()
            self.take("=")
            buf = self.buffer()
            idx = self.index()
            if isinstance(idx, A.Neighbour):
                raise BadInput("bad vector load: index (own N) or (mask e)", span=t.span)
            self.take(";")
            for n in names:
                self.declare(n, ty)
            return A.VecLoad(tuple(names), ty, buf, idx, t.span)
        if self.accept("vstore"):
            buf = self.buffer()
            slot = self.integer()
            self.take("=")
            self.take("(")
            exprs = [self.expr()]
            while self.accept(","):
                exprs.append(self.expr())
            self.take(")")
            self.take(";")
            return A.VecStore(buf, slot, tuple(exprs), t.span)
        if self.accept("if"):
            cond = self.expr()
            then = self.block()
            self.take("else")
            return A.If(cond, then, self.block(), t.span)
        if self.accept("for"):
            var = self.name()
            self.take("in")
            trips = self.integer()
            unroll = self.accept("unroll")
            self.scopes.append({var: "i32"})
            body = self.block()
            self.scopes.pop()
            return A.For(var, trips, unroll, body, t.span)
        if self.accept("sync"):
            self.take(";")
            return A.Sync(t.span)
        if self.accept("atomic"):
            op = self.name()
            if op not in A.ATOMIC_OPS:
                raise BadInput(f"unknown atomic: {op}", span=t.span)
            buf = self.buffer()
            cell = self.integer()
            self.take("=")
            e = self.expr()
            self.take(";")
            return A.Atomic(op, buf, cell, e, t.span)
        if t.kind == "name":
            self.lookup(t)
            self.i += 1
            self.take("=")
            e = self.expr()
            self.take(";")
            return A.Assign(t.text, e, t.span)
        raise self.fail("a statement")

    def buffer(self) -> str:
        t = self.tok
        name = self.name()
        if name not in self.types:
            raise BadInput(f"unknown buffer: {name}", span=t.span)
        return name

    def index(self) -> A.Index:
        t = self.take("(")
        kind = self.name()
        idx: A.Index
        if kind == "own":
            idx = A.Own(self.integer(), t.span)
        elif kind == "mask":
            idx = A.Masked(self.expr(), t.span)
        elif kind == "nbr":
            idx = A.Neighbour(self.integer(), self.integer(), t.span)
        else:
            raise BadInput(f"unknown index form: {kind}", span=t.span)
        self.take(")")
        return idx

    # ------------------------------------------------------------------ expressions
    def expr(self) -> A.Expr:
        t = self.tok
        if t.kind == "lit":
            self.i += 1
            text, ty = t.text.rsplit(":", 1)
            value: int | float = float(text) if ty == "f32" else int(text)
            if ty != "f32" and not re.fullmatch(r"-?\d+", text):
                raise BadInput(f"bad literal: {t.text}", span=t.span)
            return A.Lit(ty, value, t.span)
        if t.kind == "name":
            self.i += 1
            if t.text in A.BUILTINS:
                return A.Builtin(t.text, "i32", t.span)
            return A.Var(t.text, self.lookup(t), t.span)
        self.take("(")
        head = self.tok
        self.i += 1
        e = self.compound(head, t.span)
        self.take(")")
        return e

    def compound(self, head: Tok, span: Span) -> A.Expr:
        op = head.text
        if op in A.UNARY:
            arg = self.expr()
            return A.Unary(op, arg, "i32" if op in ("popc", "clz") else arg.ty, span)
        if op in A.BIN_ARITH or op in A.BIN_COMPARE:
            a = self.expr()
            b = self.expr()
            return A.Binary(op, a, b, "i32" if op in A.BIN_COMPARE else a.ty, span)
        if op in ("/", "%"):
            a = self.expr()
            return A.DivC(op, a, self.integer(), a.ty, span)
        if op == "cast":
            ty = self.type_name()
            return A.Cast(ty, self.expr(), span)
        if op == "sel":
            c, a, b = self.expr(), self.expr(), self.expr()
            return A.Select(c, a, b, a.ty, span)
        if op in ("load", "ldg"):
            buf = self.buffer()
            return A.Load(buf, self.index(), op == "ldg", self.types[buf], span)
        if op == "psel":
            c = self.expr()
            ba, bb = self.buffer(), self.buffer()
            return A.PtrSelect(c, ba, bb, self.index(), self.types[ba], span)
        if op in ("shfl", "shflx"):
            v = self.expr()
            return A.Shfl(op == "shflx", v, self.integer(), v.ty, span)
        raise BadInput(f"unknown operator: {op}", span=head.span)


def parse_kernel(text: str, file: str = "<string>") -> A.Kernel:
    """The kernel `text` denotes; BadInput (one line, file:line:col) when malformed."""
    return _Parser(text, file).kernel()
