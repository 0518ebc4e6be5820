// T1 of issue 23, by hand in the style our Bundl compiler emits (emit.py: one pointer
// parameter per global and per `alloc in Global` scratch array, all __restrict__; the
// read-only input spelled `const` here, as the issue's shrunk kernel had it).
// Each thread stores into its own scratch cell, then reads back either the input
// x0[1] or the cell it just stored, and adds 1. C++ says out = [x0[0] + 8, x0[1] + 1,
// ...]. Measured on an H200 (nvcc 13.0, NVRTC): NVVM merges the two loads of the
// if/else into ONE load from a selp of the two addresses, and emits it as
// ld.global.nc (read-only path): legal for x0, not for the scratch cell the thread
// wrote a moment before, which then reads stale (0): out[0] = 1.
#include "gpusem_rt.cuh"

extern "C" __global__ void bundl_main(const int* __restrict__ g_x0, int* __restrict__ g_out, int* __restrict__ gs_gscratch_int) {
  extern __shared__ __align__(16) unsigned char gs_smem[];
  // destruct (S-Destruct-Block)
  const int p1 = (int)threadIdx.x;
  // alloc st : int[1] in Global at thread[1] (S-Alloc-Global)
  int* v_st = (gs_gscratch_int + p1);
  // partition out into ot by n (S-Partition)
  int* v_ot = (g_out + p1);
  v_st[0] = gs_add_i32(g_x0[0], 7);
  if (0 < p1) {
    v_ot[0] = g_x0[1];
  } else {
    v_ot[0] = v_st[0];
  }
  v_ot[0] = gs_add_i32(v_ot[0], 1);
}
