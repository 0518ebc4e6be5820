"""What a region of the Bundl race analysis (`race_accesses.py`) holds before any
write lands: an allocated region zeros (S-Alloc-Shared / -Global / -Local fill it), a
global what its declaration says (zeros, `iota`, or its literals).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import z3
from gpusem.calculus.bundl import ast as A

Term = Any  # a z3 expression (z3 ships no type information)
_F32 = z3.Float32()
_RNE = z3.RNE()  # float32 rounding, as race_accesses' arithmetic


def _bv(v: int) -> Term:
    return z3.BitVecVal(v & 0xFFFFFFFF, 32)


def known_init(g: A.GlobalDecl) -> bool:
    """Whether the analysis can read `g`'s initial contents: zeros, iota, or literals
    of the element's own kind (a literal another kind converts is left unknown)."""
    if g.init is None:
        return True
    if isinstance(g.init, A.Iota):  # float32 holds every int up to 2^24 exactly
        return g.elem.value != "float" or g.size <= 1 << 24
    want = {"int": A.IntLit, "float": A.FloatLit, "bool": A.BoolLit}.get(g.elem.value)
    return want is not None and all(type(lit) is want for lit in g.init)


def initial(prog: A.Program, key: tuple[object, ...], addr: Term, kind: str) -> Term:
    """Cell `addr` of region `key` as it starts: an allocated region holds zeros
    (S-Alloc-*), a global what its declaration says (the caller checks
    `known_init`)."""
    if key[0] != "g":
        return zero(kind)
    g = next(g for g in prog.globals if g.name == key[1])
    if g.init is None:
        return zero(kind)
    if isinstance(g.init, A.Iota):
        return {"bool": addr != _bv(0), "float": z3.fpSignedToFP(_RNE, addr, _F32)
                }.get(kind, addr)
    cells = [_literal(lit, kind) for lit in g.init]
    out = cells[-1]
    for i in range(len(cells) - 2, -1, -1):
        out = z3.If(addr == _bv(i), cells[i], out)
    return out


def _literal(lit: A.IntLit | A.FloatLit | A.BoolLit, kind: str) -> Term:
    if kind == "bool":
        return z3.BoolVal(bool(lit.value))
    if kind == "float":
        return z3.FPVal(float(np.float32(lit.value)), _F32)
    return _bv(int(lit.value))


def zero(kind: str) -> Term:
    return {"bool": z3.BoolVal(False), "float": z3.FPVal(0.0, _F32)}.get(kind, _bv(0))
