"""The inputs of a CKernel program: every parameter's initial contents, a function of
the kernel's `inputs` seed alone (so a program's text fixes its whole run).

Read-only parameters hold small values (signed -100..100, unsigned 0..200, floats
quarter steps in -25..25), so a guard such as `(< 100:i32 (ldg x0 ...))` is false for
every thread: dead code the inputs never reach (equivalence modulo inputs). Written
parameters start with values that include the extremes (INT_MIN, INT_MAX, -1, 0) so
wrapping arithmetic is exercised. Atomic cells start at 0 (add, or, xor), or at the
identity of min/max does not matter: the reduction includes the start value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from gpusem.calculus.ckernel import ast as A

RO_LIMIT = 100  # |value| of a read-only signed cell never exceeds this
DTYPES: dict[str, Any] = {
    "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32,
    "i64": np.int64, "u64": np.uint64, "f32": np.float32,
}


def _ints(rng: np.random.Generator, ty: str, n: int, extremes: bool) -> NDArray[Any]:
    dtype = np.dtype(DTYPES[ty])
    lo = 0 if ty not in A.SIGNED else -RO_LIMIT
    small = rng.integers(lo, lo + 2 * RO_LIMIT + 1, size=n).astype(dtype)
    if not extremes:
        return small
    info = np.iinfo(dtype)
    special = np.array([info.min, info.max, 0, 1], dtype=dtype)
    if ty in A.SIGNED:
        special = np.append(special, dtype.type(-1))
    wide = rng.integers(info.min, int(info.max) + 1, size=n, dtype=dtype,
                        endpoint=False)
    pick = rng.integers(0, 8, size=n)
    out = np.where(pick == 0, special[rng.integers(0, special.size, size=n)], small)
    return np.asarray(np.where(pick == 1, wide, out).astype(dtype))


def initial_memory(k: A.Kernel) -> dict[str, NDArray[Any]]:
    rng = np.random.default_rng(k.inputs)
    mem: dict[str, NDArray[Any]] = {}
    for p in k.params:
        n = k.size_of(p.name)
        if p.mode == "atomic":
            mem[p.name] = np.zeros(n, dtype=DTYPES[p.ty])
        elif p.ty == "f32":
            quarters = rng.integers(-4 * 25, 4 * 25 + 1, size=n)
            mem[p.name] = (quarters / 4).astype(np.float32)
        else:
            mem[p.name] = _ints(rng, p.ty, n, extremes=p.mode != "ro")
    return mem
