// cp.async.bulk (non-tensor TMA) global -> shared with an mbarrier's transaction count:
// thread 0 arms the barrier with arrive.expect_tx and starts the copy; everyone waits
// on phase 0, then reads.
#include "gpusem_rt.cuh"

extern "C" __global__ void bulk_copy(const int* in, int* out) {
  __shared__ __align__(16) int tile[128];
  __shared__ gs_u64 bar;
  int t = threadIdx.x;
  if (t == 0) {
    gs_mbar_init(&bar, 1);
    gs_fence_proxy_async();  // make the init visible to the async (TMA) proxy
  }
  __syncthreads();
  if (t == 0) {
    gs_mbar_arrive_expect_tx(&bar, 128 * 4);
    gs_bulk_copy_g2s(tile, in, 128 * 4, &bar);
  }
  gs_mbar_wait_parity(&bar, 0);
  out[t] = gs_mul_i32(tile[127 - t], 3);
}
