"""The explicit `fma(a, b, c)` through the Bundl -> CUDA compiler on the cpu backend
(g++, glibc's correctly rounded `fmaf`): bit for bit equal to the interpreter, in
strict CompileOptions() (no contraction anywhere else).

`test_lowering_fma_to_mul_add_is_caught` is the teeth: its program's fma and mul+add
differ in the last bit (2^-24 vs 0), so a compiler lowering `fma` to a multiply and
an add (two roundings) would disagree with the interpreter.
"""

from __future__ import annotations

import math

import numpy as np
from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.parser import parse_program
from gpusem.compiler.backends import get_backend
from gpusem.compiler.bundl_cuda.launch import jobs_for
from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
from gpusem.fuzz.bundl.compile_property import check_batch, check_program, compare
from gpusem.fuzz.bundl.sample import draw_round
from gpusem.fuzz.bundl.strategies.kernels import kernels
from gpusem.interpreter.bundl.reference import reference
from gpusem.typing_rules.bundl.stmt import check_program as typecheck

# o[t] = fma(x, x, o[t]) with x = 1 + 2^-12 and o[t] = -(1 + 2^-11): exactly 2^-24 (x*x
# is 1 + 2^-11 + 2^-24); as x * x + o[t] the product rounds to 1 + 2^-11, giving 0.
LAST_BIT = """machine blocks = 2, threads = 4;
global out : float[8] = [-1.00048828125, -1.00048828125, -1.00048828125, -1.00048828125,
                         -1.00048828125, -1.00048828125, -1.00048828125, 3.0];
main { lower out into ob { destruct {
  let b : int @ block[1] = partition_id;
  partition ob into oc by 2 { group 2 {
    let x : float @ block[1] = 1.000244140625;
    lower oc into ot { destruct {
      let t : int @ thread[1] = partition_id;
      partition ot into o by 4 { group 4 { o[0] = fma(x, x, o[0]); } }
    } }
  } }
} } }
"""


def _mul_add(e):
    """`e` with every fma(a, b, c) spelt a * b + c (two roundings)."""
    import dataclasses

    if isinstance(e, ast.Fma):
        return ast.BinOp("+", ast.BinOp("*", _mul_add(e.a), _mul_add(e.b)), _mul_add(e.c))
    if dataclasses.is_dataclass(e) and not isinstance(e, type):
        changes = {}
        for f in dataclasses.fields(e):
            v = getattr(e, f.name)
            if isinstance(v, tuple):
                changes[f.name] = tuple(_mul_add(x) for x in v)
            elif dataclasses.is_dataclass(v):
                changes[f.name] = _mul_add(v)
        return dataclasses.replace(e, **changes)
    return e


def test_fma_program_agrees_bit_for_bit():
    prog = parse_program(LAST_BIT, "last_bit.bundl")
    typecheck(prog)
    outcome = reference(prog)
    assert outcome.kind == "terminated", outcome.message
    assert outcome.globals["out"][:7] == [2.0**-24] * 7
    verdict = check_program(prog, "cpu", source=LAST_BIT)
    assert verdict.agree and verdict.kind == "agree", verdict.describe()
    assert "gs_ffma(" in verdict.kernel_source  # __fmaf_rn on the device, fmaf on the cpu


def test_lowering_fma_to_mul_add_is_caught():
    prog = parse_program(LAST_BIT, "last_bit.bundl")
    expected = reference(prog).globals
    wrong = _mul_add(prog)  # what a compiler lowering fma as mul + add would run
    assert "fma" not in repr(wrong)
    assert reference(wrong).globals["out"][0] == 0.0 != expected["out"][0]
    kernel = compile_program(wrong, CompileOptions(), "", "wrong.bundl")
    assert "gs_ffma" not in kernel.source
    seeds = (0,)
    results = get_backend("cpu").run(jobs_for(prog, kernel, seeds))
    verdict = compare(prog, expected, kernel.source, results, seeds)
    assert not verdict.agree and verdict.kind == "disagree"


def _has_fma(e) -> bool:
    return "Fma(" in repr(e)


