// float32 exactness: every op rounds to float32, and a * b + c is two roundings (no FMA
// contraction), compared bit for bit with NumPy float32.
#include "gpusem_rt.cuh"

extern "C" __global__ void float_arith(const float* a, const float* b, const float* c,
                                       float* out, int* conv, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i], z = c[i];
  out[i * 6 + 0] = gs_fadd(gs_fmul(x, y), z);
  out[i * 6 + 1] = gs_fsub(x, y);
  out[i * 6 + 2] = gs_fdiv(x, y);
  out[i * 6 + 3] = gs_fsqrt(gs_fmul(x, x));
  out[i * 6 + 4] = x * y + z;  // plain operators: --fmad=false / -ffp-contract=off
  out[i * 6 + 5] = gs_i2f(gs_f2i(gs_fmul(x, 1000.0f)));
  conv[i] = gs_f2i(gs_fmul(x, 1.0e9f));
}
