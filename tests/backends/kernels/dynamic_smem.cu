// Dynamic shared memory (extern __shared__): reverse a block's slice through it.
#include "gpusem_rt.cuh"

extern "C" __global__ void dynamic_smem(const float* in, float* out) {
  extern __shared__ float buf[];
  int t = threadIdx.x, n = blockDim.x, base = blockIdx.x * n;
  buf[t] = in[base + t];
  __syncthreads();
  out[base + t] = buf[n - 1 - t];
}
