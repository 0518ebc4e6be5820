// gs_div_i32 by zero traps: "runtime_error" with a "trap: division by zero" message.
#include "gpusem_rt.cuh"

extern "C" __global__ void div_by_zero(const int* a, int* out) {
  out[threadIdx.x] = gs_div_i32(a[threadIdx.x], a[0]);
}
