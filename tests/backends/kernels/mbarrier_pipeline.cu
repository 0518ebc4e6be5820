// mbarrier producer/consumer over two stages with phase parities. Warp 0 produces
// `rounds` tiles into a double buffer; warp 1 consumes them. full[s] (count 32) says a
// tile is in stage s, empty[s] (count 32) says the consumer has finished with it.
// Round r uses stage r % 2 and waits on phase parity (r / 2) % 2.
#include "gpusem_rt.cuh"

#ifndef PHASE_BUG
#define PHASE_BUG 0
#endif

extern "C" __global__ void mbarrier_pipeline(const float* in, float* out, int rounds) {
  __shared__ float buf[2][32];
  __shared__ gs_u64 full[2];
  __shared__ gs_u64 empty[2];
  int t = threadIdx.x, lane = t % 32;
  if (t < 2) {
    gs_mbar_init(&full[t], 32);
    gs_mbar_init(&empty[t], 32);
  }
  __syncthreads();
  for (int r = 0; r < rounds; r++) {
    int s = r % 2;
    unsigned parity = (unsigned)((r / 2) % 2);
    if (t < 32) {
      // the first use of each stage needs no wait: the buffer starts free
      if (r >= 2) gs_mbar_wait_parity(&empty[s], parity ^ 1u);
      buf[s][lane] = gs_fmul(in[r * 32 + lane], 3.0f);
      gs_mbar_arrive(&full[s]);
    } else {
      // the bug: waiting on the wrong parity passes at once and reads a stale stage
      gs_mbar_wait_parity(&full[s], PHASE_BUG ? parity ^ 1u : parity);
      out[r * 32 + lane] = gs_fadd(buf[s][lane], 1.0f);
      gs_mbar_arrive(&empty[s]);
    }
  }
}
