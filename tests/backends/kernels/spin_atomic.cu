// Thread 0 spins on a flag that block 1 sets: blocks run one after another on the
// harness, so the spin (through atomics, a preemption point) exhausts the step budget.
#include "gpusem_rt.cuh"

extern "C" __global__ void spin_atomic(int* flag, int* out) {
  if (blockIdx.x == 1) {
    atomicExch(flag, 1);
    return;
  }
  while (atomicAdd(flag, 0) == 0) {
  }
  out[threadIdx.x] = 1;
}