def test_generated_fma_kernels_agree():
    """18 generated kernels with an fma, as the 6 examples of 3 this test drew before,
    now drawn deterministically (`sample.draw`) and checked in ONE batch: one g++
    build of the harness library where each example of 3 was a build of its own."""
    progs = draw_round(kernels(max_blocks=2, max_threads=8).filter(_has_fma), 5, 0, 18)
    assert len({repr(p) for p in progs}) >= 12  # distinct kernels, not one drawn again
    verdicts = check_batch(progs, "cpu")
    for verdict in verdicts:
        assert verdict.agree, verdict.describe()
    assert sum(v.kind == "agree" for v in verdicts) >= 9  # compared, not skipped


def _tricky_triples() -> list[tuple[float, float, float]]:
    """Where a sloppy fma goes wrong: exact ties, a hair off a tie (a binary64 sum
    would round twice), subnormal results, cancellation to a signed zero, overflow."""
    a, tie_b = 1 + 2.0**-12, 1 + 2.0**-12
    out = [(a, tie_b, c) for c in (0.0, 2.0**-60, -(2.0**-60), -(1 + 2.0**-11), 2.0**-70)]
    out += [(2.0**-75, 2.0**-75, 2.0**-149), (-(2.0**-70), 2.0**-70, 0.0),
            (1.0, -1.0, 1.0), (3.0e38, 2.0, -3.0e38), (-0.0, 1.0, -0.0),
            (1 + 2.0**-23, 1 - 2.0**-24, -1.0), (0.1, 10.0, -1.0)]
    return out


def test_cpu_fmaf_matches_the_interpreter_on_tricky_triples():
    from gpusem.calculus.bundl.printer import format_float
    from gpusem.calculus.fma32 import fma32

    triples = [tuple(float(np.float32(x)) for x in t) for t in _tricky_triples()]
    n = len(triples)

    def lits(k):
        return ", ".join(format_float(t[k]) for t in triples)

    src = f"""machine blocks = 1, threads = {n};
global A : float[{n}] = [{lits(0)}];
global B : float[{n}] = [{lits(1)}];
global out : float[{n}] = [{lits(2)}];
main {{ lower out into ob {{ destruct {{ lower ob into ot {{ destruct {{
  let t : int @ thread[1] = partition_id;
  partition ot into o by {n} {{ group {n} {{ o[0] = fma(A[t], B[t], o[0]); }} }}
}} }} }} }} }}
"""
    prog = parse_program(src, "tricky.bundl")
    typecheck(prog)
    got = reference(prog).globals["out"]
    want = [float(fma32(*map(np.float32, t))) for t in triples]
    assert np.array_equal(np.array(got, np.float32).view(np.uint32),
                          np.array(want, np.float32).view(np.uint32))
    assert want[1] == 1 + 2.0**-11 + 2.0**-23  # not the tie's even neighbour
    assert want[8] == triples[8][0]  # 6e38 - 3e38 exactly: mul + add would overflow
    assert math.copysign(1.0, want[9]) == -1.0 and want[9] == 0.0  # -0 * 1 + -0
    verdict = check_program(prog, "cpu", source=src)
    assert verdict.agree and verdict.kind == "agree", verdict.describe()



def test_race_analysis_proves_fma_programs_race_free_quickly():
    # race.py models fma as an uninterpreted function (no FMA circuit to bit-blast)
    import time

    from gpusem.typing_rules.bundl import race

    start = time.monotonic()
    report = race.analyse(parse_program(LAST_BIT), timeout_ms=2000)
    assert report.race_free and report.undecided == 0, report.races
    assert time.monotonic() - start < 30


def test_seeded_fault_fma_unfused_is_caught(monkeypatch):
    """GPUSEM_FAULT=fma-unfused (emit: fma as a*b + c) disagrees on the last-bit program."""
    monkeypatch.setenv("GPUSEM_FAULT", "fma-unfused")
    prog = parse_program(LAST_BIT, "last_bit.bundl")
    verdict = check_program(prog, "cpu", source=LAST_BIT)
    assert "gs_ffma(" not in verdict.kernel_source
    assert not verdict.agree and verdict.kind == "disagree", verdict.describe()
