"""Benchmarks of the Bundl interpreters (pytest-benchmark; issue 2's targets).

The program is the block-wide tree reduction through shared memory with B = 4 and
T = 128 (`semantics/block_reduce_tree.bundl`). Targets on one core: small-step at least
100,000 thread-steps/s, big-step at least 1,000,000 evaluated expressions/s. The
measured rates are stored in `extra_info`; each benchmark also checks the result.
Run: `python -m pytest tests/bundl/test_semantics_bench.py --benchmark-only`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.interpreter.bundl.big_step import run_big_step
from gpusem.interpreter.bundl.schedulers import run_program

PROG = parse_program((Path(__file__).parent / "semantics" /
                      "block_reduce_tree.bundl").read_text(), "block_reduce_tree.bundl")
# block b sums A[128b .. 128b + 127] with A = iota
WANT = [sum(range(128 * b, 128 * b + 128)) for b in range(4)]


@pytest.mark.benchmark
def test_small_step_thread_steps_per_second(benchmark):
    out = benchmark.pedantic(run_program, args=(PROG, "rr"), rounds=3, iterations=1)
    assert out.kind == "terminated" and out.globals["out"] == WANT
    if benchmark.stats:  # None under --benchmark-disable
        rate = out.steps / benchmark.stats.stats.min
        benchmark.extra_info.update(thread_steps=out.steps, thread_steps_per_s=round(rate))


@pytest.mark.benchmark
def test_small_step_random_schedule(benchmark):
    out = benchmark.pedantic(run_program, args=(PROG, "random:1"), rounds=2,
                             iterations=1)
    assert out.kind == "terminated" and out.globals["out"] == WANT
    if benchmark.stats:
        benchmark.extra_info.update(thread_steps_per_s=round(
            out.steps / benchmark.stats.stats.min))


@pytest.mark.benchmark
def test_big_step_expressions_per_second(benchmark):
    out = benchmark.pedantic(run_big_step, args=(PROG,), rounds=10, iterations=1)
    assert out.kind == "terminated" and out.globals["out"] == WANT
    if benchmark.stats:
        benchmark.extra_info.update(expressions=out.exprs, expressions_per_s=round(
            out.exprs / benchmark.stats.stats.min))
