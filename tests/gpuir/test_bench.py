"""Benchmarks (pytest-benchmark): the front-end analyses and the sequential reading of
the tiled GEMM example. Kept to a few rounds so the suite stays fast."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gpusem.calculus.gpuir.parser import parse_proc
from gpusem.interpreter.gpuir.sequential import run_sequential
from gpusem.typing_rules.gpuir.frontend import check_proc

GEMM = Path(__file__).parents[2] / "examples" / "gpuir" / "gemm_tiled.gpuir"


@pytest.mark.benchmark
@pytest.mark.parametrize("n", [256, 2048])
def test_bench_check_gemm(benchmark, n: int) -> None:
    proc = parse_proc(GEMM.read_text(), str(GEMM))
    an = benchmark.pedantic(check_proc, args=(proc, {"N": n}), rounds=3, iterations=1)
    assert not an.errors


@pytest.mark.benchmark
def test_bench_sequential_gemm_256(benchmark) -> None:
    proc = parse_proc(GEMM.read_text(), str(GEMM))
    rng = np.random.default_rng(0)
    a, bt = (rng.standard_normal((256, 256)).astype(np.float32) for _ in range(2))
    out = benchmark.pedantic(run_sequential, args=(proc, {"N": 256}, {"A": a, "Bt": bt}),
                             rounds=3, iterations=1)
    assert np.allclose(out["C"], a @ bt.T, rtol=1e-4, atol=1e-3)
