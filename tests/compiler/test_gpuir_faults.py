"""The seq = par oracle has teeth: every seeded fault of the GPU IR compiler
(`GPUSEM_FAULT=gpuir-...`) makes some accepted example disagree with its sequential
reading (or deadlock / trap) on the cpu harness, while without faults they all agree
(test_gpuir_examples.py). All faulty variants run in one backend batch."""

from __future__ import annotations

import pytest
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda.errors import CompileError
from gpusem.compiler.gpuir_cuda.faults import FAULTS, enabled
from gpusem.compiler.gpuir_cuda.run import Case, check_batch, make_inputs, prepare
from gpusem.fuzz.gpuir.seqpar import EXAMPLES
from gpusem.typing_rules.gpuir.frontend import load_proc as load

# the example each fault is expected to break (an independent reason per line)
TARGETS = {
    "gpuir-fence-dropped": "fence_broadcast",          # buf read before all writes
    "gpuir-cta-fence-as-syncwarp": "SKEW",             # warp 1 reads before warp 0
                                                       # writes (reverse schedule)
    "gpuir-mbar-wait-dropped": "mbarrier_broadcast",   # reads before the phase ends
    "gpuir-mbar-parity-stuck": "producer_consumer",    # second phase never awaited
    "gpuir-cp-async-wait-dropped": "cp_async_pipeline",  # stale stage read
    "gpuir-fma-contraction": "gemv_shfl",              # one rounding instead of two
    "gpuir-thread-guard-dropped": "gemm_tiled",        # 256 threads issue the TMA
                                                       # and arrive on a 1-count mbar
}


# Warp 0 alone passes a warp-scope Fence (a blocking point on the cpu harness) before
# the writes, so under the reverse schedule warp 1 reaches its reads first; only a
# CTA-wide barrier keeps it waiting for warp 0's writes.
SKEW = """\
proc skew(A: f32[64] @ CudaGmemLinear, B: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[64] @ CudaSmemLinear
            for w in cuda_threads(0, 1, unit=cuda_warp):
                Fence(cuda_in_order, cuda_in_order)
            for tid in cuda_threads(0, 64, unit=cuda_thread):
                buf[tid] = A[tid]
            Fence(cuda_in_order, cuda_in_order)
            for tid in cuda_threads(0, 64, unit=cuda_thread):
                B[tid] = buf[63 - tid]
            Fence(cuda_in_order, cuda_in_order)
"""


def _case(name: str) -> Case:
    if name == "SKEW":
        proc = parse_module(SKEW, "skew.gpuir").procs[0]
        env, source = {}, SKEW
    else:
        proc, env, source = load(str(EXAMPLES / f"{name}.gpuir"), {})
    return Case(proc, env, make_inputs(proc, env), source=source)


def test_every_fault_has_a_target():
    assert set(TARGETS) == set(FAULTS)


def test_unknown_gpuir_fault_is_rejected_and_others_ignored(monkeypatch):
    monkeypatch.setenv("GPUSEM_FAULT", "drop-partition-barrier")
    assert enabled() == set()
    monkeypatch.setenv("GPUSEM_FAULT", "gpuir-nope")
    with pytest.raises(CompileError, match="^unknown fault: gpuir-nope"):
        enabled()


def test_skew_program_agrees_without_faults():
    case = _case("SKEW")
    prepare(case)
    (v,) = check_batch([case], "cpu", (0, 1, 2))
    assert v.agree, v.describe()


def test_each_fault_is_detected(monkeypatch):
    cases = {}
    for fault, name in TARGETS.items():
        monkeypatch.setenv("GPUSEM_FAULT", fault)
        case = _case(name)
        prepare(case)
        assert case.compiled is not None, fault
        cases[fault] = case
    monkeypatch.delenv("GPUSEM_FAULT")
    verdicts = check_batch(list(cases.values()), "cpu", (0, 1, 2), timeout_s=5.0)
    missed = [f for f, v in zip(cases, verdicts, strict=True)
              if v.kind not in ("disagree", "kernel-failed")]
    assert not missed, {f: cases[f].verdict.describe() for f in missed}
