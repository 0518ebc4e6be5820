"""Thread code (gexp, 5.4) -> CUDA C++ statements: what one GPU thread of a SOAC runs,
a thunk at one index (IDX-THUNK) with its `let`s, `if`s, primitives and subscripts.

Conventions: the thread's environment V -> `Scope` (lambda-cu name -> C name and
base type); a thunk's results are assigned to C variables the caller declared
(`outs`). Every binder gets a fresh C name, so a `let` that shadows reads the outer
value in its right-hand side, as GPU-LET does.

Note: the primitives are overloaded C++ functions (lambdacu_rt.cuh, `lc_<op>`), so
only binders need types; `infer` reads them off signatures.py as the checker does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import assert_never

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.signatures import prim_result
from gpusem.calculus.lambdacu.values import (
    F32,
    I32,
    Arr,
    ArrayT,
    Base,
    Bool,
    Char,
    Type,
)

C_BASE = {"int": "int", "float": "float", "bool": "bool", "char": "char"}


def c_type(t: Type) -> str:
    """The host and device C++ type of a lambda-cu type."""
    if isinstance(t, Base):
        return C_BASE[t.name]
    if isinstance(t, ArrayT):
        return f"Arr<{C_BASE[t.elem]}>"
    return "std::tuple<" + ", ".join(c_type(x) for x in t.items) + ">"


def c_scalar(v: I32 | F32 | Bool | Char) -> str:
    if isinstance(v, Bool):
        return "true" if v.value else "false"
    if isinstance(v, Char):
        return f"(char){v.value}"
    if isinstance(v, I32):
        return "(-2147483647 - 1)" if v.value == -(2**31) else str(v.value)
    if math.isfinite(v.value):
        return f"{v.value.hex()}f"  # exact: a hex float literal
    return f"lc_f(0x{_bits(v.value):08x}u)"


def _bits(x: float) -> int:
    import numpy as np

    return int(np.float32(x).view(np.uint32))


def c_literal(v: object) -> str:
    if isinstance(v, Arr):
        if not v.items:
            return f"lc_empty<{C_BASE[v.elem]}>()"
        items = ", ".join(c_scalar(x) for x in v.items)
        return f"lc_lit<{C_BASE[v.elem]}>({items})"
    assert isinstance(v, (I32, F32, Bool, Char))
    return c_scalar(v)


@dataclass
class Scope:
    """V: lambda-cu name -> (C name, type); `fresh` numbers the C names."""

    names: dict[str, tuple[str, Type]]
    fresh: list[int] = field(default_factory=lambda: [0])

    def bind(self, name: str, t: Type, prefix: str = "g") -> tuple[Scope, str]:
        self.fresh[0] += 1
        c = f"{prefix}{self.fresh[0]}_{name}"
        return Scope({**self.names, name: (c, t)}, self.fresh), c

    def temp(self, what: str) -> str:
        """A fresh C name that no lambda-cu name can reach (the compiler's own)."""
        self.fresh[0] += 1
        return f"t{self.fresh[0]}_{what}"

    def atom(self, a: ast.Atom) -> str:
        if isinstance(a, ast.Lit):
            return c_literal(a.value)
        return self.names[a.name][0]

    def type_of(self, a: ast.Atom) -> Type:
        if isinstance(a, ast.Lit):
            v = a.value
            return ArrayT(v.elem) if isinstance(v, Arr) else Base(v.base)
        return self.names[a.name][1]


def infer(g: ast.GExp, sc: Scope) -> tuple[Base, ...]:
    """The base types a thread expression returns (the checker admitted it)."""
    match g:
        case ast.GLet(names, rhs, body):
            inner = sc
            for name, t in zip(names, infer(rhs, sc), strict=True):
                inner, _ = inner.bind(name, t)
            return infer(body, inner)
        case ast.GPrim(op, args):
            if op == "len":
                return (Base("int"),)
            ts = tuple(sc.type_of(a) for a in args)
            out = prim_result(op, tuple(t for t in ts if isinstance(t, Base)))
            assert out is not None, f"no overload of {op}"
            return (out,)
        case ast.GIf(_, then, _):
            return infer(then, sc)
        case ast.GRet(atoms):
            return tuple(_base(sc.type_of(a)) for a in atoms)
        case ast.GSub(array, _):
            arr_t = sc.names[array][1]
            assert isinstance(arr_t, ArrayT)
            return (Base(arr_t.elem),)
        case ast.GAtom(a):
            return (_base(sc.type_of(a)),)
        case _:
            assert_never(g)


def _base(t: Type) -> Base:
    assert isinstance(t, Base), "a thread returns scalars"
    return t


def emit_g(g: ast.GExp, sc: Scope, outs: tuple[str, ...], pad: str,
           lines: list[str]) -> None:
    """Statements that evaluate `g` (-->g to its final form) and assign its results
    to `outs`."""
    match g:
        case ast.GLet(names, rhs, body):  # GPU-LET
            tys = infer(rhs, sc)
            inner, cs = sc, []
            for name, t in zip(names, tys, strict=True):
                inner, c = inner.bind(name, t)
                cs.append(c)
                lines.append(f"{pad}{c_type(t)} {c};")
            emit_g(rhs, sc, tuple(cs), pad, lines)
            emit_g(body, inner, outs, pad, lines)
        case ast.GIf(cond, then, else_):  # GPU-IF-TRUE, GPU-IF-FALSE
            lines.append(f"{pad}if ({sc.atom(cond)}) {{")
            emit_g(then, sc, outs, pad + "  ", lines)
            lines.append(f"{pad}}} else {{")
            emit_g(else_, sc, outs, pad + "  ", lines)
            lines.append(f"{pad}}}")
        case ast.GPrim(op, args):  # GPU-PRIM
            lines.append(f"{pad}{outs[0]} = {prim_call(op, args, sc)};")
        case ast.GSub(array, index):  # GPU-SUBSCRIPT (a bounds trap)
            lines.append(f"{pad}{outs[0]} = lc_at({sc.names[array][0]}, "
                         f"{sc.atom(index)});")
        case ast.GRet(atoms):
            for o, a in zip(outs, atoms, strict=True):
                lines.append(f"{pad}{o} = {sc.atom(a)};")
        case ast.GAtom(a):
            lines.append(f"{pad}{outs[0]} = {sc.atom(a)};")
        case _:
            assert_never(g)


def prim_call(op: str, args: tuple[ast.Atom, ...], sc: Scope) -> str:
    return f"lc_{op}(" + ", ".join(sc.atom(a) for a in args) + ")"
