#ifndef GPUSEM_RT_CUH
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GS_DEV __device__ __forceinline__
#ifndef GPUSEM_SIMT_HARNESS_H
#ifndef GPUSEM_SIMT_CORE_H
#endif  // GPUSEM_SIMT_INTRINSICS_H
#endif  // GPUSEM_SIMT_HARNESS_H
#endif
GS_DEV int gs_div_i32(int a, int b) {
}
#if GS_CUDA
#endif
#endif  // GPUSEM_RT_CUH
namespace gs_k0 {
#line 1 "k0_src.cu"
GS_DEV int gs_floor_div(int a, int b) {
}
#if GS_CUDA
#endif
 __global__ void bundl_main(int* __restrict__ g_x0, int* __restrict__ g_out) {
}
}
namespace gs_k1 {
#line 1 "k1_src.cu"
#if GS_CUDA
#endif
 __global__ void bundl_main() {
}
}
