// T3: the driver's PTX JIT folds add.rn.f32 of two constants with the wrong rounding.
// -336208.71875f + 955830.9375f = 619622.21875, halfway between 619622.1875 and
// 619622.25: round-to-nearest-even gives 619622.25 (the host, offline ptxas).
#include <cstdio>
__global__ void k(float* out) { out[0] = __fadd_rn(-336208.719f, 955830.938f); }
int main() {
  float *d, h;
  cudaMalloc(&d, 4);
  k<<<1, 1>>>(d);
  if (cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost) != cudaSuccess) return 2;
  printf("out = %.4f, want 619622.2500\n", h);
  return h != 619622.25f;
}
