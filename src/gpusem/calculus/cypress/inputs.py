"""The `# inputs: C=float32[256,512] A=float32[256,128] n=4` header of a Cypress file:
one value per parameter of the entrypoint variant, by name.

Data are small integers (in [-3, 3]) from a fixed seed, so every sum and product the
leaf library forms in the examples is exact in float32 (l.163's claim is tested for
equality, not closeness)."""

from __future__ import annotations

import math
import re

import numpy as np

from gpusem.calculus.errors import BadInput

_ARRAY = re.compile(r"(float32|int32)\[([0-9]+(?:,[0-9]+)*)\]")
MAX_ELEMENTS = 1 << 22


def header_inputs(text: str) -> str | None:
    m = re.search(r"^# inputs: (.*)$", text, re.MULTILINE)
    return m[1].strip() if m else None


def make_inputs(spec: str, seed: int = 0) -> tuple[dict[str, np.ndarray],
                                                   dict[str, int]]:
    """`C=float32[64,64] n=4` -> arrays, scalars; BadInput naming a malformed item."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, int] = {}
    for item in spec.split():
        name, eq, rhs = item.partition("=")
        if not eq or not name.isidentifier() or name in arrays or name in scalars:
            raise BadInput(f"bad inputs: '{item}' (expected NAME=INT or "
                           "NAME=float32|int32[shape], each name once)")
        if re.fullmatch(r"[0-9]{1,9}", rhs):
            scalars[name] = int(rhs)
            continue
        m = _ARRAY.fullmatch(rhs)
        if m is None:
            raise BadInput(f"bad inputs: '{item}' (expected NAME=INT or "
                           "NAME=float32|int32[shape])")
        shape = tuple(int(x) for x in m[2].split(","))
        if len(shape) > 4 or not all(0 < x <= MAX_ELEMENTS for x in shape) \
                or math.prod(shape) > MAX_ELEMENTS:
            raise BadInput(f"bad inputs: '{item}' (rank 1-4, positive extents, at "
                           f"most {MAX_ELEMENTS} elements)")
        arrays[name] = rng.integers(-3, 4, size=shape).astype(m[1])
    return arrays, scalars
