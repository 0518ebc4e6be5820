"""The emitted CUDA: the cpu harness's run of it equals the reference on the hand
kernels (so the emitter and the reference agree on C), and nvcc builds it for sm_90a
(hand-written and generated kernels, one batched nvcc call per 24)."""

from __future__ import annotations

import pytest

from gpusem.calculus.ckernel.parser import parse_kernel
from gpusem.compiler.backends import Job, get_backend
from gpusem.compiler.backends.nvcc import compile_check, nvcc_available
from gpusem.compiler.ckernel_cuda.emit import emit_kernel, kernel_spec
from gpusem.fuzz.ckernel.check import check_round, reference
from gpusem.fuzz.ckernel.templates import kernels
from gpusem.fuzz.hunt import generate_round
from gpusem.interpreter.ckernel.inputs import initial_memory
from tests.ckernel.kernels import EXCHANGE, T1, one

HAND = [T1, EXCHANGE]
EXPRS = ["(/ -7:i32 2)", "(% -2147483648:i32 3)", "(cast i32 (% 4294967295:u32 10))",
         "(+ 2147483647:i32 tid)", "(<< -1:i32 -1:i32)", "(>> -8:i32 33:i32)",
         "(clz tid)", "(cast i32 (brev (cast u32 tid)))", "(shfl (* lane 10:i32) 5)",
         "(shflx lane 16)", "(cast i32 (/ (cast i64 (* tid -1000003:i32)) -7))",
         "(abs (>> (* tid -77777:i32) 1:i32))"]


def generated(n: int, seed: int) -> list:
    """`n` generated kernels, as a campaign round of seed `seed` draws them."""
    return [d.program for d in generate_round(kernels(), seed, n)]


def hand_kernels() -> list:
    return [parse_kernel(t) for t in HAND] + [one(e) for e in EXPRS]


def test_cpu_harness_agrees_with_the_reference_on_hand_kernels() -> None:
    refs = [reference(k) for k in hand_kernels()]
    verdicts = check_round(refs, get_backend("cpu"), (0, 1, 2, 3), emi=False)
    assert [v.kind for v in verdicts] == ["agree"] * len(refs), [
        v.message for v in verdicts]


def test_a_wrong_answer_is_seen() -> None:
    """The comparison has teeth: the harness's run of another kernel disagrees."""
    k, other = one("(/ -7:i32 2)"), one("(/ -7:i32 -2)")
    res = get_backend("cpu").run([Job(kernel_spec(other), initial_memory(k), 0)])
    from gpusem.fuzz.ckernel.check import first_difference

    assert first_difference(reference(k).expected, res[0].outputs) is not None


def test_emitted_cuda_builds_with_nvcc_for_sm90a() -> None:
    if not nvcc_available():
        pytest.fail("nvcc is required (CI compiles every emitted kernel)")
    sources = [emit_kernel(k) for k in hand_kernels() + generated(40, 3)]
    errors = [e for e in compile_check(sources) if e is not None]
    assert errors == []


def test_t1_shape_is_emitted_as_written() -> None:
    text = emit_kernel(parse_kernel(T1))
    assert "const int* __restrict__ x0" in text and "int* st" in text
    assert "__ldg(&x0[gid * 4 + 1])" in text
    assert "((((int)((tid) < (4)))) ? x0 : st)[gid * 4 + 1]" in text
