// T1: NVVM loads st[0] with ld.global.nc (selp of x0+1 and st) after writing it.
#include <cstdio>
__global__ void k(const int* __restrict__ x0, int* st, int* ot) {
  int pid = threadIdx.x;
  st[pid] = pid;
  if (0 < pid) ot[0] = x0[1]; else ot[0] = st[0];
  ot[0] = ot[0] + 1;
}
int main() {  // one thread: pid 0 reads back its own st[0] = 0, so ot[0] must be 1
  int h[2] = {42, 42}, *x, *s, *o, r = -1;
  cudaMalloc(&x, 8); cudaMalloc(&s, 8); cudaMalloc(&o, 4);
  cudaMemcpy(x, h, 8, cudaMemcpyHostToDevice); cudaMemcpy(s, h, 8, cudaMemcpyHostToDevice);
  k<<<1, 1>>>(x, s, o);
  if (cudaMemcpy(&r, o, 4, cudaMemcpyDeviceToHost) != cudaSuccess) return 2;
  printf("ot[0] = %d, want 1\n", r);
  return r != 1;
}
