"""Where gpuir_cuda keeps a distributed register array (compiler/gpuir_cuda/
storage.py): the memory analysis's distributed dimensions, not a prefix of the shape
that happens to have as many cells as the CTA has threads (errata "Cypress lowering
to GPU IR": the accumulator of a 2-thread leaf in a 32-thread CTA)."""

from __future__ import annotations

from pathlib import Path

from gpusem.api import compile_file, exec_file
from gpusem.api.options import CompileOptions, ExecOptions

PROGRAM = """\
# defines: N=32
proc acc_prefix(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            acc: f32[2, 16] @ CudaRmem
            for t in cuda_threads(0, 2, unit=cuda_thread):
                for e in seq(0, 16):
                    acc[t, e] = A[t * 16 + e]
            for t in cuda_threads(0, 2, unit=cuda_thread):
                for e in seq(0, 16):
                    B[t * 16 + 15 - e] = acc[t, e]
"""


def test_a_prefix_with_as_many_cells_as_threads_is_not_taken_for_owners(
        tmp_path: Path) -> None:
    path = tmp_path / "acc_prefix.gpuir"
    path.write_text(PROGRAM)
    cuda = str(compile_file(str(path), CompileOptions()))
    assert "float acc[16]" in cuda
    run = exec_file(str(path), ExecOptions(backend="cpu"))
    assert run.agree, run


SWIZZLED = """\
# defines: N=32
proc padded(N: size, A: f32[N] @ CudaGmemLinear, B: f32[N] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            tile: f32[ROWS, 32] @ Sm90_SmemSwizzled(128)
            for t in cuda_threads(0, 32, unit=cuda_thread):
                tile[ROWS - 1, t] = A[t]
                B[31 - t] = tile[ROWS - 1, t]
"""


def test_swizzled_rows_are_padded_where_the_block_still_fits(tmp_path: Path) -> None:
    """storage.row_pad: rows of 128 bytes get 16 more (a bank group further each),
    and the kernel keeps the bits; at 1,800 rows the padding would pass the 227 KiB
    a block can have (pipeline.SMEM_BYTES), so that tile is stored unpadded."""
    path = tmp_path / "padded.gpuir"
    path.write_text(SWIZZLED.replace("ROWS", "8"))
    cuda = compile_file(str(path), CompileOptions()).source
    assert "// 288 x float in shared memory" in cuda  # 8 rows of 32 + 4
    assert "tile[gs_add_i32(gs_mul_i32(gs_sub_i32(8, 1), 36), t)]" in cuda
    run = exec_file(str(path), ExecOptions(backend="cpu"))
    assert run.agree, run
    path.write_text(SWIZZLED.replace("ROWS", "1800"))
    cuda = compile_file(str(path), CompileOptions()).source
    assert "// 57600 x float in shared memory" in cuda  # 1,800 rows of 32
