"""AMIR parser: the printed form (calculus.amir.printer) -> `calculus.amir.ast`.

Lark (LALR, `amir.lark`, Python layout via `Indenter`) builds a parse tree whose simple
statements are calls by name; `_Builder` checks each call's arity and argument kinds
against Figure 4 and builds the node. Everything malformed is a `BadInput` whose
one-line message starts `file:line:col:`.

Hand-written AMIR has no GPU IR behind it, so each statement's `origin` is its own
span: a rejection then points at the `.amir` lines of both conflicting accesses.

Note: whether an access names a barrier (e_z#) or data (e_d#) is decided by position
(Arrive / Await / CheckBarrier arguments and the barrier set of a Record*) or, anywhere
else, by the name having an `Alloc(z[...], barrier)` somewhere in the procedure.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Union, cast

from gpusem.calculus.amir import ast as A
from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as G
from gpusem.calculus.grammar_cache import cached_lark
from gpusem.calculus.gpuir.timelines import VL, QualTL
from gpusem.calculus.span import Span
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput
from lark.indenter import Indenter

# A parse-tree node as the builder meets it: a `Tree`, a `Token`, or `None` for an
# absent optional part (the parser keeps placeholders). Lark types children as
# `Token | Tree[Token]` without the `None`; which one a child is, the grammar says, and
# the builder checks it where the source decides it.
Node = Any

# A statement argument, by kind (see _SIGNATURES): VL, bool, access, QualTL, QualTL set,
# barrier access set, integer.
ArgValue = Union[VL, bool, A.Access, QualTL, frozenset[QualTL], tuple[A.Access, ...], int]


class _AmirIndenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


@functools.cache
def _lark() -> Lark:
    grammar = (Path(__file__).parent / "amir.lark").read_text()
    return cached_lark(grammar, "amir", parser="lalr", postlex=_AmirIndenter(),
                propagate_positions=True, maybe_placeholders=True)


def parse_procs(source: str, file: str = "<string>") -> tuple[A.AProc, ...]:
    if not source.endswith("\n"):
        source += "\n"
    try:
        tree = _lark().parse(source)
    except UnexpectedInput as err:
        line, col = getattr(err, "line", 0), getattr(err, "column", 0)
        first = str(err).strip().splitlines()[0] if str(err).strip() else "syntax"
        raise BadInput(f"{file}:{line}:{col}: syntax error: {first}") from None
    return tuple(_Builder(file, p).proc(p) for p in tree.children)


def parse_proc(source: str, file: str = "<string>") -> A.AProc:
    procs = parse_procs(source, file)
    if len(procs) != 1:
        raise BadInput(f"{file}: expected one AMIR procedure, found {len(procs)}")
    return procs[0]


def parse_file(path: str) -> A.AProc:
    from gpusem.calculus.source import read_source

    return parse_proc(read_source(path), path)


# (parameter kinds per statement: v=VL, b=bool, a=access, z=barrier access,
#  q=QualTL, Q=QualTL set, Z=barrier access set, n=integer; `threads` allowed?)
_SIGNATURES: dict[str, tuple[str, bool]] = {
    "IncTaskID": ("", False),
    "Free": ("a", False),
    "RecordRead": ("vbaqQZ", True),
    "RecordMutate": ("vbaqQZ", True),
    "ClearReads": ("a", False),
    "ClearMutates": ("a", False),
    "Fence": ("bQQQ", True),
    "Arrive": ("bQZ", True),
    "Await": ("zQQn", True),
    "CheckReads": ("vbaQ", True),
    "CheckMutates": ("vbaQ", True),
    "CheckBarrier": ("z", False),
}


class _Builder:
    def __init__(self, file: str, proc_tree: Node):
        self.file = file
        self.barriers = self._barrier_names(proc_tree)

    @staticmethod
    def _barrier_names(proc_tree: Node) -> set[str]:
        names: set[str] = set()
        for t in proc_tree.iter_subtrees():
            if t.data != "simple" or str(t.children[0]) != "Alloc":
                continue
            args = [a for a in t.children[1:-1] if a is not None]
            if len(args) == 2 and _is_name(args[1], "barrier"):
                names.add(_head_name(args[0]))
        return names

    def span(self, node: Tree[Token] | Token) -> Span:
        if isinstance(node, Token):
            # The tokens of a parse always carry their position (lark: Optional).
            return Span(self.file, cast(int, node.line), cast(int, node.column),
                        cast(int, node.end_line), cast(int, node.end_column))
        m = node.meta
        if getattr(m, "empty", True):
            return Span(self.file, 0, 0, 0, 0)
        return Span(self.file, m.line, m.column, m.end_line, m.end_column)

    def fail(self, node: Tree[Token] | Token, msg: str) -> BadInput:
        sp = self.span(node)
        return BadInput(f"{sp}: {msg}", span=sp)

    # ------------------------------------------------------------------ structure

    def proc(self, t: Node) -> A.AProc:
        name, *rest = t.children
        params = tuple(str(p) for p in rest[:-1] if p is not None)
        return A.AProc(str(name), params, self.suite(rest[-1]), span=self.span(t))

    def suite(self, t: Node) -> tuple[A.AStmt, ...]:
        return tuple(s for c in t.children if (s := self.stmt(c)) is not None)

    def stmt(self, t: Node) -> A.AStmt | None:
        sp = self.span(t)
        match t.data:
            case "pass_":
                return None
            case "loop":
                var, lo, hi, body = t.children
                return A.Loop(str(var), self.cexpr(lo), self.cexpr(hi),
                              self.suite(body), origin=sp, span=sp)
            case "guard":
                cond, body = t.children
                return A.Guard(self.bexpr(cond), self.suite(body), origin=sp, span=sp)
            case "simple":
                return self.simple(t)
        raise self.fail(t, f"unknown statement form: {t.data}")

    def simple(self, t: Node) -> A.AStmt:
        head, *args, th = t.children
        name = str(head)
        args = [a for a in args if a is not None]
        sp = self.span(t)
        if name == "Alloc":
            return self.alloc(t, args, th)
        if name not in _SIGNATURES:
            raise self.fail(head, f"unknown AMIR statement: {name}")
        kinds, takes_threads = _SIGNATURES[name]
        if len(args) != len(kinds):
            raise self.fail(t, f"arity: {name} takes {len(kinds)} arguments, "
                               f"got {len(args)}")
        if th is not None and not takes_threads:
            raise self.fail(th, f"thread mapping: {name} takes no thread mapping")
        vals = [self.arg(k, a) for k, a in zip(kinds, args)]
        extra: dict[str, Span | A.ThreadMap] = {"origin": sp, "span": sp}
        if takes_threads:
            extra["threads"] = self.threads(th) if th is not None else A.THREAD0
        cls: Callable[..., A.AStmt] = getattr(A, name)
        if name == "Free":
            return A.Free(cast(A.Access, vals[0]).name, origin=sp, span=sp)
        return cls(*vals, **extra)

    def alloc(self, t: Node, args: list[Node], th: Node) -> A.Alloc:
        sp = self.span(t)
        if th is not None or not 1 <= len(args) <= 2:
            raise self.fail(t, "arity: Alloc(x[c, ...]) or Alloc(z[c, ...], barrier)")
        barrier = len(args) == 2
        if barrier and not _is_name(args[1], "barrier"):
            raise self.fail(args[1], "alloc: second argument must be `barrier`")
        target = args[0]
        if isinstance(target, Token) or target.data not in ("name", "index"):
            raise self.fail(target, "alloc: expected x[c, ...]")
        name = str(target.children[0])
        shape: tuple[G.CExpr, ...] = ()
        if target.data == "index":
            coords = target.children[1].children
            if any(isinstance(c, Tree) and c.data == "interval" for c in coords):
                raise self.fail(target, "alloc: extents must be points")
            shape = tuple(self.cexpr(c) for c in coords)
        return A.Alloc(name, shape, barrier, origin=sp, span=sp)

    # ------------------------------------------------------------------ arguments

    def arg(self, kind: str, t: Node) -> ArgValue:
        match kind:
            case "v":
                try:
                    return VL.parse(self.word(t))
                except ValueError as err:
                    raise self.fail(t, str(err)) from None
            case "b":
                word = self.word(t)
                if word not in ("true", "false"):
                    raise self.fail(t, f"expected true or false, got {word}")
                return word == "true"
            case "a" | "z":
                return self.access(t, kind == "z")
            case "q":
                return self.qual(t)
            case "Q":
                return frozenset(self.qual(q) for q in self.set_items(t))
            case "Z":
                return tuple(self.access(z, True) for z in self.set_items(t))
            case "n":
                c = self.cexpr(t)
                if not isinstance(c, G.CInt):
                    raise self.fail(t, "expected an integer literal")
                return c.value
        raise AssertionError(kind)

    def word(self, t: Node) -> str:
        if isinstance(t, Tree) and t.data == "name":
            return str(t.children[0])
        raise self.fail(t, "expected a name")

    def qual(self, t: Node) -> QualTL:
        try:
            return QualTL.parse(self.word(t))
        except ValueError as err:
            raise self.fail(t, str(err)) from None

    def set_items(self, t: Node) -> list[Node]:
        if not (isinstance(t, Tree) and t.data == "set_"):
            raise self.fail(t, "expected a set {...}")
        return [c for c in t.children if c is not None]

    def access(self, t: Node, barrier: bool) -> A.Access:
        if not (isinstance(t, Tree) and t.data in ("name", "index")):
            raise self.fail(t, "expected an access x[w, ...]")
        name = str(t.children[0])
        coords = tuple(self.wcoord(c) for c in t.children[1].children) \
            if t.data == "index" else ()
        return A.Access(name, coords, barrier or name in self.barriers,
                        span=self.span(t))

    def wcoord(self, t: Node) -> G.WCoord:
        sp = self.span(t)
        if isinstance(t, Tree) and t.data == "interval":
            lo, hi = t.children
            return G.WInterval(None if lo is None else self.cexpr(lo),
                               None if hi is None else self.cexpr(hi), span=sp)
        return G.WPoint(self.cexpr(t), span=sp)

    def threads(self, t: Node) -> A.ThreadMap:
        if t.data == "cpu":
            return A.CPU
        dims = []
        for r in t.children:
            start, count, stride = r.children
            dims.append(A.ThreadRange(self.cexpr(start),
                                      1 if count is None else int(count),
                                      1 if stride is None else int(stride)))
        return A.ThreadMap(tuple(dims))

    # ---------------------------------------------------------------- expressions

    _COPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}

    def cexpr(self, t: Node) -> G.CExpr:
        sp = self.span(t)
        kind = t.data if isinstance(t, Tree) else None
        if kind == "int_lit":
            return G.CInt(int(t.children[0]), span=sp)
        if kind == "name":
            return G.CVar(str(t.children[0]), span=sp)
        if kind in self._COPS:
            a, b = t.children
            return G.CBin(self._COPS[kind], self.cexpr(a), self.cexpr(b), span=sp)
        if kind == "neg":
            inner = self.cexpr(t.children[0])
            if isinstance(inner, G.CInt):
                return G.CInt(-inner.value, span=sp)
            return G.CBin("-", G.CInt(0), inner, span=sp)
        raise self.fail(t, "expected a control expression")

    def bexpr(self, t: Node) -> G.BExpr:
        sp = self.span(t)
        kind = t.data if isinstance(t, Tree) else None
        if kind == "name" and str(t.children[0]) in ("True", "False", "true", "false"):
            return G.BConst(str(t.children[0]) in ("True", "true"), span=sp)
        if kind == "rel":
            a, op, b = t.children
            return G.BRel(str(op), self.cexpr(a), self.cexpr(b), span=sp)
        if kind in ("b_and", "b_or"):
            a, b = t.children
            return G.BLog(kind[2:], self.bexpr(a), self.bexpr(b), span=sp)
        if kind == "b_not":
            return G.BNot(self.bexpr(t.children[0]), span=sp)
        raise self.fail(t, "expected a boolean expression")


def _is_name(t: Node, word: str) -> bool:
    return isinstance(t, Tree) and t.data == "name" and str(t.children[0]) == word


def _head_name(t: Node) -> str:
    return str(t.children[0]) if isinstance(t, Tree) else str(t)
