// Every gs_* wrapper and CUDA intrinsic the harness provides, in one kernel: it must
// build with g++ (cpu harness) and with nvcc for sm_90a (the CUDA spellings). It is
// compiled, never launched.
#include "gpusem_rt.cuh"

__device__ int helper(int x) { return gs_add_i32(x, 1); }

extern "C" __global__ void api_surface(float* f, int* i, unsigned* u,
                                       unsigned long long* q, const float* tmap) {
  __shared__ __align__(16) float tile[64];
  __shared__ gs_u64 bar;
  extern __shared__ int dyn[];
  int t = threadIdx.x + threadIdx.y + threadIdx.z + blockIdx.x + blockIdx.y + blockIdx.z;
  t += (int)(blockDim.x + gridDim.x + warpSize);
  i[0] = gs_sub_i32(gs_mul_i32(t, 3), gs_neg_i32(t)) + gs_shl_i32(t, 2) + gs_shr_i32(t, 1);
  u[0] = gs_shr_u32(u[0], 3);
  i[1] = gs_div_i32(t, 3) + gs_rem_i32(t, 3) + helper(t) + dyn[0];
  f[0] = gs_fadd(gs_fsub(f[1], f[2]), gs_fmul(gs_fdiv(f[3], f[4]), gs_fsqrt(f[5])));
  f[1] = gs_ffma(f[0], f[1], f[2]) + gs_i2f(gs_f2i(f[3]));
  f[2] = __fadd_rn(__fsub_rn(f[0], f[1]), __fmul_rn(__fdiv_rn(f[2], f[3]), __fsqrt_rn(f[4])));
  f[3] = __fmaf_rn(f[0], f[1], f[2]) + __int_as_float(__float_as_int(f[4]));
  f[4] = __uint_as_float(__float_as_uint(f[5])) + min(f[0], f[1]) + max(f[2], f[3]);
  i[2] = __popc(u[1]) + __popcll(q[0]) + __clz(i[3]) + __ffs(i[4]) + (int)__brev(u[2]);
  i[3] = __mulhi(i[0], i[1]) + (int)__umulhi(u[0], u[1]) + min(i[0], i[1]) + max(i[2], i[3]);
  i[4] = __ldg(&i[5]) + (int)min(i[0], u[0]) + (int)max(u[1], i[1]);
  q[4] = min(q[0], q[1]) + max(q[2], q[3]);
  f[10] = (float)(min(1.0, (double)f[0]) + max(2.0, (double)f[1]));
  __syncthreads();
  i[5] = __syncthreads_count(t > 3) + __syncthreads_and(t > 1) + __syncthreads_or(t > 2);
  __syncwarp();
  __syncwarp(0xffffffffu);
  int s = __shfl_sync(0xffffffffu, t, 0) + __shfl_up_sync(0xffffffffu, t, 1);
  s += __shfl_down_sync(0xffffffffu, t, 1, 16) + __shfl_xor_sync(0xffffffffu, t, 1);
  float fs = __shfl_xor_sync(0xffffffffu, f[0], 2);
  s += (int)__ballot_sync(0xffffffffu, s > 0) + __any_sync(0xffffffffu, s) + __all_sync(0xffffffffu, s);
  s += (int)__activemask();
  atomicAdd(&i[6], s);
  atomicAdd(&u[3], 1u);
  atomicAdd(&q[1], 1ull);
  atomicAdd(&f[6], fs);
  atomicSub(&i[7], 1);
  atomicExch(&i[8], 2);
  atomicExch(&f[7], 1.0f);
  atomicMax(&i[9], t);
  atomicMin(&u[4], 7u);
  atomicCAS(&i[10], 0, 1);
  atomicCAS(&q[2], 0ull, 1ull);
  atomicAnd(&i[11], 1);
  atomicOr(&u[5], 2u);
  atomicXor(&i[12], 3);
  atomicInc(&u[6], 10u);
  atomicDec(&u[7], 10u);
  __threadfence();
  __threadfence_block();
  __threadfence_system();
  __nanosleep(10);
  if (threadIdx.x == 0) gs_mbar_init(&bar, 1);
  gs_fence_proxy_async();
  __syncthreads();
  gs_bar_sync(1, 32);
  gs_bar_arrive(2, 64);
  gs_u64 tok = gs_mbar_arrive(&bar);
  tok += gs_mbar_arrive_count(&bar, 1) + gs_mbar_arrive_expect_tx(&bar, 16);
  gs_mbar_expect_tx(&bar, 16);
  q[3] = tok + gs_mbar_try_wait_parity(&bar, 0) + gs_mbar_test_wait_parity(&bar, 1);
  gs_mbar_wait_parity(&bar, 0);
  gs_cp_async(&tile[0], &f[8], 4);
  gs_cp_async(&tile[4], &f[8], 16);
  gs_cp_async(&tile[8], &f[8], 8);
  gs_cp_async_commit();
  gs_cp_async_wait_group(0);
  gs_cp_async_wait_all();
  gs_cp_async_mbar_arrive(&bar);
  gs_cp_async_mbar_arrive_noinc(&bar);
  gs_bulk_copy_g2s(tile, f, 64, &bar);
  gs_wgmma_fence();
  gs_wgmma_commit_group();
  gs_wgmma_wait_group(1);
  gs_tma_load_2d(tile, tmap, &bar, 0, 0);
  GS_PTX_ONLY("setmaxnreg", asm volatile("setmaxnreg.inc.sync.aligned.u32 240;"));
  if (i[0] == 12345) gs_trap("api surface");
  f[9] = tile[threadIdx.x % 64];
}
