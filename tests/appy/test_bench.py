"""Throughput of the oracle side of a campaign (no appyc): generation is hypothesis's,
so these time the per-program work gpusem adds: print, parse, legality + sequential
reading, and the abstract machine."""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.appy.parser import parse_program
from gpusem.calculus.appy.printer import print_program
from gpusem.interpreter.appy.legality import check_legal
from gpusem.interpreter.appy.machine import run_machine

SOFTMAX = """def softmax(a, b, M, N):
    #pragma parallel for
    for i in range(M):
        m = float('-inf')
        #pragma simd
        for j in range(N):
            m = np.maximum(m, a[i, j])
        s = 0.0
        #pragma simd
        for j in range(N):
            s += np.exp(a[i, j] - m)
        #pragma simd
        for j in range(N):
            b[i, j] = np.exp(a[i, j] - m) / s
"""
M, N = 4, 128
INPUTS = {"a": (np.arange(M * N, dtype=np.float32).reshape(M, N) % 7) / 4,
          "b": np.zeros((M, N), np.float32)}


@pytest.mark.benchmark
def test_bench_print_parse(benchmark) -> None:
    fn = parse_program(SOFTMAX)
    out = benchmark(lambda: parse_program(print_program(fn)))
    assert out == fn


@pytest.mark.benchmark
def test_bench_legality_and_sequential_reading(benchmark) -> None:
    fn = parse_program(SOFTMAX)
    v = benchmark(lambda: check_legal(fn, INPUTS, {"M": M, "N": N}))
    assert v.legal
    np.testing.assert_allclose(v.expected["b"].sum(axis=1), np.ones(M), rtol=1e-5)


@pytest.mark.benchmark
def test_bench_abstract_machine(benchmark) -> None:
    fn = parse_program(SOFTMAX)
    out = benchmark(lambda: run_machine(fn, INPUTS, {"M": M, "N": N}, seed=1, mvl=32))
    np.testing.assert_allclose(out["b"].sum(axis=1), np.ones(M), rtol=1e-5)
