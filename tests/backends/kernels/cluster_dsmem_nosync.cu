// The bug cluster_dsmem's first cluster barrier prevents: a thread reads the next CTA's
// shared array through distributed shared memory before that CTA has written it.
#include "gpusem_rt.cuh"

#if GS_CUDA
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_dsmem_nosync(int* out) {
#else
extern "C" __global__ void cluster_dsmem_nosync(int* out) {
#endif
  gs_cluster_dims(2, 1, 1);
  extern __shared__ __align__(16) unsigned char smem[];
  int* mine = reinterpret_cast<int*>(smem);
  const unsigned rank = gs_cluster_ctarank();
  const int t = threadIdx.x;
  mine[t] = gs_add_i32((int)rank, t);
  const int* next = gs_map_shared_rank(mine, (rank + 1) % 2);
  out[blockIdx.x * 32 + t] = next[t];
  gs_cluster_arrive();
  gs_cluster_wait();
}
