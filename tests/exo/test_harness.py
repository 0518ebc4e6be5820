"""The harness that runs Exo-GPU's CUDA (issue 16, item 4), without Exo: its generated
main for a proc's signature, built by nvcc for sm_90a against a stand-in of Exo's
files written here (same C entry convention: `void proc(void *ctxt, sizes...,
pointers...)`, GMEM pointers on the device)."""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda.run import make_inputs
from gpusem.compiler.gpuir_exo.harness import (
    Harness,
    HarnessCase,
    main_source,
    nvcc_available,
)

PROC = """proc k0(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, N / 32):
            for tid in cuda_threads(0, 32, unit=cuda_thread):
                B[task * 32 + tid] = A[task * 32 + tid] + 1.0
"""
STANDIN = {
    "h": '#pragma once\n#include <stdint.h>\n#include <cuda_runtime.h>\n'
         '#ifdef __cplusplus\nextern "C" {\n#endif\n'
         'void k0(void *ctxt, int_fast32_t N, const float* A, float* B);\n'
         '#ifdef __cplusplus\n}\n#endif\n',
    "c": '#include "batch.h"\n',
    "cu": '#include "batch.h"\n'
          '__global__ void k0_kernel(int n, const float* a, float* b) {\n'
          '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) b[i] = a[i] + 1.0f;\n'
          '}\nextern "C" void k0(void *ctxt, int_fast32_t N, const float* A, float* B)'
          ' { k0_kernel<<<(N + 31) / 32, 32>>>((int)N, A, B); }\n',
}


def case() -> HarnessCase:
    proc = parse_module(PROC, "k0.gpuir").procs[0]
    return HarnessCase("k0", proc, {"N": 64}, make_inputs(proc, {"N": 64}))


def test_main_calls_the_entry_in_parameter_order_with_device_pointers():
    text = main_source([case()], "batch.h")
    assert "k0(nullptr, 64, d0, d1);" in text
    assert text.count("cudaMalloc(&d") == 2 and "cudaDeviceSynchronize()" in text
    assert "CK(cudaGetLastError());" in text


@pytest.mark.skipif(not nvcc_available(), reason="nvcc not on PATH")
def test_builds_for_sm90a_with_nvcc(tmp_path):
    h = Harness("cuda")
    try:
        b = h.build([case()], STANDIN)
        assert b.ok, b.log
        assert b.exe is not None and b.exe.is_file()
        h.write_inputs(b, [case()])
        got = np.frombuffer((b.dir / "in0_0.bin").read_bytes(), dtype=np.float32)
        assert np.array_equal(got, case().inputs["A"])
    finally:
        h.close()


@pytest.mark.skipif(not nvcc_available(), reason="nvcc not on PATH")
def test_a_build_error_is_reported_not_raised():
    h = Harness("cpu")
    try:
        b = h.build([case()], STANDIN | {"cu": "this is not CUDA\n"})
        assert not b.ok and "error" in b.log
    finally:
        h.close()


@pytest.mark.skipif(not nvcc_available(), reason="nvcc not on PATH")
def test_tma_tensor_map_encoding_links_without_libcuda():
    """Exo's host code for a TMA kernel calls the driver's cuTensorMapEncodeTiled;
    no libcuda.so is there to link, so the harness adds a shim that finds it at run
    time (without it, a batch with a TMA kernel fails to link here: no libcuda)."""
    encode = ('#include <cuda.h>\n#include "batch.h"\n'
              'void exo_encode(CUtensorMap* m) { cuTensorMapEncodeTiled(m, '
              'CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, 0, 0, 0, 0, 0, '
              'CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, '
              'CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE); }\n')
    h = Harness("cuda")
    try:
        b = h.build([case()], STANDIN | {"c": encode})
        assert b.ok, b.log
        assert "cudaGetDriverEntryPointByVersion" in (b.dir / "main.cu").read_text()
        plain = h.build([case()], STANDIN)
        assert "cuTensorMapEncodeTiled" not in (plain.dir / "main.cu").read_text()
    finally:
        h.close()
