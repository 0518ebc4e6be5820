"""`as_bundl_values` and `first_difference` (compiler/bundl_cuda/launch.py) work a
whole array at a time (NumPy); they must give exactly what one call a cell gives: the
same Python values, and the same first differing cell (floats bit for bit, every NaN
equal to every NaN, signed zeros apart: errata L13), on any contents, odd values in
the lists included (ints past int64, NumPy scalars), where they fall back to the loop."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.float32_equality import same_float32
from gpusem.compiler.bundl_cuda.launch import (
    agrees,
    as_bundl_values,
    first_difference,
)

PROG = parse_program("machine blocks = 1, threads = 1;\nglobal i : int[4];\n"
                     "global f : float[4];\nglobal b : bool[4];\nmain { }\n", "v.bundl")
ELEM = {"i": B.BaseType.INT, "f": B.BaseType.FLOAT, "b": B.BaseType.BOOL}


def cell_by_cell_values(outputs: dict[str, np.ndarray]) -> dict[str, list]:
    """What `as_bundl_values` computed before, one call a cell."""
    return {"i": [int(v) for v in outputs["g_i"]],
            "f": [float(v) for v in outputs["g_f"].astype(np.float32)],
            "b": [bool(v) for v in outputs["g_b"]]}


def cell_by_cell_difference(want: dict, got: dict):
    """What `first_difference` computed before, one call a cell."""
    for name in ("i", "f", "b"):
        for k, (e, a) in enumerate(zip(want[name], got[name], strict=True)):
            same = same_float32(e, a) if ELEM[name] == B.BaseType.FLOAT else e == a
            if not same:
                return name, k, e, a
    return None


def exactly(values: dict[str, list]) -> dict[str, list]:
    """Each value as its type and its bits (a NaN is never == itself)."""
    return {k: [(type(v), struct.pack("<d", v) if isinstance(v, float) else v)
                for v in vs] for k, vs in values.items()}


# float32 words: NaNs of both signs and payloads, both zeros, infinities, numbers
WORDS = st.sampled_from([0x7FC00000, 0xFFC00000, 0x7FFFFFFF, 0x7F800001, 0x00000000,
                         0x80000000, 0x7F800000, 0xFF800000, 0x3F800000, 0x00000001])
INTS = st.sampled_from([0, 1, -1, 7, 2**31 - 1, -2**31])
MEMORY = st.fixed_dictionaries({
    "g_i": st.lists(INTS, min_size=4, max_size=4).map(
        lambda v: np.array(v, dtype=np.int32)),
    "g_f": st.lists(WORDS, min_size=4, max_size=4).map(
        lambda v: np.array(v, dtype=np.uint32).view(np.float32)),
    "g_b": st.lists(st.booleans(), min_size=4, max_size=4).map(
        lambda v: np.array(v, dtype=bool))})


@settings(max_examples=100, deadline=None, database=None)
@given(MEMORY, MEMORY)
def test_whole_arrays_give_what_one_cell_at_a_time_gives(mine, theirs) -> None:
    want, got = as_bundl_values(PROG, mine), as_bundl_values(PROG, theirs)
    assert exactly(want) == exactly(cell_by_cell_values(mine))
    assert exactly(got) == exactly(cell_by_cell_values(theirs))
    found = first_difference(PROG, want, got)
    assert found == cell_by_cell_difference(want, got) or (
        # a NaN is never == itself: compare the place and the bits
        found[:2] == cell_by_cell_difference(want, got)[:2])
    assert first_difference(PROG, want, want) is None
    # `compare`'s shortcut on the backend's arrays: agrees exactly when no cell differs
    assert agrees(PROG, want, theirs, {}) is (found is None)
    assert agrees(PROG, want, mine, {})


def test_values_numpy_cannot_hold_take_the_cell_loop() -> None:
    want = {"i": [0, 2**70, 3, 4], "f": [0.0, 1.0, np.float32(2.0), 3.0],
            "b": [True, False, 1, 0]}
    assert first_difference(PROG, want, dict(want)) is None
    got = dict(want, i=[0, 2**70 + 1, 3, 4])
    assert first_difference(PROG, want, got) == ("i", 1, 2**70, 2**70 + 1)
    got = dict(want, f=[0.0, 1.0, np.float32(2.5), 3.0])
    assert first_difference(PROG, want, got)[:2] == ("f", 2)
    # ints and bools compare as Python's `==` does: 1 == True
    assert first_difference(PROG, want, dict(want, b=[1, 0, True, False])) is None


def test_agrees_leaves_what_numpy_cannot_hold_to_first_difference() -> None:
    outputs = {"g_i": np.array([0, 1, 3, 4], dtype=np.int32),
               "g_f": np.zeros(4, dtype=np.float32), "g_b": np.zeros(4, dtype=bool)}
    want = as_bundl_values(PROG, outputs)
    assert agrees(PROG, want, outputs, {})
    assert not agrees(PROG, dict(want, i=[0, 2**70, 3, 4]), outputs, {})
    assert not agrees(PROG, dict(want, f=[np.float32(0.0)] * 4), outputs, {})
    assert not agrees(PROG, dict(want, i=[0, 1, 3]), outputs, {})  # a length apart


def test_a_difference_in_a_later_global_and_a_length_mismatch() -> None:
    want = {"i": [1, 2, 3, 4], "f": [0.0] * 4, "b": [False] * 4}
    assert first_difference(PROG, want, dict(want, b=[False, False, False, True])) == (
        "b", 3, False, True)
    try:
        first_difference(PROG, want, dict(want, i=[1, 2, 3]))
    except ValueError:
        pass
    else:
        raise AssertionError("cells of unequal counts were compared")
