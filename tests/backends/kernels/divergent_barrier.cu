// __syncthreads inside a branch only half of the block takes: a deadlock on the harness
// (threads 0..63 wait at barrier 0 for 128, threads 64..127 exit).
#include "gpusem_rt.cuh"

extern "C" __global__ void divergent_barrier(int* out) {
  int t = threadIdx.x;
  if (t < 64) {
    out[t] = t;
    __syncthreads();
    out[t] += 1;
  }
}
