"""The sequential reading: NumPy dtypes, exact wrap-around and rounding, traps."""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.appy.parser import parse_program
from gpusem.calculus.errors import BudgetExhausted, Trap
from gpusem.interpreter.appy.sequential import run_sequential


def run(src: str, arrays: dict, scalars: dict | None = None, **kw):
    return run_sequential(parse_program(src), arrays, scalars or {}, **kw)


def test_int32_wraps() -> None:
    out = run("def k(A):\n    A[0] = A[0] + 1\n",
              {"A": np.array([2**31 - 1], np.int32)})
    assert out["A"][0] == -(2**31)


def test_float32_rounds_every_operation() -> None:
    # (1 + 2^-24) + 2^-24 in float32 rounds twice to 1; a float64 intermediate would not
    a = np.array([1.0], np.float32)
    out = run("def k(A, B):\n    A[0] = A[0] + B[0] + B[0]\n",
              {"A": a, "B": np.array([2.0**-24], np.float32)})
    assert out["A"][0] == np.float32(1.0)
    assert out["A"].dtype == np.float32


def test_python_floor_division_and_modulo() -> None:
    out = run("def k(A):\n    A[0] = A[0] // 2\n    A[1] = A[1] % 3\n",
              {"A": np.array([-7, -7], np.int32)})
    assert out["A"].tolist() == [-4, 2]  # Python's reading, not C's (-3, -1)


def test_inputs_are_not_mutated() -> None:
    a = np.zeros(4, np.float32)
    run("def k(A, N):\n    for i in range(N):\n        A[i] = 1.0\n", {"A": a}, {"N": 4})
    assert not a.any()


def test_loops_with_steps_and_tails() -> None:
    out = run("def k(A, N):\n    #pragma parallel for simd\n    for i in range(1, N, 3):\n"
              "        A[i] = A[i] + 1\n", {"A": np.zeros(8, np.int64)}, {"N": 8})
    assert out["A"].tolist() == [0, 1, 0, 0, 1, 0, 0, 1]


def test_tensor_statement_reads_before_writing() -> None:
    # A[1:N] = A[0:N-1] shifts (NumPy semantics; the paper's Alg. 3 line 11)
    out = run("def k(A, N):\n    #pragma 1:N=>parallel\n    A[1:N] = A[0:N-1]\n",
              {"A": np.arange(5, dtype=np.int32)}, {"N": 5})
    assert out["A"].tolist() == [0, 0, 1, 2, 3]


def test_broadcast_and_row_reduction() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = run("def k(A, x, y, M, N):\n    #pragma :M=>parallel :N=>reduce(sum)\n"
              "    y[:M] = sum(A[:M, :N] * x[None, :N], axis=1)\n",
              {"A": a, "x": np.array([1, 0, 2], np.float32), "y": np.zeros(2, np.float32)},
              {"M": 2, "N": 3})
    assert out["y"].tolist() == [4.0, 13.0]


def test_out_of_bounds_traps_with_rule_and_span() -> None:
    with pytest.raises(Trap) as err:
        run("def k(A, N):\n    for i in range(N):\n        A[i + 1] = 0\n",
            {"A": np.zeros(3, np.int32)}, {"N": 3})
    assert err.value.prefix == "out of bounds" and err.value.rule == "Seq-Index"
    assert err.value.span.line == 3


def test_budget() -> None:
    with pytest.raises(BudgetExhausted):
        run("def k(A, N):\n    for i in range(N):\n        A[0] = i\n",
            {"A": np.zeros(1, np.int64)}, {"N": 10**6}, max_steps=1000)


def test_vidx_vectors_are_bounded_slices() -> None:
    out = run("def k(A, N):\n    for i in range(0, N, 4):\n"
              "        v = appy.vidx(i, 4, N)\n        A[v] = A[v] + i\n",
              {"A": np.zeros(10, np.int32)}, {"N": 10})
    assert out["A"].tolist() == [0, 0, 0, 0, 4, 4, 4, 4, 8, 8]  # the tail strip is short


@pytest.mark.parametrize("src,arrays", [
    # a vector of indices in arithmetic outside an index (TypeError in Python)
    ("def k(A, N):\n    A[0] = appy.vidx(0, 4, N) + 1\n", {"A": np.zeros(8, np.float32)}),
    # slices that do not broadcast (ValueError in NumPy)
    ("def k(A):\n    A[0:2] = A[0:2] + A[0:3]\n", {"A": np.zeros(8, np.float32)}),
    # a Python float divided by zero (ZeroDivisionError)
    ("def k(A):\n    A[0] = 1.0 / 0.0\n", {"A": np.zeros(8, np.float32)}),
])
def test_operands_python_refuses_trap_naming_the_rule(src, arrays) -> None:
    """Found by the robustness campaign: such an operation escaped the sequential
    reading as an internal error (exit 3) instead of a trap (exit 1)."""
    with pytest.raises(Trap) as err:
        run(src, arrays, {"N": 8})
    assert err.value.rule == "Seq-BinOp"


@pytest.mark.parametrize("src", [
    # the row sum with the reduction on the wrong axis: 300 values into 5 cells
    "def k(A, y):\n    y[:5] = sum(A[:5, :300], axis=0)\n",
    # a sequence into one element
    "def k(A, y):\n    y[0] = A[0:2, 0]\n",
])
def test_stores_python_refuses_trap_naming_the_rule(src) -> None:
    """Found by the 100,000-input robustness run: a store NumPy refuses (shapes that do
    not broadcast) was an internal error (exit 3) instead of a trap."""
    with pytest.raises(Trap) as err:
        run(src, {"A": np.zeros((5, 300), np.float32), "y": np.zeros(5, np.float32)})
    assert err.value.rule == "Seq-Store"
