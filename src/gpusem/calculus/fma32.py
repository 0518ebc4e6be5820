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
        return _fma_exact_product(a.astype(np.float64) * b.astype(np.float64), c)


def _fma_exact_product(p: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32(p + c) rounded once, p the EXACT binary64 product of two float32s
    (step 1 above), c float32; steps 2 and 3. The caller holds np.errstate."""
    c64 = c.astype(np.float64)
    s = p + c64
    bb = s - p
    e = (p - (s - bb)) + (c64 - bb)
    even = (s.view(np.int64) & 1) == 0
    bump = np.isfinite(p) & np.isfinite(c64) & (e != 0.0) & even
    if bump.any():
        s = np.where(bump, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return s.astype(F32)


# Below this bound every partial sum of integers is an integer float32 holds exactly
# (all integers of magnitude <= 2^24 are float32s).
_EXACT_BOUND = float(2**24)


def _integer_mma(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """The fused mma in one matrix product when no step can round, else None.

    When a, b and c hold finite integers and |c| + |a| @ |b| <= 2^24 element-wise,
    every exact partial sum c + sum_{j<=k} a[m, j] b[j, n] is an integer of
    magnitude <= 2^24: a float32, so each fma step's single rounding is the identity
    and the k-ordered loop's result is the exact sum, which a binary64 matmul gives
    in any order (its partial sums are integers < 2^53). A zero's sign: an RNE sum
    is -0 only from -0 + -0, so with no -0 in c no step is ever -0, and neither is
    c + (a @ b); a -0 in c takes the loop. The Cypress examples' data (integers in
    [-3, 3]) always land here; floats with fractions (tests/cypress/test_fused_mma's
    "any floats") always take the loop."""
    # one check over all three (a leaf is called ~16,000 times in a 256 GEMM's
    # reading: the NumPy calls' overhead, not their work, is the cost)
    if not _small_integers(np.concatenate((a.ravel(), b.ravel(), c.ravel()))):
        return None
    c64 = c.astype(np.float64)
    if np.any((c64 == 0) & np.signbit(c64)):
        return None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if not np.all(np.abs(c64) + np.abs(a64) @ np.abs(b64) <= _EXACT_BOUND):
        return None
    return (c64 + a64 @ b64).astype(F32)


def _small_integers(x: np.ndarray) -> bool:
    """Every element finite, integer-valued and of magnitude <= 2^24."""
    return bool(np.all(np.abs(x) <= _EXACT_BOUND) and np.all(np.trunc(x) == x))


def mma_fused(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C (M x N) after c = fma(a[m, k], b[k, n], c) for k ascending, every step one
    correctly rounded float32 fma; all M x N elements at once per k (NumPy). The
    meaning of the Cypress leaf `mma_fma` and, with B transposed, of GPU IR's
    `Sm90_wgmma_m64nNk8_f32_fma` (errata "Extension: fused mma").

    Integer data where no step rounds take one matrix product (`_integer_mma`, the
    same bits; tests/cypress/test_fused_mma.py checks it against the loop): the
    Cypress reading of a fused GEMM spent most of its time in this loop."""
    acc = np.asarray(c, np.float32)
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    fast = _integer_mma(acc, a32, b32)
    if fast is not None:
        return fast
    with np.errstate(all="ignore"):
        # the casts once, not once a k: a float32 product is exact in binary64
        a64, b64 = a32.astype(np.float64), b32.astype(np.float64)
        for k in range(a32.shape[1]):
            acc = _fma_exact_product(a64[:, k, None] * b64[None, k, :], acc)
    return acc
