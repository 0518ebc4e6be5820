// gpusem_rt.cuh: the portable device runtime that generated kernels call.
//
// One `.cu` text runs on both backends. Under nvcc / NVRTC (`__CUDACC__` or
// `__CUDACC_RTC__`) every `gs_*` helper below is real CUDA or PTX for sm_90a; otherwise
// the header pulls in `simt_harness.h`, the CPU SIMT harness (one fibre per CUDA
// thread, real barriers, lazy async copies), and the same helpers are implemented there.
//
// The contract for code generators (stable; compiler/backends/README.md has the list):
//   - kernels are `extern "C" __global__ void name(...)`; parameters are pointers to
//     int/unsigned/float/long long/unsigned long long/double/char/short types, or scalars;
//   - exact arithmetic goes through gs_add_i32 ... gs_fdiv (no signed-overflow UB, no
//     FMA contraction, C truncating division with INT_MIN / -1 wrapping);
//   - synchronisation: __syncthreads, __syncwarp, gs_bar_sync / gs_bar_arrive (named
//     barriers), gs_mbar_* (mbarriers), gs_cp_async* (cp.async groups),
//     gs_bulk_copy_g2s (cp.async.bulk with mbarrier complete_tx);
//   - gs_elect_one (elect.sync over the whole warp: true in one lane);
//   - gs_setmaxnreg_dec(N) / gs_setmaxnreg_inc(N) (setmaxnreg; a no-op on the cpu);
//   - thread-block clusters: gs_cluster_dims(x, y, z) at kernel entry (the kernel is
//     declared __cluster_dims__(x, y, z) under nvcc; the cpu harness checks the launch),
//     gs_cluster_arrive / gs_cluster_wait (barrier.cluster), gs_cluster_ctarank,
//     gs_map_shared_rank (mapa: distributed shared memory), gs_mbar_arrive_remote,
//     gs_bulk_copy_g2s_multicast (cp.async.bulk .multicast::cluster);
//   - PTX with no CPU meaning: gs_wgmma_*, gs_tma_*, or any statement wrapped in
//     GS_PTX_ONLY("what", stmt); on the cpu backend executing one aborts the kernel with
//     result kind "unsupported" ("unsupported: what"). Raw `asm` outside GS_PTX_ONLY is
//     reported "unsupported" by the cpu backend before building.
#ifndef GPUSEM_RT_CUH
#define GPUSEM_RT_CUH

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GS_CUDA 1
#define GS_DEV __device__ __forceinline__
#define GS_PTX_ONLY(what, ...) __VA_ARGS__
#else
#define GS_CUDA 0
#include "simt_harness.h"
#define GS_DEV static inline
#define GS_PTX_ONLY(what, ...) ::gs::unsupported(what)
#endif

typedef int gs_i32;
typedef unsigned int gs_u32;
typedef long long gs_i64;
typedef unsigned long long gs_u64;

#define GS_INT_MIN (-2147483647 - 1)

// ---------------------------------------------------------------------------------
// Exact int32 arithmetic: computed through uint32 so that overflow wraps (two's
// complement) instead of being undefined behaviour in C++ or CUDA.
GS_DEV int gs_add_i32(int a, int b) { return (int)((gs_u32)a + (gs_u32)b); }
GS_DEV int gs_sub_i32(int a, int b) { return (int)((gs_u32)a - (gs_u32)b); }
GS_DEV int gs_mul_i32(int a, int b) { return (int)((gs_u32)a * (gs_u32)b); }
GS_DEV int gs_neg_i32(int a) { return (int)(0u - (gs_u32)a); }
// Shifts: the amount is taken modulo 32 on both backends (C++ leaves >= 32 undefined
// and PTX clamps; the calculi never shift by more than 31, so one fixed choice).
GS_DEV int gs_shl_i32(int a, int s) { return (int)((gs_u32)a << (s & 31)); }
GS_DEV int gs_shr_i32(int a, int s) { return a >> (s & 31); }
GS_DEV gs_u32 gs_shr_u32(gs_u32 a, int s) { return a >> (s & 31); }

GS_DEV void gs_trap(const char* why);

// C truncating division and remainder; INT_MIN / -1 wraps to INT_MIN and
// INT_MIN % -1 is 0 (both undefined in C++); division by zero traps (cpu: result
// kind "runtime_error" with message "trap: division by zero"; cuda: __trap()).
GS_DEV int gs_div_i32(int a, int b) {
  if (b == 0) gs_trap("division by zero");
  if (b == -1) return gs_neg_i32(a);
  return a / b;
}
GS_DEV int gs_rem_i32(int a, int b) {
  if (b == 0) gs_trap("remainder by zero");
  if (b == -1) return 0;
  return a % b;
}

