// Exact int32 arithmetic helpers: wrap-around add/sub/mul/neg, C truncating division and
// remainder (INT_MIN / -1 wraps), shifts with the amount taken modulo 32.
#include "gpusem_rt.cuh"

extern "C" __global__ void int_arith(const int* a, const int* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  out[i * 8 + 0] = gs_add_i32(x, y);
  out[i * 8 + 1] = gs_sub_i32(x, y);
  out[i * 8 + 2] = gs_mul_i32(x, y);
  out[i * 8 + 3] = gs_neg_i32(x);
  out[i * 8 + 4] = y != 0 ? gs_div_i32(x, y) : 0;
  out[i * 8 + 5] = y != 0 ? gs_rem_i32(x, y) : 0;
  out[i * 8 + 6] = gs_shl_i32(x, y);
  out[i * 8 + 7] = gs_shr_i32(x, y);
}
