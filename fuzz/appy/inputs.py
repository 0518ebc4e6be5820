"""Input specifications in file headers: `# inputs: A=float32[4,8] N=8 R=int32[5]:csr`.

Used by the conformance runner (tests/appy) and the listings report. Data are
quarter-integers (exact in every float type) from a fixed seed; `:csr` makes row starts
with two non-zeros per row, `:colK` column indices `i % K` (for spmv)."""

from __future__ import annotations

import re

import numpy as np


def make_inputs(spec: str, seed: int = 0):
    """`A=float32[4,8] N=8 R=int32[5]:csr` -> arrays, scalars (quarter-integer data)."""
    rng = np.random.default_rng(seed)
    arrays, scalars = {}, {}
    for item in spec.split():
        name, _, rhs = item.partition("=")
        m = re.fullmatch(r"(\w+)\[([\d,]+)\](?::(\w+))?", rhs)
        if m is None:
            scalars[name] = int(rhs)
            continue
        dtype, shape = m[1], tuple(int(x) for x in m[2].split(","))
        gen = m[3] or ""
        data: np.ndarray
        if gen == "csr":  # row starts with two non-zeros per row
            data = np.arange(shape[0]) * 2
        elif gen.startswith("col"):
            data = np.arange(shape[0]) % int(gen[3:])
        else:
            raw = rng.integers(-8, 9, size=shape)
            data = raw / 4 if dtype.startswith("float") else raw
        arrays[name] = np.asarray(data, dtype=dtype).reshape(shape)
    return arrays, scalars
