"""Legality: generated programs are legal; mutants are rejected (the checker's teeth)."""

from __future__ import annotations

import numpy as np
from gpusem.calculus.appy.parser import parse_program
from gpusem.fuzz.appy.mutators import mutants
from gpusem.fuzz.appy.strategies import programs
from gpusem.interpreter.appy.legality import check_legal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FAST = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


@FAST
@given(programs())
def test_generated_programs_are_legal(prog) -> None:
    arrays, scalars = prog.inputs()
    verdict = check_legal(prog.fn, arrays, scalars)
    assert verdict.legal, verdict.message
    assert set(verdict.expected) == set(arrays)


@FAST
@given(programs(families=("elementwise", "reduction")).flatmap(
    lambda p: st.sampled_from(mutants(p) or [None])))
def test_mutants_are_rejected(mutant) -> None:
    if mutant is None:
        return  # a program with no mutable loop of >= 2 iterations
    arrays, scalars = mutant.inputs()
    verdict = check_legal(mutant.fn, arrays, scalars)
    assert not verdict.legal, f"{mutant.mutated} accepted"
    assert verdict.rule in ("Legal-Disjoint", "Legal-Private")


def test_conflict_names_workers_cell_and_span() -> None:
    fn = parse_program("def k(C, N):\n    #pragma parallel for\n    for i in range(N):\n"
                       "        C[0] = i\n", "race.py")
    v = check_legal(fn, {"C": np.zeros(1, np.int32)}, {"N": 2})
    assert not v.legal and v.rule == "Legal-Disjoint"
    assert v.message.startswith("race.py:4:9: [Legal-Disjoint] conflict: worker i=1")
    assert "C[flat 0]" in v.message


def test_one_iteration_has_no_race() -> None:
    fn = parse_program("def k(C, N):\n    #pragma parallel for\n    for i in range(N):\n"
                       "        C[0] = i\n")
    assert check_legal(fn, {"C": np.zeros(1, np.int32)}, {"N": 1}).legal


def test_simd_width_bounds_the_lanes() -> None:
    src = ("def k(A, N):\n    #pragma simd({w})\n    for j in range(4, N):\n"
           "        A[j] = A[j - 4] + 1\n")
    a = {"A": np.zeros(20, np.int32)}
    assert check_legal(parse_program(src.format(w=4)), a, {"N": 20}).legal
    v = check_legal(parse_program(src.format(w=8)), a, {"N": 20})
    assert v.rule == "Legal-SimdLanes"


def test_nested_parallel_loops_are_checked_per_level() -> None:
    src = ("def k(C, M, N):\n    #pragma parallel for\n    for i in range(M):\n"
           "        #pragma parallel for\n        for j in range(N):\n"
           "            C[j] = i\n")
    v = check_legal(parse_program(src), {"C": np.zeros(3, np.int32)}, {"M": 2, "N": 3})
    assert not v.legal and v.rule == "Legal-Disjoint"
    assert "worker i=1" in v.message  # the outer level catches it; inner j's are disjoint
