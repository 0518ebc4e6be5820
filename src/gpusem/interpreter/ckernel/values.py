"""C's arithmetic on CKernel's types, exactly, one thread per array element.

Every function takes NumPy arrays of the operand type and returns the C result (the
type's NumPy dtype): wrapping two's-complement ints of 16, 32 and 64 bits, division and
remainder truncating toward zero, shift amounts masked to the width (as the emitter
writes `a << (b & 31)`), binary32 floats rounded once per operation (NumPy float32
never contracts into FMA), `fminf`/`fmaxf` for float min/max, and the CUDA bit
intrinsics `__popc`, `__clz`, `__brev`. NumPy's own overflow warnings are silenced:
wrapping is the semantics, not an accident.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from gpusem.calculus.ckernel import ast as A

Arr = NDArray[Any]

DTYPES: dict[str, Any] = {
    "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32,
    "i64": np.int64, "u64": np.uint64, "f32": np.float32,
}
UNSIGNED = {"i16": np.uint16, "i32": np.uint32, "i64": np.uint64, "u16": np.uint16,
            "u32": np.uint32, "u64": np.uint64}


def const(ty: str, value: float, n: int) -> Arr:
    if ty == "f32":
        return np.full(n, float(value), dtype=np.float32)
    bits = int(value) & ((1 << A.BITS[ty]) - 1)
    return np.asarray(np.full(n, bits, dtype=UNSIGNED[ty]).astype(DTYPES[ty]))


def binary(op: str, a: Arr, b: Arr, ty: str) -> Arr:
    with np.errstate(all="ignore"):
        match op:
            case "+":
                return np.asarray(a + b)
            case "-":
                return np.asarray(a - b)
            case "*":
                return np.asarray(a * b)
            case "&":
                return np.asarray(a & b)
            case "|":
                return np.asarray(a | b)
            case "^":
                return np.asarray(a ^ b)
            case "<<":
                u = UNSIGNED[ty]
                amount = (b.astype(u) & u(A.BITS[ty] - 1))
                return np.asarray((a.astype(u) << amount).astype(DTYPES[ty]))
            case ">>":  # arithmetic for signed types, as nvcc and g++ define it
                amount = b.astype(a.dtype) & a.dtype.type(A.BITS[ty] - 1)
                return np.asarray(a >> amount)
            case "min":
                return np.asarray(np.fmin(a, b) if ty == "f32" else np.minimum(a, b))
            case "max":
                return np.asarray(np.fmax(a, b) if ty == "f32" else np.maximum(a, b))
            case "<":
                return np.asarray(a < b).astype(np.int32)
            case "<=":
                return np.asarray(a <= b).astype(np.int32)
            case "==":
                return np.asarray(a == b).astype(np.int32)
            case "!=":
                return np.asarray(a != b).astype(np.int32)
    raise ValueError(f"unknown operator: {op}")


def divide(op: str, a: Arr, d: int, ty: str) -> Arr:
    """C99 6.5.5: the quotient truncates toward zero; a == (a / d) * d + a % d. From
    NumPy's floor division and modulo (neither overflows for |d| >= 2 or d == 1)."""
    dv = DTYPES[ty](d)
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, dv)
        r = np.remainder(a, dv)
        if ty in A.SIGNED:
            fix = (r != 0) & ((a < 0) != (d < 0))
            q = np.where(fix, q + DTYPES[ty](1), q)
            r = np.where(fix, r - dv, r)
    return np.asarray((q if op == "/" else r).astype(DTYPES[ty]))


def unary(op: str, a: Arr, ty: str) -> Arr:
    with np.errstate(all="ignore"):
        match op:
            case "neg":
                return np.asarray(-a)
            case "not":
                return np.asarray(~a)
            case "abs":
                return np.asarray(np.abs(a))
            case "popc":
                return np.bitwise_count(a.astype(np.uint32)).astype(np.int32)
            case "clz":
                u = a.astype(np.uint32).astype(np.float64)
                _, exponent = np.frexp(u)  # u = m * 2**e, m in [0.5, 1): e bits
                return (32 - exponent).astype(np.int32)
            case "brev":
                return brev32(a.astype(np.uint32))
    raise ValueError(f"unknown operator: {op}")


def brev32(x: Arr) -> Arr:
    """__brev: swap halves, bytes, nibbles, pairs and bits in turn."""
    x = x.astype(np.uint32)
    for shift, mask in ((1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F),
                        (8, 0x00FF00FF)):
        m = np.uint32(mask)
        x = ((x >> np.uint32(shift)) & m) | ((x & m) << np.uint32(shift))
    return np.asarray((x >> np.uint32(16)) | (x << np.uint32(16)))


def cast(a: Arr, ty: str) -> Arr:
    """C conversions: ints wrap modulo 2^bits (implementation-defined in C for signed
    targets; nvcc and g++ both wrap), ints to float round to nearest."""
    with np.errstate(all="ignore"):
        return np.asarray(a.astype(DTYPES[ty]))


def atomic(op: str, old: Any, values: Arr) -> Any:
    """The final value of one cell after atomics of `op` by every value, in any
    order: the operations commute, so one reduction is every schedule's result."""
    with np.errstate(all="ignore"):
        match op:
            case "add":
                return (old + np.add.reduce(values, dtype=values.dtype)).astype(
                    values.dtype)
            case "min":
                return min(old, values.min())
            case "max":
                return max(old, values.max())
            case "and":
                return old & np.bitwise_and.reduce(values)
            case "or":
                return old | np.bitwise_or.reduce(values)
            case "xor":
                return old ^ np.bitwise_xor.reduce(values)
    raise ValueError(f"unknown atomic: {op}")
