// Atomics from 2 blocks x 128 threads: an int histogram (atomicAdd), max/min, a float
// sum of small integers (exact in float32), an exchange counter, and a spin lock built
// from atomicCAS / atomicExch protecting a plain increment.
#include "gpusem_rt.cuh"

extern "C" __global__ void atomics(const int* in, int* hist, int* stats, float* fsum,
                                   int* lock, volatile int* locked_count) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[g];
  atomicAdd(&hist[v & 7], 1);
  atomicMax(&stats[0], v);
  atomicMin(&stats[1], v);
  atomicAdd(fsum, (float)(v & 15));
  atomicExch(&stats[2], 7);
  while (atomicCAS(lock, 0, 1) != 0) {
  }
  locked_count[0] = locked_count[0] + 1;  // safe: inside the lock
  __threadfence();
  atomicExch(lock, 0);
}
