// simt_core.h: CUDA keywords and types, the runtime state, the fibre context switch
// and launch aborts of the SIMT harness (see simt_harness.h for the model).
#ifndef GPUSEM_SIMT_CORE_H
#define GPUSEM_SIMT_CORE_H

#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

// ----------------------------------------------------------------- CUDA keywords
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __constant__
#define __managed__
// Block-shared storage: one instance per process (blocks run one at a time), kept in
// one linker section so the harness can poison all of it at each block start.
#define __shared__ __attribute__((section("gs_shared"), aligned(16))) static
#define GS_MAX_DYN_SMEM (227 * 1024)
// Thread-block clusters: at most 16 CTAs (sm_90's non-portable maximum).
#define GS_MAX_CLUSTER 16
#define GS_DYN_SHARED(T, name) T* const name = reinterpret_cast<T*>(::gs::dyn_smem())

struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct int2 { int x, y; };
struct int4 { int x, y, z, w; };
struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
static inline int2 make_int2(int x, int y) { return {x, y}; }
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

namespace gs {

typedef unsigned long long u64;  // = gs_u64, the mbarrier word

enum Status { ST_OK = 0, ST_RUNTIME_ERROR = 1, ST_DEADLOCK = 2, ST_TIMEOUT = 3,
              ST_UNSUPPORTED = 4, ST_BAD_CONFIG = 5 };
enum TState { T_RUNNABLE, T_BLOCKED, T_EXITED };
enum Wait { W_NONE, W_BAR, W_WARP, W_MBAR, W_CLUSTER };
enum WarpOp { OP_SYNC, OP_IDX, OP_UP, OP_DOWN, OP_XOR, OP_BALLOT, OP_ANY, OP_ALL };
enum AsyncKind { A_COPY, A_ARRIVE, A_BULK };

// The launch configuration cpu.py passes (ctypes mirror: cpu.py's _LaunchCfg).
struct LaunchCfg {
  unsigned grid[3], block[3];
  unsigned dyn_smem;
  unsigned long long seed;
  unsigned long long max_switches;
  double time_budget_s;
  unsigned stack_bytes;
  unsigned poison;  // the byte written over shared memory at block start
  // Thread-block cluster dimensions; 0 or 1 in every dimension: no clusters. Last, so
  // a launcher written before clusters (an aggregate without it) reads as none.
  unsigned cluster[3];
};

struct Async {
  AsyncKind kind;
  void* dst;
  const void* src;
  unsigned bytes;
  int group;       // cp.async commit group; -1 while uncommitted
  u64* mbar;  // A_ARRIVE / A_BULK target
  int cta;    // the CTA whose shared memory `dst` is (static shared is swapped)
};

struct Thread {
  void* sp;
  char* stack_top;
  uint3 tid, bidx;  // threadIdx, and blockIdx of its CTA
  int linear, warp, lane;
  int cta;          // rank of its CTA in the cluster (%cluster_ctarank)
  // barrier.cluster: the cluster phase (+1) of this thread's last arrive; whether that
  // arrive still waits for its barrier.cluster.wait.
  unsigned long long cl_arrived;
  bool cl_pending;
  TState state;
  Wait wait;
  int bar_id;
  u64* mbar;
  unsigned parity;
  int op, op_arg, op_width;  // the warp collective this lane waits in
  unsigned mask;
  uint64_t value, result;
  int next_group;
  std::vector<Async> pending;
};

struct Barrier { int expected, arrived; long long accum; int op; };
struct MBar { u64* addr; unsigned expected, pending, phase; long long tx; };

struct Runtime {
  LaunchCfg cfg;
  std::vector<Thread> threads;
  Thread* cur = nullptr;
  void* sched_sp = nullptr;
  uint3 block_idx;  // the cluster's first block (rank 0), for messages
  dim3 block_dim, grid_dim;
  int nthreads = 0;  // threads of one block
  int nctas = 1;     // CTAs of one cluster, all resident at once
  Barrier bars[GS_MAX_CLUSTER][16];  // per CTA
  unsigned long long cl_phase = 0;   // completed barrier.cluster phases
  // Dynamic shared memory of each CTA of the cluster (rank 0: g_dyn_smem). Static
  // `__shared__` has one instance in the process: with clusters each CTA's copy is
  // swapped in before one of its fibres runs (`static_live` is the CTA in place).
  unsigned char* smem[GS_MAX_CLUSTER] = {};
  std::vector<unsigned char> static_saved[GS_MAX_CLUSTER];
  int static_live = 0;
  std::vector<MBar> mbars;
  std::vector<Async> bulk;  // cp.async.bulk copies, owned by their mbarrier
  int status = ST_OK;
  volatile sig_atomic_t alarm = 0;  // the time budget ran out while in the scheduler
  bool in_fibre = false;  // whether a fibre (not the scheduler) is running
  char msg[1024];
  unsigned long long switches = 0, rng = 1;
  double deadline = 0;
  char* stacks = nullptr;
  size_t stacks_len = 0, stack_slot = 0;
  void (*thunk)(void**) = nullptr;
  void** args = nullptr;
  // Schedule 3 and up ("eager wake"): fibres a barrier releases run next, before the
  // rest of the round, so a thread that passes a too-weak barrier reads before the
  // threads it should have waited for have written (see run_block).
  std::vector<int> woken;
};

inline Runtime g_rt;
alignas(1024) inline unsigned char g_dyn_smem[GS_MAX_DYN_SMEM];

// The running thread's dynamic shared memory (its CTA's).
inline unsigned char* dyn_smem() { return g_rt.smem[g_rt.cur ? g_rt.cur->cta : 0]; }

extern "C" {
extern char __start_gs_shared[] __attribute__((visibility("hidden"), weak));
extern char __stop_gs_shared[] __attribute__((visibility("hidden"), weak));
}

// ----------------------------------------------------------------- context switch
#if defined(__x86_64__)
// gs_ctx_switch(save, to): push callee-saved registers, save rsp in *save, load `to`.
// Weak so that every translation unit may carry it (one survives the link).
asm(R"(
  .pushsection .text
  .weak gs_ctx_switch
  .hidden gs_ctx_switch
  .type gs_ctx_switch,@function
gs_ctx_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size gs_ctx_switch, .-gs_ctx_switch
  .popsection
)");
extern "C" void gs_ctx_switch(void** save, void* to);
#else
#error "simt_harness.h: only x86-64 is supported (fibre context switch)"
#endif

inline double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

inline float fop(float x) { return x; }  // float32 result; the build has no FMA contraction

struct SchedulerAbort {};  // thrown when the scheduler itself (async flush) hits an error

// Stop the launch: record the status; from a fibre, switch to the scheduler and never
// resume the fibre; from the scheduler's own work (completing async copies when no
// fibre can run), unwind to `launch`.
[[noreturn]] inline void abort_launch(int status, const char* fmt, ...) {
  Runtime& rt = g_rt;
  if (rt.status == ST_OK) {
    rt.status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt.msg, sizeof rt.msg, fmt, ap);
    va_end(ap);
  }
  if (!rt.in_fibre) throw SchedulerAbort{};
  void* dummy;
  gs_ctx_switch(&dummy, rt.sched_sp);
  __builtin_unreachable();
}

