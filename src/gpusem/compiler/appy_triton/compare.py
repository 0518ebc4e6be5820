"""Dtype-aware comparison of a compiled run's arrays with the sequential reading.

Tolerance (issue 7): integers exact; floats within `FLOAT_ULPS` units in the last place
of the array's scale `max(1, max|expected|)`. Measuring ulps at the array's scale, not
per cell, admits the reassociation a parallel reduction or an FMA-free float64 constant
(appyc types float literals as float64) may cause, while any wrong index, lost update or
skipped tail shows as an error of the order of the data itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FLOAT_ULPS = 256  # float32: 256 ulp of 1.0 = 3.1e-5 relative to the array's scale


@dataclass(frozen=True)
class Mismatch:
    array: str
    cell: tuple[int, ...]
    expected: float | int | str
    actual: float | int | str
    max_error: float
    tolerance: float

    def describe(self) -> str:
        return (f"{self.array}{list(self.cell)}: expected {self.expected}, got "
                f"{self.actual} (max error {self.max_error:.3g}, tolerance "
                f"{self.tolerance:.3g})")


def tolerance(expected: np.ndarray) -> float:
    if not np.issubdtype(expected.dtype, np.floating):
        return 0.0
    finite = expected[np.isfinite(expected)]
    scale = max(1.0, float(np.max(np.abs(finite)))) if finite.size else 1.0
    return FLOAT_ULPS * float(np.finfo(expected.dtype).eps) * scale


def compare_outputs(expected: dict[str, np.ndarray],
                    actual: dict[str, np.ndarray]) -> Mismatch | None:
    """The first mismatching cell over all arrays (in sorted name order), or None."""
    for name in sorted(expected):
        e = expected[name]
        if name not in actual:
            return Mismatch(name, (), "array", "missing", float("inf"), 0.0)
        a = actual[name]
        if a.shape != e.shape or a.dtype != e.dtype:
            return Mismatch(name, (), f"{e.dtype}{list(e.shape)}",
                            f"{a.dtype}{list(a.shape)}", float("inf"), 0.0)
        mm = _compare_array(name, e, a)
        if mm is not None:
            return mm
    return None


def _compare_array(name: str, e: np.ndarray, a: np.ndarray) -> Mismatch | None:
    tol = tolerance(e)
    if np.issubdtype(e.dtype, np.floating):
        both_nan = np.isnan(e) & np.isnan(a)
        same_inf = np.isinf(e) & (e == a)
        with np.errstate(all="ignore"):
            err = np.abs(e.astype(np.float64) - a.astype(np.float64))
        bad = ~(both_nan | same_inf) & ~(err <= tol)
        err = np.where(bad, err, 0.0)
    else:
        err = np.abs(e.astype(np.int64) - a.astype(np.int64)).astype(np.float64)
        bad = e != a
    if not bad.any():
        return None
    cell = tuple(int(i) for i in np.argwhere(bad)[0])
    max_err = float(np.nanmax(np.where(np.isnan(err), np.inf, err)))
    return Mismatch(name, cell, e[cell].item(), a[cell].item(), max_err, tol)
