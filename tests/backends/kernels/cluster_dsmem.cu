// A thread-block cluster of 4 CTAs (64 threads each): every CTA fills its own shared
// array and arms two mbarriers; after the cluster barrier, CTA 0's thread 0 multicasts
// one global row into `tile` of every CTA (each completing its own mbarrier's tx), each
// CTA's thread 0 arrives on the next CTA's mbarrier (a remote arrive), and every thread
// reads the next CTA's array through distributed shared memory (mapa). The final
// cluster barrier keeps every CTA's shared memory alive until the remote reads end.
#include "gpusem_rt.cuh"

#if GS_CUDA
extern "C" __global__ void __cluster_dims__(4, 1, 1) cluster_dsmem(const int* in, int* out) {
#else
extern "C" __global__ void cluster_dsmem(const int* in, int* out) {
#endif
  gs_cluster_dims(4, 1, 1);
  extern __shared__ __align__(16) unsigned char smem[];
  int* mine = reinterpret_cast<int*>(smem);
  int* tile = reinterpret_cast<int*>(smem + 256);
  gs_u64* bar = reinterpret_cast<gs_u64*>(smem + 512);  // [0] the copy, [1] the remote arrive
  const unsigned rank = gs_cluster_ctarank();
  const int t = threadIdx.x;
  mine[t] = gs_add_i32(gs_mul_i32((int)rank, 1000), t);
  if (t == 0) {
    gs_mbar_init(&bar[0], 1);
    gs_mbar_init(&bar[1], 1);
    gs_fence_mbarrier_init_cluster();
  }
  gs_cluster_arrive();
  gs_cluster_wait();
  if (t == 0) {
    gs_mbar_arrive_expect_tx(&bar[0], 256);
    gs_mbar_arrive_remote(&bar[1], (rank + 1) % 4);
  }
  if (rank == 0 && t == 0)
    gs_bulk_copy_g2s_multicast(tile, in + (blockIdx.x / 4) * 64, 256, &bar[0], 0xF);
  gs_mbar_wait_parity(&bar[0], 0);
  gs_mbar_wait_parity(&bar[1], 0);
  const int* next = gs_map_shared_rank(mine, (rank + 1) % 4);
  out[blockIdx.x * 64 + t] = gs_add_i32(next[t], tile[63 - t]);
  gs_cluster_arrive();
  gs_cluster_wait();
}
