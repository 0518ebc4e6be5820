// T1 control: the same kernel without `__restrict__` on the read-only parameter
// g_x0, where NVVM (issue 23) keeps the two loads apart. The check must hold.
#include "gpusem_rt.cuh"

extern "C" __global__ void bundl_main(int* g_x0, int* __restrict__ g_ot, int* __restrict__ gs_gscratch_int) {
  extern __shared__ __align__(16) unsigned char gs_smem[];
  {
    // alloc st : int[1] in Global (S-Alloc-Global)
    int* v_st = (gs_gscratch_int + 0 + (int)blockIdx.x / 1 * 1);
    const int p1 = (int)threadIdx.x;
    v_st[0] = gs_add_i32(p1, 7);
    if (0 < p1) {
      g_ot[p1] = g_x0[1];
    } else {
      g_ot[p1] = v_st[0];
    }
    g_ot[p1] = gs_add_i32(g_ot[p1], 1);
  }
}
