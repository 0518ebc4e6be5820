"""The cuda backend's machinery without a GPU: the spawned worker, NVRTC-style batch
builds with failure attribution, the watchdog for hung kernels, CUDA errors that
replace the worker, and event timing. `fake_cupy/` stands in for CuPy (its "NVRTC" is
real `nvcc -c` for sm_90a; its "GPU" is the cpu harness); only the worker sees it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from gpusem.compiler.backends import nvcc
from gpusem.compiler.backends.cuda import CudaBackend
from gpusem.compiler.backends.kernel import Job

from . import cases

FAKE = Path(__file__).parent / "fake_cupy"
pytestmark = pytest.mark.skipif(not nvcc.nvcc_available(), reason="nvcc not on PATH")


@pytest.fixture(scope="module")
def fake_gpu(tmp_path_factory):
    # spawn hands the parent's sys.path to the worker; the test process itself never
    # imports the fake
    sys.path.insert(0, str(FAKE))
    saved = os.environ.get("GPUSEM_CACHE_DIR")
    os.environ["GPUSEM_CACHE_DIR"] = str(tmp_path_factory.mktemp("fake-gpu-cache"))
    backend = CudaBackend(watchdog_slack_s=1.5)
    try:
        yield backend
    finally:
        backend.close()
        sys.path.remove(str(FAKE))
        if saved is None:
            os.environ.pop("GPUSEM_CACHE_DIR")
        else:
            os.environ["GPUSEM_CACHE_DIR"] = saved


def test_batch_of_kernels_runs_through_the_worker(fake_gpu):
    made = [cases.reduce_case(), cases.float_arith_case()]
    results = fake_gpu.run([c.job for c in made])
    for case, r in zip(made, results, strict=True):
        assert r.kind == "ok", r.message
        assert cases.matches(case, r.outputs)


def test_build_error_is_attributed_and_the_rest_run(fake_gpu):
    bad = cases.KernelSpec(
        "bad",
        '#include "gpusem_rt.cuh"\nextern "C" __global__ void bad(int* o) {\n'
        "  o[0] = no_such_name;\n}\n",
        1,
        1,
        0,
        (cases.ptr("o", "int32", 1),),
    )
    good = cases.shuffles_case()
    r_bad, r_good = fake_gpu.run([Job(bad), good.job])
    assert r_bad.kind == "build_error" and "no_such_name" in r_bad.message
    assert r_good.kind == "ok" and cases.matches(good, r_good.outputs)


def test_hung_kernel_times_out_and_a_new_worker_takes_over(fake_gpu):
    loop = cases.spec(
        "infinite_loop",
        1,
        4,
        (cases.ptr("flag", "int32", 1), cases.ptr("out", "int32", 4)),
    )
    after = cases.reduce_case()
    r1, r2 = fake_gpu.run([Job(loop, {}, 0, timeout_s=0.5), after.job])
    assert r1.kind == "timeout" and r1.message.startswith("timeout:")
    assert r2.kind == "ok" and cases.matches(after, r2.outputs), r2.message


def test_cuda_error_is_a_runtime_error(fake_gpu):
    div0 = cases.spec(
        "div_by_zero",
        1,
        32,
        (cases.ptr("a", "int32", 32), cases.ptr("out", "int32", 32)),
    )
    (r,) = fake_gpu.run([Job(div0, {"a": np.zeros(32, np.int32)})])
    assert r.kind == "runtime_error"
    assert r.message.startswith("runtime error: RuntimeError: CUDA_ERROR_LAUNCH_FAILED")


def test_time_kernel(fake_gpu):
    assert fake_gpu.time_kernel(cases.reduce_case().job, warmup=1, iters=2) > 0.0