// ---------------------------------------------------------------------------------
// float32 arithmetic, round-to-nearest-even, never contracted into FMA.
#if GS_CUDA
GS_DEV float gs_fadd(float a, float b) { return __fadd_rn(a, b); }
GS_DEV float gs_fsub(float a, float b) { return __fsub_rn(a, b); }
GS_DEV float gs_fmul(float a, float b) { return __fmul_rn(a, b); }
GS_DEV float gs_fdiv(float a, float b) { return __fdiv_rn(a, b); }
GS_DEV float gs_fsqrt(float a) { return __fsqrt_rn(a); }
GS_DEV float gs_ffma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
// float -> int32 truncating; saturates, NaN -> 0 (PTX cvt.rzi.s32.f32).
GS_DEV int gs_f2i(float a) { return __float2int_rz(a); }
GS_DEV float gs_i2f(int a) { return __int2float_rn(a); }
GS_DEV void gs_trap(const char* why) { (void)why; __trap(); }
#else
GS_DEV float gs_fadd(float a, float b) { return ::gs::fop(a + b); }
GS_DEV float gs_fsub(float a, float b) { return ::gs::fop(a - b); }
GS_DEV float gs_fmul(float a, float b) { return ::gs::fop(a * b); }
GS_DEV float gs_fdiv(float a, float b) { return ::gs::fop(a / b); }
GS_DEV float gs_fsqrt(float a) { return sqrtf(a); }
GS_DEV float gs_ffma(float a, float b, float c) { return fmaf(a, b, c); }
GS_DEV int gs_f2i(float a) {
  if (a != a) return 0;
  if (a >= 2147483648.0f) return 2147483647;
  if (a <= -2147483648.0f) return GS_INT_MIN;
  return (int)a;
}
GS_DEV float gs_i2f(int a) { return (float)a; }
GS_DEV void gs_trap(const char* why) { ::gs::trap(why); }
#endif

