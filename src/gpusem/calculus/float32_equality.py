"""When a compiled run's float32 result is the reference's (errata L13), for every
comparator of the project: bit for bit (so -0.0 differs from 0.0), except that every
NaN equals every NaN. IEEE 754-2019 6.3 leaves the sign of an operation's NaN open
and 6.2.3 makes payload propagation a "should": x86 (numpy, g++) makes 0xffc00000
for 0/0 or sqrt(-5), the GPU 0x7fffffff, and no calculus here reads a NaN's bits."""

from __future__ import annotations

import numpy as np


def same_float32(want: float, got: float) -> bool:
    """One cell."""
    w, g = np.float32(want), np.float32(got)
    return bool(np.isnan(w) and np.isnan(g)) or w.tobytes() == g.tobytes()


def differing_float32(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Per cell of two float32 arrays of one shape: True where they differ."""
    return np.asarray((want.view(np.uint32) != got.view(np.uint32))
                      & ~(np.isnan(want) & np.isnan(got)))
