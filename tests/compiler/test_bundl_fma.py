"""The explicit `fma(a, b, c)` through the Bundl -> CUDA compiler on the cpu backend
(g++, glibc's correctly rounded `fmaf`): bit for bit equal to the interpreter, in
strict CompileOptions() (no contraction anywhere else).

`test_lowering_fma_to_mul_add_is_caught` is the teeth: its program's fma and mul+add
differ in the last bit (2^-24 vs 0), so a compiler lowering `fma` to a multiply and
an add (two roundings) would disagree with the interpreter.
"""

from __future__ import annotations

from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.parser import parse_program
from gpusem.compiler.backends import get_backend
from gpusem.compiler.bundl_cuda.launch import jobs_for
from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
from gpusem.fuzz.bundl_compile import check_batch, check_program, compare, reference
from gpusem.fuzz.strategies.bundl_kernels import kernels
from gpusem.typing_rules.bundl import check_program as typecheck
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


@settings(max_examples=6, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.lists(kernels(max_blocks=2, max_threads=8).filter(_has_fma), min_size=3,
                max_size=3))
def test_generated_fma_kernels_agree(progs):
    verdicts = check_batch(progs, "cpu")
    for verdict in verdicts:
        assert verdict.agree, verdict.describe()
    assert any(v.kind == "agree" for v in verdicts)  # compared, not skipped
