"""What a region of the Bundl race analysis (`race_accesses.py`) holds before any
write lands: an allocated region zeros (S-Alloc-Shared / -Global / -Local fill it), a
global what its declaration says (zeros, `iota`, or its literals).

Unwritten-Initial (errata 8g): a read of a global that no statement writes returns
its initial contents, the same term for every thread, wherever and whenever it is
read. Before it, such a read was an uninterpreted function of the cell: the same for
every thread, but not known, so `v[6] = g[8] || x` (g[8] = true) against another
thread's `v[6] = true` was a write-write pair of possibly different values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import z3
from gpusem.calculus.bundl import ast as A
from gpusem.typing_rules.bundl.race_context import f32, rne

Term = Any  # a z3 expression (z3 ships no type information)


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
        return {"bool": addr != _bv(0), "float": z3.fpSignedToFP(rne(), addr, f32())
                }.get(kind, addr)
    cells = [_literal(lit, kind) for lit in g.init]
    out = cells[-1]
    for i in range(len(cells) - 2, -1, -1):
        out = z3.If(addr == _bv(i), cells[i], out)
    return out


def unwritten_initial(prog: A.Program, key: tuple[object, ...]) -> bool:
    """Unwritten-Initial: whether a read of region `key`, which the caller knows no
    statement writes, may be read as its initial contents. Sound for a global with a
    known initialiser (zeros or literals here): no write lands in it, so every read,
    by any thread under any schedule, returns what the declaration put there."""
    if key[0] != "g":
        return False
    g = next(g for g in prog.globals if g.name == key[1])
    # Note: not `iota` (sound too, but a read of A[e] is then e itself: the index
    # arithmetic enters every value check, and z3's count of units for one program
    # varied by a quarter between identical runs, tests/fuzz/test_race_budget.py);
    # such a read stays a function of its cell, the same for every thread
    return known_init(g) and not isinstance(g.init, A.Iota)


def _literal(lit: A.IntLit | A.FloatLit | A.BoolLit, kind: str) -> Term:
    if kind == "bool":
        return z3.BoolVal(bool(lit.value))
    if kind == "float":
        return z3.FPVal(float(np.float32(lit.value)), f32())
    return _bv(int(lit.value))


def zero(kind: str) -> Term:
    return {"bool": z3.BoolVal(False), "float": z3.FPVal(0.0, f32())}.get(kind, _bv(0))
