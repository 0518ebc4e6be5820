// simt_intrinsics.h: the CUDA device API as the harness provides it: thread indices,
// __syncthreads / __syncwarp / shuffles / votes, atomics, fences, bit and float
// intrinsics with the GPU's exact meaning.
#ifndef GPUSEM_SIMT_INTRINSICS_H
#define GPUSEM_SIMT_INTRINSICS_H

#include "simt_sched.h"

// ----------------------------------------------------------------- CUDA intrinsics
#define threadIdx (::gs::g_rt.cur->tid)
#define blockIdx (::gs::g_rt.cur->bidx)
#define blockDim (::gs::g_rt.block_dim)
#define gridDim (::gs::g_rt.grid_dim)
#define warpSize 32

static inline void __syncthreads() { ::gs::bar_arrive_impl(0, ::gs::g_rt.nthreads, true, 0, 0); }
static inline int __syncthreads_count(int p) { return (int)::gs::bar_arrive_impl(0, ::gs::g_rt.nthreads, true, 1, p); }
static inline int __syncthreads_and(int p) { return (int)::gs::bar_arrive_impl(0, ::gs::g_rt.nthreads, true, 2, p); }
static inline int __syncthreads_or(int p) { return (int)::gs::bar_arrive_impl(0, ::gs::g_rt.nthreads, true, 3, p); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { ::gs::warp_collective(mask, ::gs::OP_SYNC, 0, 0, 32); }
template <class T> static inline T __shfl_sync(unsigned m, T v, int src, int w = 32) {
  return ::gs::from_bits<T>(::gs::warp_collective(m, ::gs::OP_IDX, ::gs::to_bits(v), src, w));
}
template <class T> static inline T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32) {
  return ::gs::from_bits<T>(::gs::warp_collective(m, ::gs::OP_UP, ::gs::to_bits(v), (int)d, w));
}
template <class T> static inline T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32) {
  return ::gs::from_bits<T>(::gs::warp_collective(m, ::gs::OP_DOWN, ::gs::to_bits(v), (int)d, w));
}
template <class T> static inline T __shfl_xor_sync(unsigned m, T v, int lm, int w = 32) {
  return ::gs::from_bits<T>(::gs::warp_collective(m, ::gs::OP_XOR, ::gs::to_bits(v), lm, w));
}
static inline unsigned __ballot_sync(unsigned m, int p) { return (unsigned)::gs::warp_collective(m, ::gs::OP_BALLOT, p != 0, 0, 32); }
static inline int __any_sync(unsigned m, int p) { return (int)::gs::warp_collective(m, ::gs::OP_ANY, p != 0, 0, 32); }
static inline int __all_sync(unsigned m, int p) { return (int)::gs::warp_collective(m, ::gs::OP_ALL, p != 0, 0, 32); }
static inline unsigned __activemask() {
  unsigned m = 0;
  ::gs::Thread* base = &::gs::g_rt.threads[::gs::g_rt.cur->warp * 32];
  unsigned exist = ::gs::warp_lanes(::gs::g_rt.cur->warp);
  for (int l = 0; l < 32; l++)
    if ((exist >> l & 1) && base[l].state != ::gs::T_EXITED) m |= 1u << l;
  return m;
}
static inline unsigned __lanemask_lt() { return (1u << ::gs::g_rt.cur->lane) - 1u; }
static inline void __threadfence() {}
static inline void __threadfence_block() {}
static inline void __threadfence_system() {}
static inline void __nanosleep(unsigned) { ::gs::preempt(); }
[[noreturn]] static inline void __trap() { ::gs::trap("__trap()"); }

// Atomics: performed at once (fibres never run in parallel), then a preemption point so
// that spin loops on atomics let the other fibres progress.
#define GS_ATOMIC(name, T, expr)                 \
  static inline T name(T* p, T v) {            \
    T old = *p;                                  \
    *p = (expr);                                 \
    ::gs::preempt();                             \
    return old;                                  \
  }
GS_ATOMIC(atomicAdd, int, (int)((unsigned)old + (unsigned)v))
GS_ATOMIC(atomicAdd, unsigned, old + v)
GS_ATOMIC(atomicAdd, unsigned long long, old + v)
GS_ATOMIC(atomicAdd, float, old + v)
GS_ATOMIC(atomicAdd, double, old + v)
GS_ATOMIC(atomicSub, int, (int)((unsigned)old - (unsigned)v))
GS_ATOMIC(atomicSub, unsigned, old - v)
GS_ATOMIC(atomicExch, int, v)
GS_ATOMIC(atomicExch, unsigned, v)
GS_ATOMIC(atomicExch, unsigned long long, v)
GS_ATOMIC(atomicExch, float, v)
GS_ATOMIC(atomicMax, int, old > v ? old : v)
GS_ATOMIC(atomicMax, unsigned, old > v ? old : v)
GS_ATOMIC(atomicMax, long long, old > v ? old : v)
GS_ATOMIC(atomicMax, unsigned long long, old > v ? old : v)
GS_ATOMIC(atomicMin, int, old < v ? old : v)
GS_ATOMIC(atomicMin, unsigned, old < v ? old : v)
GS_ATOMIC(atomicMin, long long, old < v ? old : v)
GS_ATOMIC(atomicMin, unsigned long long, old < v ? old : v)
GS_ATOMIC(atomicAnd, int, old & v)
GS_ATOMIC(atomicAnd, unsigned, old & v)
GS_ATOMIC(atomicOr, int, old | v)
GS_ATOMIC(atomicOr, unsigned, old | v)
GS_ATOMIC(atomicXor, int, old ^ v)
GS_ATOMIC(atomicXor, unsigned, old ^ v)
GS_ATOMIC(atomicInc, unsigned, old >= v ? 0u : old + 1u)
GS_ATOMIC(atomicDec, unsigned, (old == 0u || old > v) ? v : old - 1u)
#undef GS_ATOMIC
#define GS_ATOMIC_CAS(T)                          \
  static inline T atomicCAS(T* p, T cmp, T v) { \
    T old = *p;                                   \
    if (old == cmp) *p = v;                       \
    ::gs::preempt();                              \
    return old;                                   \
  }
GS_ATOMIC_CAS(int)
GS_ATOMIC_CAS(unsigned)
GS_ATOMIC_CAS(unsigned long long)
GS_ATOMIC_CAS(unsigned short)
#undef GS_ATOMIC_CAS

// Arithmetic intrinsics with the GPU's exact meaning.
static inline int __float_as_int(float f) { return ::gs::from_bits<int>(::gs::to_bits(f)); }
static inline unsigned __float_as_uint(float f) { return ::gs::from_bits<unsigned>(::gs::to_bits(f)); }
static inline float __int_as_float(int i) { return ::gs::from_bits<float>(::gs::to_bits(i)); }
static inline float __uint_as_float(unsigned i) { return ::gs::from_bits<float>(::gs::to_bits(i)); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
// CUDA's mixed-sign overloads compare as unsigned
static inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
static inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
static inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
static inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
template <class T> static inline T __ldg(const T* p) { return *p; }


#endif  // GPUSEM_SIMT_INTRINSICS_H