// ---------------------------------------------------------------------------------
// Synchronisation and asynchronous copies.
#if GS_CUDA
GS_DEV unsigned gs_smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
// Named barriers (bar.sync / bar.arrive id, nthreads); nthreads a multiple of 32.
GS_DEV void gs_bar_sync(int id, int nthreads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}
GS_DEV void gs_bar_arrive(int id, int nthreads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(nthreads) : "memory");
}
// mbarriers: a 64-bit word in shared memory.
GS_DEV void gs_mbar_init(gs_u64* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(gs_smem_addr(bar)),
               "r"(count)
               : "memory");
}
GS_DEV gs_u64 gs_mbar_arrive(gs_u64* bar) {
  gs_u64 state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];"
               : "=l"(state)
               : "r"(gs_smem_addr(bar))
               : "memory");
  return state;
}
// One thread arriving on behalf of `count` (e.g. an elected lane for its warp).
GS_DEV gs_u64 gs_mbar_arrive_count(gs_u64* bar, unsigned count) {
  gs_u64 state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1], %2;"
               : "=l"(state)
               : "r"(gs_smem_addr(bar)), "r"(count)
               : "memory");
  return state;
}
GS_DEV gs_u64 gs_mbar_arrive_expect_tx(gs_u64* bar, unsigned tx_bytes) {
  gs_u64 state;
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
               : "=l"(state)
               : "r"(gs_smem_addr(bar)), "r"(tx_bytes)
               : "memory");
  return state;
}
GS_DEV void gs_mbar_expect_tx(gs_u64* bar, unsigned tx_bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(
                   gs_smem_addr(bar)),
               "r"(tx_bytes)
               : "memory");
}
// True when the phase with parity `parity` has completed (may suspend a while first).
GS_DEV bool gs_mbar_try_wait_parity(gs_u64* bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
      "selp.u32 %0, 1, 0, p; }"
      : "=r"(ok)
      : "r"(gs_smem_addr(bar)), "r"(parity)
      : "memory");
  return ok != 0;
}
GS_DEV bool gs_mbar_test_wait_parity(gs_u64* bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; "
      "selp.u32 %0, 1, 0, p; }"
      : "=r"(ok)
      : "r"(gs_smem_addr(bar)), "r"(parity)
      : "memory");
  return ok != 0;
}
GS_DEV void gs_mbar_wait_parity(gs_u64* bar, unsigned parity) {
  while (!gs_mbar_try_wait_parity(bar, parity)) {
  }
}
// The arrive-on triggered when all prior cp.async of this thread complete; the plain
// form raises the pending count first, `noinc` counts as one of the init count.
GS_DEV void gs_cp_async_mbar_arrive(gs_u64* bar) {
  asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];" ::"r"(gs_smem_addr(bar))
               : "memory");
}
GS_DEV void gs_cp_async_mbar_arrive_noinc(gs_u64* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(
                   gs_smem_addr(bar))
               : "memory");
}
// cp.async global -> shared of 4, 8 or 16 bytes (the immediate PTX needs).
GS_DEV void gs_cp_async(void* dst, const void* src, int bytes) {
  unsigned d = gs_smem_addr(dst);
  gs_u64 s = (gs_u64)__cvta_generic_to_global(src);  // no size_t: NVRTC has no <cstddef>
  if (bytes == 16)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(d), "l"(s) : "memory");
  else if (bytes == 8)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(d), "l"(s) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(s) : "memory");
}
GS_DEV void gs_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// N must be a constant expression (PTX immediate).
#define gs_cp_async_wait_group(N) \
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory")
GS_DEV void gs_cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
// Every bulk async-group of this thread complete (cp.async.bulk.wait_group 0).
GS_DEV void gs_bulk_wait_all() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
// Bulk (TMA, non-tensor) copy global -> shared, completing `bytes` of tx on `bar`.
// bytes: a multiple of 16; dst and src 16-byte aligned.
GS_DEV void gs_bulk_copy_g2s(void* dst, const void* src, unsigned bytes, gs_u64* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], "
      "%2, [%3];" ::"r"(gs_smem_addr(dst)),
      "l"((gs_u64)__cvta_generic_to_global(src)), "r"(bytes), "r"(gs_smem_addr(bar))
      : "memory");
}
GS_DEV void gs_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// elect.sync over the whole (converged) warp: true in one lane. What it guards ptxas
// knows one thread runs: a bulk copy there issues from uniform registers, without the
// loop over the active lanes (BRA.U.ANY) each copy of a divergent thread costs.
GS_DEV bool gs_elect_one() {
  unsigned p;
  asm volatile("{\n .reg .pred P;\n elect.sync _|P, 0xffffffff;\n"
               " selp.u32 %0, 1, 0, P;\n}" : "=r"(p));
  return p != 0u;
}
// setmaxnreg (sm_90a): the executing warpgroup's registers a thread, released to
// or taken from the CTA's pool; N an immediate, a multiple of 8 in 24..256.
#define gs_setmaxnreg_dec(N) asm volatile("setmaxnreg.dec.sync.aligned.u32 " #N ";")
#define gs_setmaxnreg_inc(N) asm volatile("setmaxnreg.inc.sync.aligned.u32 " #N ";")
// Thread-block clusters. The dimensions are the kernel's __cluster_dims__ attribute.
#define gs_cluster_dims(X, Y, Z) ((void)0)
GS_DEV void gs_cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
GS_DEV void gs_cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }
// mbarrier.init made visible to the cluster (before the cluster barrier that
// publishes it).
GS_DEV void gs_fence_mbarrier_init_cluster() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
GS_DEV unsigned gs_cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// The generic address of `p`'s offset in the shared memory of CTA `rank` (mapa).
template <class T> GS_DEV T* gs_map_shared_rank(T* p, unsigned rank) {
  gs_u64 out;
  asm volatile("mapa.u64 %0, %1, %2;" : "=l"(out) : "l"((gs_u64)p), "r"(rank));
  return (T*)out;
}
// Arrive (release, cluster scope) on the mbarrier at `bar`'s offset in CTA `rank`.
GS_DEV void gs_mbar_arrive_remote(gs_u64* bar, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"(gs_smem_addr(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(
                   remote)
               : "memory");
}
// Bulk copy global -> shared of every CTA in `mask` (same offset), completing `bytes`
// of tx on the mbarrier at `bar`'s offset in each of them.
GS_DEV void gs_bulk_copy_g2s_multicast(void* dst, const void* src, unsigned bytes,
                                       gs_u64* bar, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1], %2, [%3], %4;" ::"r"(gs_smem_addr(dst)),
      "l"((gs_u64)__cvta_generic_to_global(src)), "r"(bytes), "r"(gs_smem_addr(bar)),
      "h"(mask)
      : "memory");
}
// wgmma: the warpgroup MMA fences (the MMA itself: GS_PTX_ONLY("wgmma", asm ...)).
GS_DEV void gs_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
GS_DEV void gs_wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
#define gs_wgmma_wait_group(N) \
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory")
// TMA tensor load of a 2D box at (c0, c1) described by a CUtensorMap in param space.
GS_DEV void gs_tma_load_2d(void* dst, const void* tensor_map, gs_u64* bar, int c0,
                           int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%3, %4}], [%2];" ::"r"(gs_smem_addr(dst)),
      "l"(tensor_map), "r"(gs_smem_addr(bar)), "r"(c0), "r"(c1)
      : "memory");
}
#else
// CPU: implemented by the harness (simt_harness.h), same names and meanings.
GS_DEV void gs_bar_sync(int id, int nthreads) { ::gs::bar_sync(id, nthreads); }
GS_DEV void gs_bar_arrive(int id, int nthreads) { ::gs::bar_arrive(id, nthreads); }
GS_DEV void gs_mbar_init(gs_u64* bar, unsigned count) { ::gs::mbar_init(bar, count); }
GS_DEV gs_u64 gs_mbar_arrive(gs_u64* bar) { return ::gs::mbar_arrive(bar, 0); }
GS_DEV gs_u64 gs_mbar_arrive_count(gs_u64* bar, unsigned count) {
  return ::gs::mbar_arrive(bar, 0, count);
}
GS_DEV gs_u64 gs_mbar_arrive_expect_tx(gs_u64* bar, unsigned tx_bytes) {
  return ::gs::mbar_arrive(bar, tx_bytes);
}
GS_DEV void gs_mbar_expect_tx(gs_u64* bar, unsigned tx_bytes) {
  ::gs::mbar_expect_tx(bar, tx_bytes);
}
GS_DEV bool gs_mbar_try_wait_parity(gs_u64* bar, unsigned parity) {
  return ::gs::mbar_wait_parity(bar, parity, true);
}
GS_DEV bool gs_mbar_test_wait_parity(gs_u64* bar, unsigned parity) {
  return ::gs::mbar_wait_parity(bar, parity, false);
}
GS_DEV void gs_mbar_wait_parity(gs_u64* bar, unsigned parity) {
  while (!gs_mbar_try_wait_parity(bar, parity)) {
  }
}
GS_DEV void gs_cp_async_mbar_arrive(gs_u64* bar) { ::gs::cp_async_mbar_arrive(bar, true); }
GS_DEV void gs_cp_async_mbar_arrive_noinc(gs_u64* bar) {
  ::gs::cp_async_mbar_arrive(bar, false);
}
GS_DEV void gs_cp_async(void* dst, const void* src, int bytes) {
  ::gs::cp_async(dst, src, bytes);
}
GS_DEV void gs_cp_async_commit() { ::gs::cp_async_commit(); }
#define gs_cp_async_wait_group(N) ::gs::cp_async_wait_group(N)
GS_DEV void gs_cp_async_wait_all() { ::gs::cp_async_wait_group(-1); }
// Nothing to wait for: a bulk async-group collects bulk stores (shared -> global),
// which nothing here issues; the bulk copies the harness has (gs_bulk_copy_g2s*)
// complete on their mbarrier, in no group.
GS_DEV void gs_bulk_wait_all() {}
GS_DEV void gs_bulk_copy_g2s(void* dst, const void* src, unsigned bytes, gs_u64* bar) {
  ::gs::bulk_copy_g2s(dst, src, bytes, bar);
}
GS_DEV void gs_fence_proxy_async() {}
// setmaxnreg changes how many registers a warp may hold, never a value the program
// reads (gpuir_cuda's roles.py): nothing to do on the cpu harness.
#define gs_setmaxnreg_dec(N) ((void)0)
#define gs_setmaxnreg_inc(N) ((void)0)
// elect.sync: the whole warp meets (a missing lane is the harness's fault, as for
// __shfl_sync), and its lowest lane is elected.
GS_DEV bool gs_elect_one() {
  return (__ballot_sync(0xffffffffu, 1) & __lanemask_lt()) == 0u;
}
#define gs_cluster_dims(X, Y, Z) ::gs::check_cluster_dims((X), (Y), (Z))
GS_DEV void gs_cluster_arrive() { ::gs::cluster_arrive(); }
GS_DEV void gs_cluster_wait() { ::gs::cluster_wait(); }
GS_DEV void gs_fence_mbarrier_init_cluster() {}
GS_DEV unsigned gs_cluster_ctarank() { return (unsigned)::gs::g_rt.cur->cta; }
template <class T> GS_DEV T* gs_map_shared_rank(T* p, unsigned rank) {
  return (T*)::gs::map_shared_rank(p, rank);
}
GS_DEV void gs_mbar_arrive_remote(gs_u64* bar, unsigned rank) {
  ::gs::mbar_arrive_remote(bar, rank);
}
GS_DEV void gs_bulk_copy_g2s_multicast(void* dst, const void* src, unsigned bytes,
                                       gs_u64* bar, unsigned short mask) {
  ::gs::bulk_copy_g2s_multicast(dst, src, bytes, bar, mask);
}
GS_DEV void gs_wgmma_fence() { ::gs::unsupported("wgmma"); }
GS_DEV void gs_wgmma_commit_group() { ::gs::unsupported("wgmma"); }
#define gs_wgmma_wait_group(N) ::gs::unsupported("wgmma")
GS_DEV void gs_tma_load_2d(void*, const void*, gs_u64*, int, int) {
  ::gs::unsupported("tma");
}
#endif

#endif  // GPUSEM_RT_CUH
