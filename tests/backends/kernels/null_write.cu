// A store far outside its buffer: the harness process dies ("crash") and the batch goes
// on (on a GPU: an illegal-address "runtime_error").
#include "gpusem_rt.cuh"

extern "C" __global__ void null_write(int* out) {
  long long far = (long long)threadIdx.x << 40;
  if (threadIdx.x == 3) out[far] = 1;
  out[threadIdx.x] = 1;
}
