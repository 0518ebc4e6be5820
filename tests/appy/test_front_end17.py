"""Issue 17's front-end, legality and sequential-reading defects, each pinned by a
program written from seed 003 (Sections 3-4, Listings 4-7) or NPBench's kernels."""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.appy import ast as A
from gpusem.calculus.appy.parser import parse_program
from gpusem.calculus.appy.printer import print_program
from gpusem.calculus.errors import BadInput
from gpusem.interpreter.appy.legality import check_legal
from gpusem.interpreter.appy.sequential import run_sequential


def roundtrip(src: str) -> A.Function:
    fn = parse_program(src)
    assert parse_program(print_program(fn)) == fn
    return fn


def test_return_bitwise_ternary_products_and_data_clauses_parse_and_print() -> None:
    fn = roundtrip(
        "def k(A, x, y, C, M, N):\n"
        "    #pragma parallel for to(A,x) from(C)\n"
        "    for i in range(M):\n"
        "        C[i] = 1.0 if (A[i, 0] > 0.0) & (x[i] < 1.0) | (i == 0) else -1.0\n"
        "    y[:M] = appy.mv(A[:M, :N], x[:N])\n"
        "    y[0] = appy.dot(A[0, :N], x[:N])\n"
        "    return C\n")
    loop, mv, dot, ret = fn.body
    assert loop.directive == A.ParallelFor(to=("A", "x"), from_=("C",))
    store = loop.body[0]
    assert isinstance(store.value, A.Where) and store.value.ternary
    assert isinstance(store.value.cond, A.BinOp) and store.value.cond.op == "|"
    assert mv.value.func == "mv" and dot.value.func == "dot"
    assert ret == A.Return(A.Name("C"))
    text = print_program(fn)
    assert " if " in text and "appy.where" not in text  # kept as the user wrote it
    assert "#pragma parallel for to(A,x) from(C)" in text


def test_comparisons_under_bitwise_ops_keep_their_parentheses() -> None:
    fn = roundtrip("def k(A, N):\n    for i in range(N):\n"
                   "        if (A[i] > 0) & (A[i] < 3) | (i == 1):\n            A[i] = 0\n")
    assert "(A[i] > 0) & (A[i] < 3) | (i == 1)" in print_program(fn)


def test_malformed_input_is_one_line_with_file_line_col() -> None:
    with pytest.raises(BadInput) as err:
        parse_program("def k(A, N):\n    while N:\n        A[0] = 1\n", "w.py")
    assert err.value.one_line() == "w.py:2:5: unsupported syntax: while"
    with pytest.raises(BadInput) as err:
        parse_program("def k(A, N):\n    #pragma parallel for simd simd\n"
                      "    for i in range(N):\n        A[i] = 1\n", "d.py")
    assert err.value.one_line().startswith("d.py:3:5: malformed directive: clause")


def test_python_negative_indices() -> None:
    fn = parse_program("def k(A, C, N):\n    for i in range(N):\n"
                       "        C[i] = A[i - N] + A[-1]\n    C[-2:N] = A[0:2]\n")
    a = np.arange(5, dtype=np.float32)
    out = run_sequential(fn, {"A": a, "C": np.zeros(5, np.float32)}, {"N": 5})
    np.testing.assert_array_equal(out["C"], [4, 5, 6, 0, 1])  # NumPy's own reading


def test_out_of_range_after_wrapping_still_traps_and_check_legal_says_so() -> None:
    fn = parse_program("def k(A, N):\n    A[0] = A[-N - 1]\n")
    v = check_legal(fn, {"A": np.zeros(4, np.float32)}, {"N": 4})
    assert not v.legal and v.kind == "trap" and v.rule == "Seq-Index"


def test_check_legal_returns_a_verdict_for_every_rejection() -> None:
    budget = parse_program("def k(A, N):\n    for i in range(N):\n        A[0] = i\n")
    assert check_legal(budget, {"A": np.zeros(1)}, {"N": 10**7},
                       max_steps=100).kind == "budget"
    assert check_legal(budget, {"A": np.zeros(1)}, {}).kind == "bad-input"


def test_conditional_expression_reads_only_the_branch_taken() -> None:
    fn = parse_program("def k(A, N):\n    A[0] = A[N] if N < 1 else 2.0\n")
    out = run_sequential(fn, {"A": np.zeros(1, np.float32)}, {"N": 5})
    assert out["A"][0] == 2.0  # A[5] (out of bounds) is never read, as in Python


def test_bitwise_on_floats_is_a_trap() -> None:
    fn = parse_program("def k(A, N):\n    A[0] = A[0] & 1\n")
    v = check_legal(fn, {"A": np.ones(1, np.float32)}, {"N": 1})
    assert v.kind == "trap" and v.rule == "Seq-BitOp"


def test_mv_and_dot_are_numpys_products() -> None:
    fn = parse_program("def k(A, x, y, d, M, N):\n    y[:M] = appy.mv(A[:M, :N], x[:N])\n"
                       "    d[0] = appy.dot(x[:N], x[:N])\n")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = np.array([1, 2, 3], np.float32)
    out = run_sequential(fn, {"A": a, "x": x, "y": np.zeros(2, np.float32),
                              "d": np.zeros(1, np.float32)}, {"M": 2, "N": 3})
    np.testing.assert_array_equal(out["y"], a @ x)
    assert out["d"][0] == 14


GEMVER_LIKE = """def k(A, u, v, x, y, N):
    #pragma parallel for
    for i in range(N):
        s = 0.0
        for j in range(N):
            s += A[i, j] * y[j]
        x[i] = s
    #pragma parallel for
    for j in range(N):
        s = 0.0
        for i in range(N):
            s += A[i, j] * x[i]
        v[j] = s + u[j]
"""


def test_private_scalar_reused_in_a_later_region_is_legal() -> None:
    """gemver/covariance: `s` private to both regions, defined before read in each."""
    fn = parse_program(GEMVER_LIKE)
    rng = np.random.default_rng(0)
    arrays = {k: (rng.integers(-4, 5, (4, 4)) / 4).astype(np.float32) if k == "A" else
              (rng.integers(-4, 5, 4) / 4).astype(np.float32) for k in "Auvxy"}
    assert check_legal(fn, arrays, {"N": 4}).legal


def test_private_scalar_read_after_its_region_still_escapes() -> None:
    fn = parse_program(GEMVER_LIKE + "    u[0] = s\n")
    v = check_legal(fn, {k: np.zeros((4, 4) if k == "A" else 4, np.float32)
                         for k in "Auvxy"}, {"N": 4})
    assert v.rule == "Legal-Private" and "escapes" in v.message


def test_lane_private_scalar_in_simd_is_legal_and_carried_one_is_not() -> None:
    ok = parse_program("def k(A, C, N):\n    t = 0.0\n    #pragma simd\n"
                       "    for j in range(N):\n        t = A[j] * 2.0\n        C[j] = t\n")
    arrays = {"A": np.ones(8, np.float32), "C": np.zeros(8, np.float32)}
    assert check_legal(ok, arrays, {"N": 8}).legal
    bad = parse_program("def k(A, C, N):\n    t = 0.0\n    #pragma simd\n"
                        "    for j in range(N):\n        C[j] = t\n        t = A[j]\n")
    assert check_legal(bad, arrays, {"N": 8}).rule == "Legal-SimdScalar"
