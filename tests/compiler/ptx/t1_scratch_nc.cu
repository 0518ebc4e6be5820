// T1 (issue 23): NVVM merges the two arms' loads into one load from a `selp` of the
// two addresses and issues it as `ld.global.nc`: right for the read-only input g_x0,
// wrong for the scratch buffer this thread stored to just before. Hand-written in the
// shape and with the qualifiers the Bundl -> CUDA compiler emits (every pointer
// parameter `T* __restrict__`, speed.restrict_kernel_pointers; a `Global` scratch
// slot per unit, galloc.py). The static PTX check must flag it under every NVRTC.
#include "gpusem_rt.cuh"

extern "C" __global__ void bundl_main(int* __restrict__ g_x0, int* __restrict__ g_ot, int* __restrict__ gs_gscratch_int) {
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
