// Warp-specialised producer/consumer with named barriers (bar.arrive / bar.sync):
// warp 0 fills a tile, arrives at barrier 1; warps 1-2 sync on barrier 1 (96 threads),
// read the tile, then all three warps meet at barrier 2 before the next round.
#include "gpusem_rt.cuh"

extern "C" __global__ void named_barriers(const int* in, int* out, int rounds) {
  __shared__ int tile[64];
  int t = threadIdx.x;
  int warp = t / 32;
  for (int r = 0; r < rounds; r++) {
    if (warp == 0) {
      tile[t] = in[r * 64 + t] * 2;
      tile[t + 32] = in[r * 64 + t + 32] * 2;
      gs_bar_arrive(1, 96);
    } else {
      gs_bar_sync(1, 96);
      int i = t - 32;
      out[r * 64 + i] = gs_add_i32(tile[i], r);
    }
    gs_bar_sync(2, 96);
  }
}
