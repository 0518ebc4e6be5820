"""The abstract machine agrees with the sequential reading on legal programs."""

from __future__ import annotations

import numpy as np
from gpusem.calculus.appy.parser import parse_program
from gpusem.compiler.appy_triton.compare import compare_outputs
from gpusem.fuzz.appy.strategies import programs
from gpusem.interpreter.appy.legality import check_legal
from gpusem.interpreter.appy.machine import run_machine
from gpusem.interpreter.appy.sequential import run_sequential
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs(), st.integers(0, 2**16), st.sampled_from((8, 32, 1024)))
def test_machine_agrees_with_sequential_reading(prog, seed, mvl) -> None:
    arrays, scalars = prog.inputs()
    verdict = check_legal(prog.fn, arrays, scalars, mvl=mvl)
    assert verdict.legal
    out = run_machine(prog.fn, arrays, scalars, seed=seed, mvl=mvl)
    assert compare_outputs(verdict.expected, out) is None


def test_machine_exposes_an_illegal_race() -> None:
    # Illegal (Legal-Disjoint): the last writer depends on the worker order.
    fn = parse_program("def k(C, N):\n    #pragma parallel for\n    for i in range(N):\n"
                       "        C[0] = i\n")
    seq = run_sequential(fn, {"C": np.zeros(1, np.int32)}, {"N": 8})["C"][0]
    seen = {int(run_machine(fn, {"C": np.zeros(1, np.int32)}, {"N": 8}, seed=s)["C"][0])
            for s in range(10)}
    assert seq == 7 and len(seen) > 1


def test_simd_lanes_run_in_lockstep() -> None:
    # Illegal in one chunk: lockstep reads every old A[j-1] before any lane writes.
    fn = parse_program("def k(A, N):\n    #pragma simd(4)\n    for j in range(1, N):\n"
                       "        A[j] = A[j - 1] + 1\n")
    a = {"A": np.zeros(5, np.int32)}
    assert run_sequential(fn, a, {"N": 5})["A"].tolist() == [0, 1, 2, 3, 4]
    assert run_machine(fn, a, {"N": 5}, mvl=4)["A"].tolist() == [0, 1, 1, 1, 1]


def test_worker_private_scalars_and_reduction_clause() -> None:
    fn = parse_program("def k(A, S, N):\n    acc = 5\n"
                       "    #pragma parallel for reduction(+:acc)\n"
                       "    for i in range(N):\n        t = A[i] * 2\n        acc += t\n"
                       "    S[0] = acc\n")
    arrays = {"A": np.arange(10, dtype=np.int32), "S": np.zeros(1, np.int32)}
    assert run_machine(fn, arrays, {"N": 10}, seed=3)["S"][0] == 5 + 90
