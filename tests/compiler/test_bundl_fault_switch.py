"""The fault switch GPUSEM_FAULT is read once per compile (faults.read_once, issue 31.3:
the passes ask ~60 times a program) and still at every compile: a compile sees the
value the variable has when it starts, and an unknown name is refused as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.compiler.bundl_cuda import faults
from gpusem.compiler.bundl_cuda.errors import CompileError
from gpusem.compiler.bundl_cuda.pipeline import compile_program

EXAMPLE = Path(__file__).parents[2] / "examples/bundl/alloc_global_per_unit.bundl"


def _source() -> str:
    return compile_program(parse_program(EXAMPLE.read_text(), EXAMPLE.name)).source


def test_each_compile_reads_the_switch(monkeypatch):
    monkeypatch.delitem(os.environ, "GPUSEM_FAULT", raising=False)
    plain = _source()
    monkeypatch.setitem(os.environ, "GPUSEM_FAULT", "floor-division")
    faulty = _source()
    monkeypatch.delitem(os.environ, "GPUSEM_FAULT")
    assert faulty.count("gs_floor_") > plain.count("gs_floor_")  # the prelude's
    assert _source() == plain  # read again: off


def test_within_a_compile_the_value_read_at_its_start(monkeypatch):
    monkeypatch.setitem(os.environ, "GPUSEM_FAULT", "floor-division")
    with faults.read_once():
        monkeypatch.delitem(os.environ, "GPUSEM_FAULT")
        assert faults.active("floor-division")
    assert not faults.active("floor-division")


def test_an_unknown_fault_is_refused(monkeypatch):
    monkeypatch.setitem(os.environ, "GPUSEM_FAULT", "no-such-fault")
    with pytest.raises(CompileError, match="unknown fault: no-such-fault"):
        _source()
