#include <cstdio>
__global__ void b(int* c, int* d) {
  extern __shared__ unsigned char f[];
  int* j = reinterpret_cast<int*>(f);
  int* l = j;
  int* q = (l);
  int* u = (q);
  u[0] = c[0];
}
#define CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    printf("kernel failed: %s at line %d: %s\n", #call, __LINE__, \
           cudaGetErrorString(e_)); return 1; } } while (0)
int main() {
  int* w = nullptr;
  int* x = nullptr;
  b<<<1, 1>>>(w, x);
  unsigned char y[sizeof(int) * 0 + 1];
  CHECK(cudaMemcpy(y, x, 0, cudaMemcpyDeviceToHost));
  if (memcmp(0, 0, 0)) {
    return 1;
  }
}
