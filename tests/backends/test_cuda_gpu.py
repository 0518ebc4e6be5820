"""The cuda backend (CuPy + NVRTC, sm_90a) on the same hand-written kernels.

Marked `gpu`: skipped where CuPy or a GPU is missing (CI); run on the H100 with
`pytest tests/backends -m gpu`. The determined kernels must give the same NumPy
references as on the cpu harness (float32 bit for bit), wgmma must run, and a hung or
trapping kernel must cost only a worker restart.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.compiler.backends.cuda import CudaBackend
from gpusem.compiler.backends.kernel import Job

from . import cases

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu():
    backend = CudaBackend()
    yield backend
    backend.close()


def test_determined_kernels_match_numpy_on_the_gpu(gpu):
    made = {name: make(seed=0) for name, make in cases.DETERMINED.items()}
    results = gpu.run([c.job for c in made.values()])
    bad = {}
    for (name, case), r in zip(made.items(), results, strict=True):
        if r.kind != "ok" or not cases.matches(case, r.outputs):
            bad[name] = (r.kind, r.message[:300])
    assert not bad, bad


def test_wgmma_fences_run_on_the_gpu(gpu):
    (r,) = gpu.run([cases.wgmma_job()])
    assert r.kind == "ok", r.message
    assert np.all(r.outputs["out"] == 2.0)


def test_hung_kernel_is_a_timeout_and_the_next_job_runs(gpu):
    loop = cases.spec(
        "infinite_loop",
        1,
        4,
        (cases.ptr("flag", "int32", 1), cases.ptr("out", "int32", 4)),
    )
    after = cases.reduce_case()
    r1, r2 = gpu.run([Job(loop, {}, 0, timeout_s=2.0), after.job])
    assert r1.kind == "timeout", r1.message
    assert r2.kind == "ok" and cases.matches(after, r2.outputs), r2.message


def test_trap_is_a_runtime_error_and_the_next_job_runs(gpu):
    after = cases.shuffles_case()
    r1, r2 = gpu.run([cases.div0_job(), after.job])
    assert r1.kind == "runtime_error", r1.message
    assert r2.kind == "ok" and cases.matches(after, r2.outputs), r2.message


def test_build_error_is_attributed_on_the_gpu(gpu):
    bad = cases.KernelSpec(
        "bad",
        '#include "gpusem_rt.cuh"\nextern "C" __global__ void bad(int* o) {\n'
        "  o[0] = no_such_name;\n}\n",
        1,
        1,
        0,
        (cases.ptr("o", "int32", 1),),
    )
    good = cases.int_arith_case()
    r_bad, r_good = gpu.run([Job(bad), good.job])
    assert r_bad.kind == "build_error" and "no_such_name" in r_bad.message
    assert r_good.kind == "ok" and cases.matches(good, r_good.outputs), r_good.message


def test_time_kernel_gives_milliseconds(gpu, record_property):
    ms = gpu.time_kernel(cases.reduce_case().job, warmup=2, iters=10)
    record_property("reduce_1024_ms", ms)
    assert 0.0 < ms < 100.0


def test_cuda_and_cpu_backends_agree_bit_for_bit(gpu, cpu):
    made = [make(seed=0) for make in cases.DETERMINED.values()]
    on_gpu = gpu.run([c.job for c in made])
    on_cpu = cpu.run([c.job for c in made])
    for case, g, c in zip(made, on_gpu, on_cpu, strict=True):
        assert g.kind == c.kind == "ok", (case.job.spec.name, g.message, c.message)
        for name in case.expect:
            got_gpu, got_cpu = g.outputs[name], c.outputs[name]
            if got_gpu.dtype == np.float32:  # NaN payloads differ (x86 vs PTX)
                same = cases.same_bits_or_both_nan(got_gpu, got_cpu)
            else:
                same = got_gpu.tobytes() == got_cpu.tobytes()
            assert same, (case.job.spec.name, name)


def test_in_process_backend_agrees():
    backend = CudaBackend(in_process=True)
    case = cases.float_arith_case()
    (r,) = backend.run([case.job])
    assert r.kind == "ok", r.message
    assert cases.matches(case, r.outputs)


POISON_WORD = np.frombuffer(bytes([0xA5] * 4), dtype=np.int32)[0]


def test_uninitialised_shared_memory_reads_the_poison_on_both_backends(gpu, cpu):
    """The cuda backend scribbles 0xA5 over every SM's shared memory before a launch
    (the cpu harness's poison byte), and an H100 keeps it for the next kernel: a read
    before any write gives the same word on both backends, not a GPU's leftovers."""
    src = (
        '#include "gpusem_rt.cuh"\n'
        'extern "C" __global__ void peek_smem(int* out) {\n'
        "  __shared__ int s[64];\n"
        "  extern __shared__ int d[];\n"
        "  out[blockIdx.x * 64 + threadIdx.x] = s[threadIdx.x] ^ d[threadIdx.x];\n"
        "  out[4096 + blockIdx.x * 64 + threadIdx.x] = d[threadIdx.x];\n"
        "}\n"
    )
    spec = cases.KernelSpec(
        "peek_smem", src, 64, 64, 4096, (cases.ptr("out", "int32", 8192),)
    )
    for _ in range(3):  # again after other kernels have run
        r_gpu, r_cpu = gpu.run([Job(spec)])[0], cpu.run([Job(spec)])[0]
        assert r_gpu.kind == r_cpu.kind == "ok", (r_gpu.message, r_cpu.message)
        assert r_gpu.outputs["out"].tobytes() == r_cpu.outputs["out"].tobytes()
        assert np.all(r_gpu.outputs["out"][4096:] == POISON_WORD)
        gpu.run([cases.reduce_case().job])
