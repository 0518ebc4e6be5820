"""Benchmarks of the sync check (issue 3, "Speed"): the tiled GEMM at N = 256, 512,
1024, 2048, as converted from examples/gpuir/gemm_tiled.gpuir and as the hand-written
sm_90a-shaped AMIR of gemm_amir.py. Conversion happens outside the timed region; the
benchmark records seconds, recorded accesses, and recorded accesses per second
(`extra_info`). 1024 and 2048 are `slow` (run them with `-m slow`).

    python -m pytest tests/amir/test_bench_synccheck.py -m "benchmark" \\
        --benchmark-columns=min,mean,rounds

The paper's checker: 2 s / 16 s / 128 s for its GEMM at 1024 / 2048 / 4096 (one
laptop core). Work (statements, recorded accesses) must grow as N^3 for the time to
be linear in it: test_gemm_work_is_cubic pins that, deterministically.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.calculus.amir.parser import parse_proc
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.interpreter.amir.from_gpuir import convert
from gpusem.interpreter.amir.machine import check_amir

from .gemm_amir import gemm_amir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gpuir" / "gemm_tiled.gpuir"
SIZES = [256, 512, pytest.param(1024, marks=pytest.mark.slow),
         pytest.param(2048, marks=pytest.mark.slow)]


def _example(n: int):
    text = EXAMPLE.read_text()
    return convert(parse_module(text, str(EXAMPLE)).procs[0], {"N": n})


def _run(benchmark, proc, n: int):
    rounds = 3 if n <= 512 else 1
    verdict = benchmark.pedantic(check_amir, args=(proc, {"N": n}), rounds=rounds,
                                 iterations=1, warmup_rounds=0)
    assert verdict.accepted, verdict.violation.message
    if not getattr(benchmark, "stats", None):      # --benchmark-disable: ran once
        return
    seconds = benchmark.stats.stats.min
    benchmark.extra_info.update({
        "N": n, "seconds": seconds,
        "recorded_accesses": verdict.stats.recorded_accesses,
        "accesses_per_second": verdict.stats.recorded_accesses / seconds,
        "statements": verdict.stats.statements, "records": verdict.stats.records})


@pytest.mark.benchmark
@pytest.mark.parametrize("n", SIZES)
def test_bench_gemm_example(benchmark, n):
    _run(benchmark, _example(n), n)


@pytest.mark.benchmark
@pytest.mark.parametrize("n", SIZES)
def test_bench_gemm_amir(benchmark, n):
    _run(benchmark, parse_proc(gemm_amir(), "gemm.amir"), n)


def test_gemm_work_is_cubic():
    """Doubling N multiplies the work by ~8 (N^3; the epilogue's N^2 part makes it a
    little less), so time linear in the work is time linear in memory operations."""
    proc = parse_proc(gemm_amir(), "gemm.amir")
    a, b = (check_amir(proc, {"N": n}).stats for n in (256, 512))
    for x, y in ((a.recorded_accesses, b.recorded_accesses),
                 (a.statements, b.statements), (a.records, b.records),
                 (a.lifts, b.lifts)):
        assert 7.5 * x <= y <= 8.5 * x
