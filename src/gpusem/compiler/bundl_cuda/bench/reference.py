"""Independent references for the benchmark kernels, in the kernels' own order of
floating-point operations (so the comparison is bit for bit), plus the layout helper.

NumPy only (CPU): the reduction's order is vectorised over threads; the SGEMM order is
a naive CUDA kernel (`SGEMM_REFERENCE_CU`) the harness runs with CuPy on the GPU, since
4096^3 sequential float32 steps are too slow on a CPU.
"""

from __future__ import annotations

import numpy as np
from gpusem.calculus.fma32 import fma32_vec
from gpusem.compiler.bundl_cuda.bench.programs import ReduceSize, SgemmSize


def reduce_reference(x: np.ndarray, size: ReduceSize) -> np.ndarray:
    """out[b] exactly as the Bundl reduction computes it: thread t of block b folds
    x[b*chunk + i*8T + j*T + t] into accumulator j (i ascending, from 0.0); the eight
    are combined ((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7)); then the shared-memory tree
    v[t] = v[t] + v[t + h] for h = T/2, T/4, ..., 1."""
    T = size.threads
    xs = np.asarray(x, dtype=np.float32).reshape(size.blocks, size.per_thread // 8, 8, T)
    acc = np.zeros((8, size.blocks, T), dtype=np.float32)
    for i in range(xs.shape[1]):
        acc += np.moveaxis(xs[:, i], 1, 0)  # float32 + float32 -> float32, one rounding
    a = acc
    v = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
    h = T // 2
    while h > 0:
        v = v[:, :h] + v[:, h:2 * h]
        h //= 2
    return v[:, 0].copy()


def untile_c(c_tiled: np.ndarray, size: SgemmSize, xp=np):
    """The kernel's tiled C (block b, thread t, then the thread's 8 x 8 row-major) ->
    the row-major m x n matrix. Block b covers rows (b // nb) * bm, columns
    (b % nb) * bn; thread t rows (t // (bn/8)) * 8, columns (t % (bn/8)) * 8."""
    s = size
    if s.split_n:  # thread column t' covers 4t'..4t'+3 and bn/2 + 4t'.. (j = 4h + jj)
        seven = c_tiled.reshape(s.m // s.bm, s.n // s.bn, s.bm // 8, s.bn // 8, 8, 2, 4)
        return xp.ascontiguousarray(seven.transpose(0, 2, 4, 1, 5, 3, 6)).reshape(s.m, s.n)
    six = c_tiled.reshape(s.m // s.bm, s.n // s.bn, s.bm // 8, s.bn // 8, 8, 8)
    return xp.ascontiguousarray(six.transpose(0, 2, 4, 1, 3, 5)).reshape(s.m, s.n)


def tile_c(c: np.ndarray, size: SgemmSize, xp=np):
    """The inverse of `untile_c` (initial C for beta != 0)."""
    s = size
    if s.split_n:
        seven = c.reshape(s.m // s.bm, s.bm // 8, 8, s.n // s.bn, 2, s.bn // 8, 4)
        return xp.ascontiguousarray(seven.transpose(0, 3, 1, 5, 2, 4, 6)).reshape(-1)
    six = c.reshape(s.m // s.bm, s.bm // 8, 8, s.n // s.bn, s.bn // 8, 8)
    return xp.ascontiguousarray(six.transpose(0, 3, 1, 4, 2, 5)).reshape(-1)


# The SGEMM's order per output: acc = 0; acc = acc + A[i,k] * B[k,j] for k ascending
# (two roundings, or one fma: `fused` bit 0, under fast_fma or the explicit
# `fma(m, n, acc)` of SgemmSize.fma); C = alpha * acc + beta * C (`fused` bit 1, under
# fast_fma only: fma(alpha, acc, beta * C), as speed.contract_fma contracts it).
SGEMM_FUSED_DOT, SGEMM_FUSED_EPILOGUE = 1, 2
SGEMM_REFERENCE_CU = r"""
extern "C" __global__ void sgemm_reference(const float* A, const float* B,
                                           const float* AB, float* C,
                                           int m, int n, int k, int fused) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y;
  if (col >= n) return;
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) {
    float a = A[(long long)row * k + i], b = B[(long long)i * n + col];
    acc = (fused & 1) ? __fmaf_rn(a, b, acc) : __fadd_rn(acc, __fmul_rn(a, b));
  }
  long long at = (long long)row * n + col;
  float beta_c = __fmul_rn(AB[1], C[at]);
  C[at] = (fused & 2) ? __fmaf_rn(AB[0], acc, beta_c)
                      : __fadd_rn(__fmul_rn(AB[0], acc), beta_c);
}
"""


def sgemm_reference_cpu(a: np.ndarray, b: np.ndarray, ab: np.ndarray, c: np.ndarray,
                        size: SgemmSize) -> np.ndarray:
    """The same order on the CPU (small sizes only): float32 ops; with `size.fma` the
    dot product's explicit fma(a, b, acc), correctly rounded (interpreter.fma32)."""
    s = size
    A = a.reshape(s.m, s.k).astype(np.float32)
    B = b.reshape(s.k, s.n).astype(np.float32)
    acc = np.zeros((s.m, s.n), dtype=np.float32)
    for i in range(s.k):
        if s.fma:
            col, row = np.broadcast_arrays(A[:, i:i + 1], B[i:i + 1, :])
            acc = fma32_vec(col, row, acc)
        else:
            acc = acc + np.outer(A[:, i], B[i, :]).astype(np.float32)
    alpha, beta = np.float32(ab[0]), np.float32(ab[1])
    return alpha * acc + beta * c.reshape(s.m, s.n).astype(np.float32)