inline const char* where() {
  static char buf[96];
  Thread* t = g_rt.cur;
  if (!g_rt.in_fibre) return "completing asynchronous copies";
  snprintf(buf, sizeof buf, "thread (%u,%u,%u) block (%u,%u,%u)", t->tid.x, t->tid.y,
           t->tid.z, t->bidx.x, t->bidx.y, t->bidx.z);
  return buf;
}

[[noreturn]] inline void unsupported(const char* what) {
  abort_launch(ST_UNSUPPORTED, "unsupported: %s has no CPU meaning (%s)", what, where());
}
[[noreturn]] inline void trap(const char* why) {
  abort_launch(ST_RUNTIME_ERROR, "trap: %s (%s)", why, where());
}
[[noreturn]] inline void error(const char* what) {
  abort_launch(ST_RUNTIME_ERROR, "%s (%s)", what, where());
}

// Give control back to the scheduler; `block` parks the fibre until someone wakes it.
inline void switch_out(bool block) {
  Thread* t = g_rt.cur;
  if (block) t->state = T_BLOCKED;
  gs_ctx_switch(&t->sp, g_rt.sched_sp);
}
inline void preempt() { switch_out(false); }
inline void wake(Thread& t) {
  t.state = T_RUNNABLE;
  t.wait = W_NONE;
  if (g_rt.cfg.seed >= 3) g_rt.woken.push_back(t.linear);
}

// Which CTA's dynamic shared memory holds `p` (-1: none), and at what offset.
inline int smem_cta(const void* p, long* offset) {
  const unsigned char* c = (const unsigned char*)p;
  for (int r = 0; r < g_rt.nctas; r++) {
    const unsigned char* base = g_rt.smem[r];
    if (base && c >= base && c < base + GS_MAX_DYN_SMEM) {
      *offset = (long)(c - base);
      return r;
    }
  }
  return -1;
}

// Where a shared-memory address lies, for messages: "dynamic+off", "static+off".
inline const char* smem_where(const void* p, char* buf, size_t n) {
  const char* c = (const char*)p;
  long off = 0;
  int r = smem_cta(p, &off);
  if (r == 0 && g_rt.nctas == 1)
    snprintf(buf, n, "dynamic shared+%ld", off);
  else if (r >= 0)
    snprintf(buf, n, "dynamic shared+%ld of CTA %d", off, r);
  else if (__start_gs_shared && c >= __start_gs_shared && c < __stop_gs_shared)
    snprintf(buf, n, "static shared+%ld", (long)(c - __start_gs_shared));
  else
    snprintf(buf, n, "%p (not shared memory)", p);
  return buf;
}

}  // namespace gs

#endif  // GPUSEM_SIMT_CORE_H
