"""The primitive rules Sec 6.2 omits ("correspond directly to operators built into the
C++ language"), and the reduction operators of 5.3: C's meaning, exactly.

Ints wrap at 32 bits (two's complement, as CUDA's integer units do); `div` and `mod`
truncate toward zero (C99); a zero divisor and INT_MIN / -1 (undefined in C) are traps,
as are shifts by less than 0 or more than 31, `f2i` of a NaN or of a value outside
int32, and `chr` outside ASCII. Floats are binary32, each operation rounded once
(numpy.float32; no FMA contraction); `min`/`max` on floats are C's fminf/fmaxf (a NaN
operand loses), with -0.0 below +0.0 (`_min_max`). `sqrt` is correctly rounded; `exp`
and `log` are numpy's float32 functions (Note: CUDA's expf/logf may differ by an ulp;
a compiler comparison must allow it, as the other backends' comparisons of
transcendental functions do).

`apply_prim` raises `PrimTrap` (the caller names the rule, GPU-PRIM or CPU-PRIM, the
span and the element) and `PrimMismatch` when no overload fits (the caller's Stuck).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gpusem.calculus.lambdacu.values import (
    F32,
    I32,
    INT32_MAX,
    INT32_MIN,
    Arr,
    Bool,
    Char,
    Scalar,
    f32,
    wrap32,
)


class PrimTrap(Exception):
    """A primitive the C semantics leaves undefined: division by zero, ..."""


class PrimMismatch(Exception):
    """No overload of the primitive takes these values."""


FloatOp = Callable[[np.float32, np.float32], np.float32]


def _fl(op: FloatOp) -> Callable[[float, float], F32]:
    def run(a: float, b: float) -> F32:
        with np.errstate(all="ignore"):
            return F32(float(op(np.float32(a), np.float32(b))))
    return run


def _min_max(op: str) -> Callable[[float, float], F32]:
    """fminf / fmaxf: a NaN operand loses; on +0.0 and -0.0 (equal: C leaves the
    sign of the result open) -0.0 is the smaller (IEEE 754-2019 minimumNumber).
    Note (errata L13): written out, not numpy's fmin, whose answer for two zeros is
    its SIMD instruction's (x86 minps: the second operand), as glibc's fminf
    (the first) and CUDA's min.f32 give their own."""
    def run(a: float, b: float) -> F32:
        if math.isnan(a):
            return F32(b)
        if math.isnan(b):
            return F32(a)
        if a == b:
            a_neg = math.copysign(1.0, a) < 0
            return F32(a if a_neg == (op == "min") else b)
        return F32(min(a, b) if op == "min" else max(a, b))
    return run


_F_BIN = {"add": _fl(lambda a, b: a + b), "sub": _fl(lambda a, b: a - b),
          "mul": _fl(lambda a, b: a * b), "div": _fl(lambda a, b: a / b),
          "min": _min_max("min"), "max": _min_max("max")}
_CMP: dict[str, Callable[[float, float], bool]] = {
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


def _idiv(op: str, a: int, b: int) -> I32:
    if b == 0:
        raise PrimTrap(f"division by zero: {op} {a} 0")
    if a == INT32_MIN and b == -1:
        raise PrimTrap(f"division overflow: {op} {a} -1 (undefined in C)")
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # toward zero
    return I32(q) if op == "div" else I32(a - q * b)


def _int_bin(op: str, a: int, b: int) -> Scalar:
    if op in ("div", "mod"):
        return _idiv(op, a, b)
    if op in ("shl", "shr"):
        if not 0 <= b <= 31:
            raise PrimTrap(f"shift out of range: {op} {a} {b} (C: undefined)")
        return wrap32(a << b) if op == "shl" else I32(a >> b)
    if op in _CMP:
        return Bool(_CMP[op](a, b))
    table = {"add": a + b, "sub": a - b, "mul": a * b, "min": min(a, b),
             "max": max(a, b), "and": a & b, "or": a | b, "xor": a ^ b}
    if op not in table:
        raise PrimMismatch(op)
    return wrap32(table[op])


def _binary(op: str, x: Scalar, y: Scalar) -> Scalar:
    if isinstance(x, I32) and isinstance(y, I32):
        return _int_bin(op, x.value, y.value)
    if isinstance(x, F32) and isinstance(y, F32):
        if op in _CMP:
            return Bool(_CMP[op](x.value, y.value))
        if op in _F_BIN:
            return _F_BIN[op](x.value, y.value)
    if isinstance(x, Char) and isinstance(y, Char) and op in _CMP:
        return Bool(_CMP[op](x.value, y.value))
    if isinstance(x, Bool) and isinstance(y, Bool):
        table = {"and": x.value and y.value, "or": x.value or y.value,
                 "xor": x.value != y.value, "eq": x.value == y.value,
                 "ne": x.value != y.value}
        if op in table:
            return Bool(table[op])
    raise PrimMismatch(op)


def _f2i(x: float) -> I32:
    if not math.isfinite(x) or not INT32_MIN <= math.trunc(x) <= INT32_MAX:
        raise PrimTrap(f"conversion out of range: f2i {x} (C: undefined)")
    return I32(math.trunc(x))


def _unary(op: str, x: Scalar) -> Scalar:
    if isinstance(x, I32):
        table = {"neg": -x.value, "abs": abs(x.value), "not": ~x.value}
        if op in table:
            return wrap32(table[op])
        if op == "i2f":
            return f32(float(x.value))
        if op == "chr":
            if not 0 <= x.value <= 127:
                raise PrimTrap(f"char out of range: chr {x.value}")
            return Char(x.value)
    if isinstance(x, F32):
        with np.errstate(all="ignore"):
            fns = {"neg": np.negative, "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp,
                   "log": np.log}
            if op in fns:
                return F32(float(fns[op](np.float32(x.value))))
        if op == "f2i":
            return _f2i(x.value)
    if isinstance(x, Bool) and op == "not":
        return Bool(not x.value)
    if isinstance(x, Char) and op == "ord":
        return I32(x.value)
    raise PrimMismatch(op)


def apply_prim(op: str, args: tuple[Scalar | Arr, ...]) -> Scalar:
    """primitive rules |- prim_op v1, .., vn = vout."""
    if op == "len" and len(args) == 1 and isinstance(args[0], Arr):
        return I32(len(args[0]))
    if any(isinstance(a, Arr) for a in args):
        raise PrimMismatch(op)
    scalars = tuple(a for a in args if not isinstance(a, Arr))
    if len(scalars) == 1:
        return _unary(op, scalars[0])
    if len(scalars) == 2:
        return _binary(op, scalars[0], scalars[1])
    raise PrimMismatch(op)


_ROP_PRIM = {"iadd": "add", "imul": "mul", "imax": "max", "imin": "min", "iand": "and",
             "ior": "or", "ixor": "xor", "fadd": "add", "fmul": "mul", "fmax": "max",
             "fmin": "min", "band": "and", "bor": "or", "bxor": "xor"}


def apply_rop(rop: str, x: Scalar, y: Scalar) -> Scalar:
    """The monoid operation of a reduction operator (5.3) on two values of its type."""
    want = {"i": I32, "f": F32, "b": Bool}[rop[0]]
    if not (isinstance(x, want) and isinstance(y, want)):
        raise PrimMismatch(rop)
    return _binary(_ROP_PRIM[rop], x, y)
