// Warp shuffles as collectives: a butterfly sum with __shfl_xor_sync, a tree sum with
// __shfl_down_sync, a broadcast with __shfl_sync, a scan step with __shfl_up_sync,
// and a ballot. Block of 64 threads = 2 warps.
#include "gpusem_rt.cuh"

extern "C" __global__ void shuffles(const int* in, int* out) {
  int t = threadIdx.x, lane = t % 32;
  int v = in[t];
  int x = v;
  for (int m = 16; m > 0; m >>= 1) x = gs_add_i32(x, __shfl_xor_sync(0xffffffffu, x, m));
  int d = v;
  for (int o = 16; o > 0; o >>= 1) d = gs_add_i32(d, __shfl_down_sync(0xffffffffu, d, o));
  int b = __shfl_sync(0xffffffffu, v, 7);
  int u = __shfl_up_sync(0xffffffffu, v, 1);
  unsigned bal = __ballot_sync(0xffffffffu, v % 2 != 0);
  out[t * 5 + 0] = x;
  out[t * 5 + 1] = lane == 0 ? d : 0;
  out[t * 5 + 2] = b;
  out[t * 5 + 3] = u;
  out[t * 5 + 4] = (int)bal;
}
