// Block reduction over 256 floats per block WITHOUT any barrier (a bug) (tree in shared memory).
#include "gpusem_rt.cuh"

extern "C" __global__ void reduce_nosync(const float* in, float* out) {
  __shared__ float s[256];
  int t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];

  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] = gs_fadd(s[t], s[t + stride]);

  }
  if (t == 0) out[blockIdx.x] = s[0];
}
