// A kernel that issues wgmma (no CPU meaning): the cpu backend reports "unsupported".
// Launched with one warpgroup (128 threads), as the .sync.aligned forms require.
#include "gpusem_rt.cuh"

extern "C" __global__ void wgmma_fence(float* out) {
  out[threadIdx.x] = 1.0f;
  gs_wgmma_fence();
  gs_wgmma_commit_group();
  gs_wgmma_wait_group(0);
  out[threadIdx.x] = 2.0f;
}
