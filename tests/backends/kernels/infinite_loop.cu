// A loop that never ends and never blocks: a timeout (watchdog) on both backends.
#include "gpusem_rt.cuh"

extern "C" __global__ void infinite_loop(volatile int* flag, int* out) {
  int i = 0;
  while (flag[0] == 0) i = gs_add_i32(i, 1);
  out[threadIdx.x] = i;
}
