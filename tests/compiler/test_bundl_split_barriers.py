"""Arrive motion end to end: a thread[64] barrier of a 128-thread block is split into an
mbarrier arrive and wait with independent work between; the kernel agrees with the
interpreter on the cpu harness, and a phase bug in the lowering is caught."""

from __future__ import annotations

import os
from pathlib import Path

from gpusem.fuzz.bundl_compile import check_file

PROGRAM = Path(__file__).parent / "programs" / "split_barrier_w64.bundl"


def test_split_barrier_program_agrees_and_really_splits():
    from gpusem.cli.compile import compile_file

    source = compile_file(str(PROGRAM)).source
    assert "gs_mbar_arrive" in source and "// wait partition" in source
    verdict = check_file(str(PROGRAM), "cpu", (0, 1, 2))
    assert verdict.agree, verdict.describe()


def test_mbarrier_phase_fault_is_detected(monkeypatch):
    monkeypatch.setitem(os.environ, "GPUSEM_FAULT", "mbarrier-phase")
    verdict = check_file(str(PROGRAM), "cpu", (0, 1, 2))
    assert not verdict.agree
    assert verdict.kind in ("kernel-failed", "disagree")
