"""Input specifications in APPy file headers: `# inputs: A=float32[4,8] N=8 R=int32[5]:csr`.

The one reader of the header that `gpusem check`/`run`/`exec` on a `.py` file, the
conformance runner (tests/appy) and the listings report use. Data are quarter-integers
(exact in every float type) from a fixed seed; `:csr` makes row starts with two
non-zeros per row, `:colK` column indices `i % K` (for spmv). A scalar is an integer or
a float (`alpha=1.5`)."""

from __future__ import annotations

import math
import re

import numpy as np
from gpusem.calculus.budgets import check_int_literal
from gpusem.calculus.errors import BadInput

_ARRAY = re.compile(r"(\w+)\[([0-9,]+)\](?::(\w+))?")
DTYPES = ("float32", "float64", "int32", "int64")
MAX_ELEMENTS = 1 << 24  # an input larger than this is a typo, not a test


def header_inputs(text: str) -> str | None:
    """The spec of the file's `# inputs:` header, or None."""
    m = re.search(r"^# inputs: (.*)$", text, re.MULTILINE)
    return m[1].strip() if m else None


def make_inputs(spec: str, seed: int = 0) -> tuple[dict[str, np.ndarray],
                                                   dict[str, int | float]]:
    """`A=float32[4,8] N=8 R=int32[5]:csr` -> arrays, scalars (quarter-integer data);
    BadInput naming the item that is malformed."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, int | float] = {}
    for item in spec.split():
        name, eq, rhs = item.partition("=")
        if not eq or not name.isidentifier():
            raise BadInput(f"bad inputs: '{item}' (expected NAME=VALUE or "
                           "NAME=dtype[shape])")
        m = _ARRAY.fullmatch(rhs)
        if m is None:
            scalars[name] = _scalar(item, rhs)
            continue
        dtype = m[1]
        shape = tuple(check_int_literal(x) for x in m[2].split(",") if x)
        if dtype not in DTYPES or not shape or math.prod(shape) > MAX_ELEMENTS:
            raise BadInput(f"bad inputs: '{item}' (dtype one of {', '.join(DTYPES)}, "
                           f"at most {MAX_ELEMENTS} elements)")
        gen = m[3] or ""
        data: np.ndarray
        if gen == "csr":  # row starts with two non-zeros per row
            data = np.arange(shape[0]) * 2
        elif gen.startswith("col") and gen[3:].isdigit() and int(gen[3:]) > 0:
            data = np.arange(shape[0]) % int(gen[3:])
        elif gen:
            raise BadInput(f"bad inputs: '{item}' (generator :csr or :colK)")
        else:
            raw = rng.integers(-8, 9, size=shape)
            data = raw / 4 if dtype.startswith("float") else raw
        arrays[name] = np.asarray(data, dtype=dtype).reshape(shape)
    return arrays, scalars


def _scalar(item: str, rhs: str) -> int | float:
    if re.fullmatch(r"-?[0-9]+", rhs):
        value = check_int_literal(rhs.lstrip("-"))
        return -value if rhs.startswith("-") else value
    try:
        value_f = float(rhs)
    except ValueError:
        raise BadInput(f"bad inputs: '{item}' (expected a number or dtype[shape])") from None
    if not math.isfinite(value_f):
        raise BadInput(f"bad inputs: '{item}' (a finite number)")
    return value_f
