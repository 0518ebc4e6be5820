// T2: ptxas (sm_90) folds min(a - x, 0), a = 3 + a shuffle of 0, into min(x - 3, 0).
#include <cstdio>
__global__ void k(const int* x, int* out, int* acc) {
  int a = 3 + __shfl_xor_sync(0xffffffffu, 0, 1);  // 3 in every lane
  atomicAdd(acc, a);
  out[threadIdx.x] = min(a - x[threadIdx.x], 0);    // x = 0: min(3, 0) = 0
}
int main() {
  int *x, *out, *acc, o[32];
  cudaMalloc(&x, 128); cudaMalloc(&out, 128); cudaMalloc(&acc, 4);
  cudaMemset(x, 0, 128); cudaMemset(acc, 0, 4);
  k<<<1, 32>>>(x, out, acc);
  if (cudaMemcpy(o, out, 128, cudaMemcpyDeviceToHost) != cudaSuccess) return 2;
  printf("out[0] = %d, want 0\n", o[0]);
  return o[0] != 0;
}
