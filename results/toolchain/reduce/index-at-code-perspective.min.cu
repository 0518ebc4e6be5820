#include <cstdio>
__global__ void b(int* c, int* __restrict__ d) {
  int* g = d;
  int* j = g;
  int k = 0;
  int l = c[k];
  int* n = (j);
  n[0] = l;
}
#define CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    printf("kernel failed: %s at line %d: %s\n", #call, __LINE__, \
           cudaGetErrorString(e_)); return 1; } } while (0)
int main() {
  int* p = nullptr;
  int* q = nullptr;
  b<<<1, 1>>>(p, q);
  unsigned char r[sizeof(int) * 0 + 1];
  CHECK(cudaMemcpy(r, q, 0, cudaMemcpyDeviceToHost));
  if (memcmp(0, 0, 0)) {
    return 1;
  }
}
