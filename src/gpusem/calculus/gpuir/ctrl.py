"""Control and boolean expressions of GPU IR (Figure 1) evaluated in an environment
σ : 𝕐 -> ℤ (C-Int, C-Read, C-Aff, B-Const, B-Log, B-Rel of Figure 6), plus the
affine normal form the analyses use to reason about window extents and indices.

Integers are Python ints (or NumPy integer arrays, so the sequential evaluator can
run many loop iterations at once) wrapped to 32 bits after every operation, as the
int control values of the generated CUDA C++; `/` and `%` truncate toward zero as in
C. (The affine normal form below is exact: the analyses reason about sizes that fit.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Mapping, Union, cast, overload

import numpy as np
import numpy.typing as npt
from gpusem.calculus.errors import BadInput, Trap
from gpusem.calculus.gpuir.ast import (
    BConst,
    BExpr,
    BLog,
    BNot,
    BRel,
    CBin,
    CExpr,
    CInt,
    CVar,
)

Env = Mapping[str, object]  # name -> int or np.ndarray of ints
IntArray = npt.NDArray[np.integer[Any]]
CValue = Union[int, IntArray]  # a control value: an int, or one per vectorised lane
BValue = Union[bool, npt.NDArray[np.bool_]]


@overload
def cdiv(a: int, b: int) -> int: ...
@overload
def cdiv(a: IntArray, b: CValue) -> IntArray: ...
@overload
def cdiv(a: CValue, b: IntArray) -> IntArray: ...
@overload
def cdiv(a: CValue, b: CValue) -> CValue: ...
def cdiv(a: CValue, b: CValue) -> CValue:
    """C's truncating division (also on NumPy arrays)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        q = np.abs(a) // np.abs(b)
        return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q)
    n = abs(a) // abs(b)
    return -n if (a < 0) != (b < 0) else n


@overload
def cmod(a: int, b: int) -> int: ...
@overload
def cmod(a: CValue, b: CValue) -> CValue: ...
def cmod(a: CValue, b: CValue) -> CValue:
    """C's remainder: sign of the dividend."""
    return a - b * cdiv(a, b)


@overload
def wrap32(x: int) -> int: ...
@overload
def wrap32(x: CValue) -> CValue: ...
def wrap32(x: CValue) -> CValue:
    """Two's-complement wrap to int32 (control values are 32-bit ints in CUDA C++)."""
    return ((x + 2**31) % 2**32) - 2**31


@overload
def eval_c(c: CExpr, env: Mapping[str, int]) -> int: ...
@overload
def eval_c(c: CExpr, env: Env) -> CValue: ...
def eval_c(c: CExpr, env: Env) -> CValue:
    """⟨c, σ⟩ ⇓_ℤ n, with 32-bit wrapping arithmetic as in the generated C++."""
    match c:
        case CInt(value=v):  # C-Int
            return wrap32(v)
        case CVar(name=n):  # C-Read
            if n not in env:
                raise BadInput(f"missing definition: {n} has no value "
                               f"(pass -D {n}=...)", span=c.span)
            return cast(CValue, env[n])
        case CBin(op=op, lhs=l, rhs=r):  # C-Aff
            a, b = eval_c(l, env), eval_c(r, env)
            match op:
                case "+":
                    return wrap32(a + b)
                case "-":
                    return wrap32(a - b)
                case "*":
                    return wrap32(a * b)
                case "/" | "%":
                    if (b == 0) if isinstance(b, int) else np.any(np.asarray(b) == 0):
                        raise Trap(f"division by zero: {op} in a control expression",
                                   rule="C-Aff", span=c.span)
                    return wrap32(cdiv(a, b) if op == "/" else cmod(a, b))
    raise AssertionError(f"not a control expression: {c!r}")


def compile_c(c: CExpr) -> Callable[[Env], CValue]:
    """`eval_c(c, ·)` as a closure over c's tree: the same value (ints or NumPy
    lanes, wrapped after every operation) and the same error (a missing definition,
    a division by zero: raised where eval_c raises, left operand first).

    Note: the sequential reading evaluates the index expressions of every scalar
    read and write; re-matching their trees was most of its time (a fused GEMM's
    reading at N = 256: eval_c 94 of 138 profiled seconds, 2.9 M calls)."""
    match c:
        case CInt(value=v):
            k = wrap32(v)
            return lambda env: k
        case CVar(name=n):
            def read(env: Env) -> CValue:
                if n not in env:
                    raise BadInput(f"missing definition: {n} has no value "
                                   f"(pass -D {n}=...)", span=c.span)
                return env[n]  # type: ignore[return-value]
            return read
        case CBin(op=op, lhs=lhs, rhs=rhs):
            f, g = compile_c(lhs), compile_c(rhs)
            # wrap32 written out: a call a node was a third of the closures' time
            match op:
                case "+":
                    return lambda env: (f(env) + g(env) + 2**31) % 2**32 - 2**31
                case "-":
                    return lambda env: (f(env) - g(env) + 2**31) % 2**32 - 2**31
                case "*":
                    return lambda env: (f(env) * g(env) + 2**31) % 2**32 - 2**31
                case "/" | "%":
                    def div(env: Env) -> CValue:
                        a, b = f(env), g(env)
                        if (b == 0) if isinstance(b, int) else \
                                np.any(np.asarray(b) == 0):
                            raise Trap(f"division by zero: {op} in a control "
                                       "expression", rule="C-Aff", span=c.span)
                        return wrap32(cdiv(a, b) if op == "/" else cmod(a, b))
                    return div
    raise AssertionError(f"not a control expression: {c!r}")


