"""Config.global_memory's whole-array conversion gives what to_python gives a cell at a
time: the same values of the same Python types (floats bit for bit, -0.0 and NaN
included), for every mix of cell types the interpreter can hold."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from gpusem.interpreter.bundl.config import _python_cells
from gpusem.interpreter.bundl.values import Ptr, to_python

SPECIAL = (0.0, -0.0, 1.5, float("nan"), float("inf"), -float("inf"), 3.4e38, 1e-45)


def _bits(x: object) -> object:
    return struct.pack("<d", x) if isinstance(x, float) else x


@pytest.mark.parametrize("cells", [
    [],
    list(range(-500, 500)),
    [True, False, True],
    [1, True, -2**31],
    [np.float32(x) for x in SPECIAL],
    [np.float32(1.25), 2],  # a mix: cell by cell
    [np.int32(3), 4],
    [Ptr(0, 1, 2, 3), 5],
], ids=["empty", "ints", "bools", "int-bool", "float32", "mixed", "np-int", "ptr"])
def test_whole_array_equals_cell_by_cell(cells):
    fast, slow = _python_cells(cells), [to_python(v) for v in cells]
    assert [type(x) for x in fast] == [type(x) for x in slow]
    assert [_bits(x) for x in fast] == [_bits(x) for x in slow]


def test_nan_payload_and_signed_zero_survive():
    nan = np.frombuffer(struct.pack("<I", 0x7FC00123), dtype=np.float32)[0]
    out = _python_cells([nan, np.float32(-0.0)])
    assert math.isnan(out[0]) and struct.pack("<d", out[0]) == struct.pack("<d", float(nan))
    assert math.copysign(1.0, out[1]) == -1.0
