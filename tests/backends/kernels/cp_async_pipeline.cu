// cp.async global -> shared in two commit groups, then wait_group before reading.
// WAIT=0 removes the waits: the harness completes copies lazily, so the reads see the
// poisoned (stale) shared memory.
#include "gpusem_rt.cuh"

#ifndef WAIT
#define WAIT 1
#endif

extern "C" __global__ void cp_async_pipeline(const int* in, int* out) {
  __shared__ int a[128];
  __shared__ int b[128];
  int t = threadIdx.x;
  gs_cp_async(&a[t], &in[t], 4);
  gs_cp_async_commit();
  gs_cp_async(&b[t], &in[128 + t], 4);
  gs_cp_async_commit();
  if (WAIT) gs_cp_async_wait_group(1);  // group 0 (a) has landed, b may be in flight
  __syncthreads();
  int x = a[(t + 1) % 128];
  if (WAIT) gs_cp_async_wait_all();
  __syncthreads();
  out[t] = gs_add_i32(x, b[(t + 5) % 128]);
}
