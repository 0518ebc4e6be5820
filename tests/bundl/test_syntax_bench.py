"""Benchmarks (pytest-benchmark): parsing and printing the example corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.bundl.printer import print_program

ROOT = Path(__file__).resolve().parents[2] / "examples" / "bundl"
SOURCES = [p.read_text() for p in sorted(ROOT.glob("*.bundl"))
           if "bad-input" not in p.read_text()]


@pytest.mark.benchmark
def test_bench_parse_corpus(benchmark):
    progs = benchmark(lambda: [parse_program(s) for s in SOURCES])
    assert len(progs) == len(SOURCES) >= 18
    benchmark.extra_info["chars"] = sum(map(len, SOURCES))


@pytest.mark.benchmark
def test_bench_print_corpus(benchmark):
    progs = [parse_program(s) for s in SOURCES]
    texts = benchmark(lambda: [print_program(p) for p in progs])
    assert [parse_program(t) for t in texts] == progs
