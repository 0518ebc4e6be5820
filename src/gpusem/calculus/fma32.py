"""Correctly rounded binary32 fused multiply-add: fma(a, b, c) = a * b + c rounded ONCE
to nearest-even (IEEE 754 fusedMultiplyAdd), the meaning of Bundl's explicit
`fma(a, b, c)` (an extension; errata, "Extension: explicit fma"), in every evaluator,
of Cypress's `mma_fma` leaf and of GPU IR's `Sm90_wgmma_m64nNk8_f32_fma` (errata,
"Extension: fused mma"). Here, in calculus/, because GPU IR's instruction behaviours
(calculus/gpuir/instructions.py) are the reference meaning and sit in this stage.

Python 3.11 has no `math.fma` (3.13+) and NumPy none at all, so it is computed in
binary64 with round-to-odd (Boldo & Melquiond, "Emulation of FMA and correctly rounded
sums: proved algorithms using rounding to odd", IEEE TC 2008):

  1. p = a * b is EXACT in binary64: 24 + 24 significant bits <= 53, and
     2^-298 <= |p| < 2^256 lies in binary64's normal range (or p is 0, inf or nan).
  2. s = p + c rounded to ODD at 53 bits: the RNE sum s and its exact error e (TwoSum,
     exact since nothing overflows: |p + c| < 2^257); when e != 0 and s's last bit is
     even, the odd neighbour on e's side is the round-to-odd value.
  3. float32(s), round-to-nearest-even: rounding to odd at p' = 53 >= 24 + 2 bits and
     then to nearest at 24 bits equals rounding the exact value to nearest at 24 bits
     (their Theorem 3), subnormal float32 results included (fewer bits still).

Non-finite operands take the plain binary64 value (inf and nan propagate as IEEE
says: inf * 0 = nan, inf + -inf = nan); signed zeros come out right because binary64
RNE addition gives the same zero sign as binary32 RNE would (+0 unless both -0).
"""

from __future__ import annotations

import math

import numpy as np

F32 = np.float32


def fma32(a: np.float32 | float, b: np.float32 | float,
          c: np.float32 | float) -> np.float32:
    """fma of three float32 scalars, correctly rounded (scalar path, small-step)."""
    p = float(a) * float(b)
    cc = float(c)
    s = p + cc
    if math.isfinite(p) and math.isfinite(cc):
        bb = s - p
        e = (p - (s - bb)) + (cc - bb)  # TwoSum: p + c == s + e exactly
        if e != 0.0 and not _odd(s):
            s = math.nextafter(s, math.inf if e > 0 else -math.inf)
    with np.errstate(all="ignore"):
        return F32(s)


def _odd(x: float) -> bool:
    return bool(np.float64(x).view(np.int64) & 1)


def fma32_vec(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Element-wise fma of float32 arrays, correctly rounded (big-step lockstep)."""
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)
        c64 = c.astype(np.float64)
        s = p + c64
        bb = s - p
        e = (p - (s - bb)) + (c64 - bb)
        even = (s.view(np.int64) & 1) == 0
        bump = np.isfinite(p) & np.isfinite(c64) & (e != 0.0) & even
        if bump.any():
            s = np.where(bump, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
        return s.astype(F32)


def mma_fused(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C (M x N) after c = fma(a[m, k], b[k, n], c) for k ascending, every step one
    correctly rounded float32 fma; all M x N elements at once per k (NumPy). The
    meaning of the Cypress leaf `mma_fma` and, with B transposed, of GPU IR's
    `Sm90_wgmma_m64nNk8_f32_fma` (errata "Extension: fused mma")."""
    acc = np.asarray(c, np.float32)
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    for k in range(a32.shape[1]):
        acc = fma32_vec(a32[:, k, None], b32[None, k, :], acc)
    return acc
