"""Pass `lower_code_perspectives`: destruct / group / split -> index arithmetic + guards.

Each construct introduces the thread's new perspective id p as a `const int`, exactly as
the S- rules compute it, and every `KPerspId` below it becomes that variable:
  S-Destruct-Grid   (Grid, 1)  -> (Block, B):  p = blockIdx.x      (b mod B)
  S-Destruct-Block  (Block, 1) -> (Thread, T): p = threadIdx.x     (t mod T)
  S-Group           (h, q·n)   -> (h, n):      p = p mod n
  S-Split-Left/Right (h, n)    -> (h, n1) if p < n1, else (h, n2) at p - n1 if p < n1+n2
A kernel starts at (Grid, 1) with p = 0 (S-Program); a device function receives its
caller's p as the parameter `gs_p`.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import count

from gpusem.calculus.bundl.ast import BaseType
from gpusem.calculus.bundl.perspective import Level
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.faults import active
from gpusem.compiler.bundl_cuda.paths import note
from gpusem.compiler.bundl_cuda.traverse import map_bodies, map_stmt_exprs

INT = BaseType.INT


def index_text(p: K.KExpr) -> str:
    """C text of a perspective id (a variable, a constant or a builtin)."""
    match p:
        case K.KVar(name):
            return name
        case K.KConst(value):
            return str(value)
        case K.KBuiltin(name):
            return f"(int){name}"
    raise AssertionError(f"perspective id {p!r} is not atomic")


class _Lowerer:
    def __init__(self) -> None:
        self.ids = count(1)

    def fresh(self) -> str:
        return f"p{next(self.ids)}"

    def stmts(self, stmts: tuple, p: K.KExpr) -> tuple:
        out: list = []
        for s in stmts:
            out.extend(self.stmt(s, p))
        return tuple(out)

    def stmt(self, s: K.KStmt, p: K.KExpr) -> tuple:
        s = map_stmt_exprs(s, lambda e: p if isinstance(e, K.KPerspId) else None)
        match s:
            case K.KDestruct(outer, body, span):
                builtin = "blockIdx.x" if outer.level == Level.GRID else "threadIdx.x"
                rule = "S-Destruct-Grid" if outer.level == Level.GRID else "S-Destruct-Block"
                note("compile:lower_code:destruct " + outer.level.keyword)
                return self._scope(K.KBuiltin(builtin), body, span, f"destruct ({rule})")
            case K.KGroup(q, inner, body, span):
                # Index arithmetic on ids in [0, n): plain C, no overflow possible.
                note("compile:lower_code:group")
                modulus = q if active("group-modulus") else inner.n
                value = (K.KConst(0, INT) if modulus == 1
                         else K.KRaw(f"{index_text(p)} % {modulus}"))
                return self._scope(value, body, span, f"group {q} (S-Group)")
            case K.KSplit(n1, n2, left, right, span):
                note("compile:lower_code:split")
                return (self._split(p, n1, n2, left, right, span),)
        return (map_bodies(s, lambda b: self.stmts(b, p)),)

    def _scope(self, value: K.KExpr, body: tuple, span, why: str) -> tuple:
        name = self.fresh()
        inner = self.stmts(body, K.KVar(name))
        return (K.KBlock((K.KComment(why, span), K.KDecl(name, "const int", value, span),
                          *inner), span),)

    def _split(self, p, n1, n2, left, right, span) -> K.KIf:
        left_body = self.stmts(left, p)  # S-Split-Left keeps p
        name = self.fresh()
        shift = n1 - 1 if active("split-offset-off-by-one") else n1
        shifted = K.KDecl(name, "const int", K.KRaw(f"{index_text(p)} - {shift}"), span)
        right_body = (shifted, *self.stmts(right, K.KVar(name)))  # S-Split-Right: p - n1
        in_right = K.KRaw(f"{index_text(p)} < {n1 + n2}")
        right_if = K.KIf(in_right, right_body, (), span) if right else None
        return K.KIf(K.KRaw(f"{index_text(p)} < {n1}"), left_body,
                     (right_if,) if right_if else (), span)


def lower_code_perspectives(prog: K.KProgram) -> K.KProgram:
    def per_function(f: K.KFunction) -> K.KFunction:
        start = K.KConst(0, INT) if f.is_kernel else K.KVar("gs_p")
        return replace(f, body=_Lowerer().stmts(f.body, start))

    return replace(prog, functions=tuple(per_function(f) for f in prog.functions))
