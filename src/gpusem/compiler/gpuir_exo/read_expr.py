"""The expressions of an Exo proc as GPU IR text (compiler/gpuir_exo/read.py reads the
statements): names bound by the test's metaprogramming fold to their values, the proc's
own names stay (renamed where GPU IR forbids shadowing), windows become coordinates;
and `Unreadable`, what a construct GPU IR cannot express raises."""

from __future__ import annotations

import ast
from typing import Any

from gpusem.compiler.gpuir_exo.dialect import SYNC_TL_FROM_EXO
from gpusem.compiler.gpuir_exo.read_env import Sym, evaluate


class Unreadable(Exception):
    """A construct GPU IR cannot express (or the reader does not map)."""

    def __init__(self, what: str, node: ast.AST | None = None):
        self.line = getattr(node, "lineno", 0)
        super().__init__(f"line {self.line}: {what}" if self.line else what)


COMPARE_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
               ast.GtE: ">="}


class ExprReader:
    """Expression translation, mixed into the statement reader: needs `env` (the
    test's bindings), `local` (the proc's own names) and `renames`."""

    env: dict[str, Any]
    local: set[str]
    renames: dict[str, str]

    def _mentions_local(self, t: ast.expr) -> bool:
        return any(isinstance(n, ast.Name) and n.id in self.local for n in ast.walk(t))

    def sync_tl(self, node: ast.expr) -> str:
        v = evaluate(node, self.env)
        if not isinstance(v, Sym):
            raise Unreadable(f"sync timeline {ast.unparse(node)}", node)
        return SYNC_TL_FROM_EXO.get(v.name, v.name)

    # ------------------------------------------------------------ expressions
    def cexpr(self, node: ast.expr) -> str:
        return self.expr(node, control=True)

    def dexpr(self, node: ast.expr) -> str:
        return self.expr(node, control=False)

    def bexpr(self, node: ast.expr) -> str:
        return self.expr(node, control=True)

    def folded(self, node: ast.expr) -> str:
        """A constant expression as a literal: the `simplify(...)` Exo's tests apply
        to procs whose cuda_threads bounds are written as sums."""
        if isinstance(node, ast.BinOp | ast.UnaryOp) and not self._mentions_local(node):
            v = evaluate(node, self.env)
            if isinstance(v, int) and not isinstance(v, bool):
                return str(v) if v >= 0 else f"-({-v})"
        return self.cexpr(node)

    def expr(self, node: ast.expr, control: bool) -> str:
        match node:
            case ast.Constant(value=bool() as b):
                return "True" if b else "False"
            case ast.Constant(value=int() | float() as v):
                return repr(v)
            case ast.Name(id=n) if n in self.local:
                return self.renames.get(n, n)
            case ast.Name(id=n):
                v = self.env.get(n, Sym(n))
                if isinstance(v, bool):
                    return "True" if v else "False"
                if isinstance(v, int | float):
                    return repr(v)
                raise Unreadable(f"name {n} = {v!r} in an expression", node)
            case ast.BinOp(left=l, op=op, right=r):
                sym = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/",
                       ast.FloorDiv: "/", ast.Mod: "%"}.get(type(op))
                if isinstance(op, ast.MatMult):
                    raise Unreadable("a ring-buffer dimension `n @ ring_buffer_by(d)` "
                                     "(endgame)", node)
                if sym is None:
                    raise Unreadable(f"operator {type(op).__name__}", node)
                return f"({self.expr(l, control)} {sym} {self.expr(r, control)})"
            case ast.UnaryOp(op=ast.USub(), operand=x):
                return f"-({self.expr(x, control)})"
            case ast.UnaryOp(op=ast.Not(), operand=x):
                return f"not ({self.expr(x, control)})"
            case ast.BoolOp(op=op, values=vs):
                j = " and " if isinstance(op, ast.And) else " or "
                return "(" + j.join(self.expr(x, control) for x in vs) + ")"
            case ast.Compare(left=l, ops=[op], comparators=[r]):
                sym = COMPARE_OPS.get(type(op))
                if sym is None:
                    raise Unreadable(f"comparison {type(op).__name__}", node)
                return f"{self.expr(l, control)} {sym} {self.expr(r, control)}"
            case ast.Subscript(value=ast.Name(id=n), slice=sl) if n in self.local:
                dims = sl.elts if isinstance(sl, ast.Tuple) else [sl]
                n = self.renames.get(n, n)
                return f"{n}[{', '.join(self.coord(x) for x in dims)}]"
        raise Unreadable(f"expression {ast.unparse(node)[:60]}", node)

    def coord(self, node: ast.expr) -> str:
        if isinstance(node, ast.Slice):
            if node.step is not None:
                raise Unreadable("a window with a step", node)
            lo = "" if node.lower is None else self.cexpr(node.lower)
            hi = "" if node.upper is None else self.cexpr(node.upper)
            return f"{lo}:{hi}"
        return self.cexpr(node)
