// __syncwarp orders a warp's shared-memory exchange; __syncthreads_count counts a
// predicate over the block.
#include "gpusem_rt.cuh"

extern "C" __global__ void warp_sync(const int* in, int* out) {
  __shared__ int s[64];
  int t = threadIdx.x;
  s[t] = in[t];
  __syncwarp();
  int nb = s[(t % 32 == 31) ? t - 31 : t + 1];
  int c = __syncthreads_count(in[t] > 0);
  out[t] = gs_add_i32(nb, c);
}