@overload
def eval_b(b: BExpr, env: Mapping[str, int]) -> bool: ...
@overload
def eval_b(b: BExpr, env: Env) -> BValue: ...
def eval_b(b: BExpr, env: Env) -> BValue:
    """⟨b, σ⟩ ⇓ t."""
    match b:
        case BConst(value=v):  # B-Const
            return v
        case BLog(op=op, lhs=l, rhs=r):  # B-Log
            x, y = eval_b(l, env), eval_b(r, env)
            return (x & y) if op == "and" else (x | y)
        case BNot(arg=a):
            x = eval_b(a, env)
            return ~x if isinstance(x, np.ndarray) else not x
        case BRel(op=op, lhs=l, rhs=r):  # B-Rel
            cx, cy = eval_c(l, env), eval_c(r, env)
            return {"==": cx == cy, "!=": cx != cy, "<": cx < cy, "<=": cx <= cy,
                    ">": cx > cy, ">=": cx >= cy}[op]
    raise AssertionError(f"not a boolean expression: {b!r}")


def cvars(c: CExpr) -> frozenset[str]:
    """The control variables `c` reads."""
    match c:
        case CInt():
            return frozenset()
        case CVar(name=n):
            return frozenset({n})
        case CBin(lhs=l, rhs=r):
            return cvars(l) | cvars(r)
    raise AssertionError(c)


def bvars(b: BExpr) -> frozenset[str]:
    match b:
        case BConst():
            return frozenset()
        case BLog(lhs=l, rhs=r):
            return bvars(l) | bvars(r)
        case BNot(arg=a):
            return bvars(a)
        case BRel(lhs=l, rhs=r):
            return cvars(l) | cvars(r)
    raise AssertionError(b)


@dataclass(frozen=True, slots=True)
class Affine:
    """const + Σ coeffs[y] * y."""

    const: int
    coeffs: tuple[tuple[str, int], ...]  # sorted, no zero coefficients

    def coeff(self, name: str) -> int:
        return dict(self.coeffs).get(name, 0)

    @property
    def is_const(self) -> bool:
        return not self.coeffs


def _mk(const: int, coeffs: dict[str, int]) -> Affine:
    return Affine(const, tuple(sorted((k, v) for k, v in coeffs.items() if v)))


def affine(c: CExpr, consts: Env = {}, opaque: bool = False) -> Affine | None:
    """The affine form of `c` with the names in `consts` replaced by their values, or
    None when `c` is only quasi-affine (reads a variable under / or %). With `opaque`,
    such subterms become atoms instead (keyed `#` + their text), enough to see that
    `t % 2 * 4 + 4` and `t % 2 * 4` differ by 4; never use atoms to bound a range."""
    match c:
        case CInt(value=v):
            return _mk(v, {})
        case CVar(name=n):
            if n in consts and isinstance(consts[n], int):
                return _mk(cast(int, consts[n]), {})
            return _mk(0, {n: 1})
        case CBin(op=op, lhs=l, rhs=r):
            a, b = affine(l, consts, opaque), affine(r, consts, opaque)
            if a is None or b is None:
                return None
            da, db = dict(a.coeffs), dict(b.coeffs)
            match op:
                case "+" | "-":
                    s = 1 if op == "+" else -1
                    keys = set(da) | set(db)
                    return _mk(a.const + s * b.const,
                               {k: da.get(k, 0) + s * db.get(k, 0) for k in keys})
                case "*" if a.is_const or b.is_const:
                    k, other = (a.const, b) if a.is_const else (b.const, a)
                    return _mk(k * other.const, {n: k * v for n, v in other.coeffs})
                case "/" | "%" if a.is_const and b.is_const and b.const != 0:
                    f = cdiv if op == "/" else cmod
                    return _mk(f(a.const, b.const), {})
            if opaque:
                from gpusem.calculus.gpuir.printer import print_cexpr

                return _mk(0, {"#" + print_cexpr(c): 1})
            return None
    raise AssertionError(c)
