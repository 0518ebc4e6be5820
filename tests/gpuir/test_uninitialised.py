"""Reads of memory a program never wrote (issue 16's first H100 compile census): CUDA
leaves a fresh allocation undefined, the sequential reading zero-fills it, so such a
program's outputs cannot be compared; `reads_uninitialised` tells them apart by a second
run with fresh allocations poisoned, and the Exo compile property does not compare
them."""

from __future__ import annotations

import numpy as np
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.interpreter.gpuir.sequential import reads_uninitialised, run_sequential

# The H100 census's first `compile:wrong:B` program, reduced: row 1 of buf is updated
# with += before anything wrote it.
UPDATE_OF_FRESH = """
proc gen(A: f32[32] @ CudaGmemLinear, B: f32[32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            buf: f32[2, 32] @ CudaSmemLinear
            for tid in cuda_threads(0, 32, unit=cuda_thread):
                buf[0, tid] = A[tid]
            Fence(cuda_in_order, cuda_in_order)
            for tid in cuda_threads(0, 32, unit=cuda_thread):
                buf[1, tid] {op} buf[0, tid] + 1.5
            Fence(cuda_in_order, cuda_in_order)
            for tid in cuda_threads(0, 32, unit=cuda_thread):
                B[tid] = buf[1, tid]
            Fence(cuda_in_order, cuda_in_order)
"""


def check(op: str) -> str | None:
    proc = parse_module(UPDATE_OF_FRESH.format(op=op), "p.gpuir").procs[-1]
    inputs = {"A": np.arange(32, dtype=np.float32), "B": np.ones(32, np.float32)}
    expected = run_sequential(proc, {}, inputs)
    return reads_uninitialised(proc, {}, inputs, expected)


def test_an_update_of_fresh_memory_is_detected() -> None:
    assert check("+=") == "B[0]"


def test_a_program_that_writes_first_is_not() -> None:
    assert check("=") is None


def test_the_zero_filled_reading_is_unchanged() -> None:
    proc = parse_module(UPDATE_OF_FRESH.format(op="+="), "p.gpuir").procs[-1]
    out = run_sequential(proc, {}, {"A": np.arange(32, dtype=np.float32)})
    assert out["B"].tolist() == [i + 1.5 for i in range(32)]
