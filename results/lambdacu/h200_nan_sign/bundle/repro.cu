#define LC_EXPECT "main ( [5 b0 b0 b0 b0 b0 ] [0 ] i4 [5 i8 i8 i8 i8 i8 ] [5 fffc00000 fffc00000 fffc00000 fffc00000 fffc00000 ] i4 )\n"
// lambda-cu program, emitted by gpusem (compiler/lambdacu_cuda).
#define LC_BLOCK 4
// lambdacu_rt.cuh: the runtime that lambda-cu programs compiled by gpusem call
// (compiler/lambdacu_cuda). One text for both backends: under nvcc the kernels launch
// on the GPU over managed memory; under g++ they run on the SIMT harness
// (gpusem_rt.cuh pulls it in), blocks one after another.
//
// Exactness (the interpreter's prims.py): ints wrap at 32 bits; `div`/`mod` truncate;
// every case C leaves undefined (zero divisor, INT_MIN / -1, shifts outside 0..31,
// f2i of NaN or out of range, chr outside ASCII, a subscript or PERMUTE index out of
// bounds, PERMUTE not 1:1, a negative size) is a trap, as the interpreter's. A trap in
// a kernel records the first code in an error flag the host reads after the launch; a
// trap in host code stops at once. Either way the program prints `trap <why>`.
#ifndef LAMBDACU_RT_CUH
#define LAMBDACU_RT_CUH

// ---- gpusem_rt.cuh, inlined ----
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
// ---- simt_harness.h, inlined ----
// simt_harness.h: the CPU side of gpusem_rt.cuh. A CUDA kernel built by g++ runs here.
//
// Model (the "cpu" backend's semantics; see cpu.py for the Python side):
//   - every CUDA thread of a block is a fibre with its own stack (guard page below it);
//     blocks of the grid run one after another (so an inter-block spin-wait can never
//     be satisfied: it ends as a timeout, or as a deadlock when it blocks);
//   - the scheduler runs every runnable fibre up to its next blocking point, in rounds,
//     in an order fixed by the schedule seed: 0 forward, 1 reverse, >= 2 a fresh seeded
//     random permutation every round (the block order follows the same rule);
//   - blocking points: __syncthreads (barrier 0), named barriers, __syncwarp and the
//     warp collectives (shuffles, votes), mbarrier waits; atomics, test_wait and
//     __nanosleep are preemption points (the fibre yields but stays runnable);
//   - when no fibre is runnable, all outstanding asynchronous copies complete (the
//     hardware finishes them eventually); if still none is runnable the launch is a
//     DEADLOCK naming each barrier and its waiting threads;
//   - shared memory (static `__shared__` and dynamic `extern __shared__`) is poisoned
//     with the configured byte at every block start; uninitialised locals get g++'s
//     -ftrivial-auto-var-init=pattern (cpu.py passes it where g++ >= 12), which the
//     optimiser may still fold away, so that poison is best effort;
//   - cp.async copies are performed LAZILY: at wait_group / wait_all, when an observer
//     waits on the mbarrier they arrive on, when the scheduler finds no runnable fibre,
//     or at block end; a read without the wait sees the poisoned (stale) shared memory;
//   - a step budget (fibre switches) and a wall-clock budget end a launch as TIMEOUT; a
//     fibre that loops without ever blocking is killed by cpu.py's watchdog instead.
// Note: barrier arrivals are counted per thread (as on sm_70+), and a thread that exits
// while others wait for it at a block barrier is a deadlock (CUDA calls it undefined);
// warp collectives wait only for the live lanes of their mask, as CUDA specifies.
#ifndef GPUSEM_SIMT_HARNESS_H
#define GPUSEM_SIMT_HARNESS_H

// ---- simt_core.h, inlined ----
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

// ---- end of simt_core.h ----
// ---- simt_sync.h, inlined ----
// simt_sync.h: the harness's blocking points: block barriers (bar.sync / bar.arrive),
// warp collectives, mbarriers and the lazy asynchronous copies (cp.async, bulk).
#ifndef GPUSEM_SIMT_SYNC_H
#define GPUSEM_SIMT_SYNC_H

// #include "simt_core.h" (inlined above)

namespace gs {

// ----------------------------------------------------------------- block barriers
// bar.sync / bar.arrive (id, n): per-thread arrival counts; `op` folds a predicate
// for __syncthreads_count/and/or (0 none, 1 count, 2 and, 3 or).
inline long long bar_arrive_impl(int id, int n, bool wait, int op, int pred) {
  Runtime& rt = g_rt;
  if (id < 0 || id > 15) error("barrier: id out of range 0..15");
  if (n <= 0 || (n % 32 != 0 && n != rt.nthreads))
    error("barrier: thread count must be a positive multiple of 32 (or the block size)");
  Thread* me = rt.cur;
  Barrier& b = rt.bars[me->cta][id];
  if (b.arrived == 0) {
    b.expected = n;
    b.op = op;
    b.accum = (op == 2) ? 1 : 0;
  } else if (b.expected != n) {
    error("barrier: thread count disagrees with other arrivals");
  }
  if (op == 1) b.accum += pred != 0;
  if (op == 2) b.accum = b.accum && pred;
  if (op == 3) b.accum = b.accum || pred;
  b.arrived++;
  if (wait) {
    me->wait = W_BAR;
    me->bar_id = id;
    me->state = T_BLOCKED;
  }
  if (b.arrived == b.expected) {  // the barrier completes: release every waiter
    for (Thread& t : rt.threads)
      if (t.state == T_BLOCKED && t.wait == W_BAR && t.bar_id == id && t.cta == me->cta) {
        t.result = (uint64_t)b.accum;
        wake(t);
      }
    b.arrived = 0;
  }
  if (wait) {
    if (me->state == T_BLOCKED) switch_out(true);
    else preempt();  // the last arrival still yields, so orders stay seed-driven
    return (long long)me->result;
  }
  return 0;
}
inline void bar_sync(int id, int n) { bar_arrive_impl(id, n, true, 0, 0); }
inline void bar_arrive(int id, int n) { bar_arrive_impl(id, n, false, 0, 0); }

// ----------------------------------------------------------------- warp collectives
inline unsigned warp_lanes(int warp) {  // lanes that exist in this warp
  int per_block = (g_rt.nthreads + 31) / 32;  // warps of one CTA (clusters: 32 | block)
  int n = g_rt.nthreads - (warp % per_block) * 32;
  return n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
}

inline uint64_t lane_result(Thread* base, unsigned group, int lane) {
  Thread& me = base[lane];
  int w = me.op_width, seg = lane & ~(w - 1), src = lane;
  switch (me.op) {
    case OP_IDX: src = seg + (me.op_arg & (w - 1)); break;
    case OP_UP: src = (lane - seg) >= me.op_arg ? lane - me.op_arg : lane; break;
    case OP_DOWN: src = (lane - seg) + me.op_arg < w ? lane + me.op_arg : lane; break;
    case OP_XOR: src = ((lane ^ me.op_arg) & ~(w - 1)) == seg ? lane ^ me.op_arg : lane;
      break;
    case OP_BALLOT: case OP_ANY: case OP_ALL: {
      unsigned bits = 0;
      for (int l = 0; l < 32; l++)
        if ((group >> l & 1) && base[l].value) bits |= 1u << l;
      if (me.op == OP_BALLOT) return bits;
      if (me.op == OP_ANY) return bits != 0;
      return bits == group;
    }
    default: return 0;
  }
  // Reading a lane that does not take part is undefined in CUDA: give poison.
  if (!(group >> src & 1)) return 0x7fbadbad7fbadbadull;
  return base[src].value;
}

// Release every group of waiting lanes whose collective can complete: a lane's group is
// the live (existing, not exited) lanes of its mask, as CUDA asks only "non-exited
// threads named in mask" to take part, and it completes once every lane of it waits at
// a collective with the same mask. A lane of the group that waits with another mask is
// at another collective (lanes 0-1 past `__syncwarp(0x3)` and waiting at
// `__syncwarp(0xf)` while lanes 2-3 still wait at `__syncwarp(0xc)`: legal, found by a
// campaign): that collective completes first, or never, and then the scheduler reports
// a deadlock naming each lane's mask. Called when a lane arrives and, from the
// scheduler, when a lane exits. Returns false (status set, nothing switched) when the
// lanes of a group agree on the mask but not on the operation (CUDA: undefined).
inline bool warp_try_complete(int warp) {
  Runtime& rt = g_rt;
  Thread* base = &rt.threads[warp * 32];
  unsigned live = 0, waiting = 0;
  unsigned exist = warp_lanes(warp);
  for (int l = 0; l < 32; l++) {
    if (!(exist >> l & 1) || base[l].state == T_EXITED) continue;
    live |= 1u << l;
    if (base[l].state == T_BLOCKED && base[l].wait == W_WARP) waiting |= 1u << l;
  }
  for (int l = 0; l < 32; l++) {
    if (!(waiting >> l & 1)) continue;
    unsigned group = base[l].mask & live;
    if ((group & waiting) != group) continue;
    bool same_mask = true;
    for (int k = 0; k < 32; k++)
      if ((group >> k & 1) && base[k].mask != base[l].mask) same_mask = false;
    if (!same_mask) continue;  // a lane of the group is at another collective
    for (int k = 0; k < 32; k++)
      if ((group >> k & 1) && base[k].op != base[l].op) {
        rt.status = ST_RUNTIME_ERROR;
        snprintf(rt.msg, sizeof rt.msg,
                 "warp collective: lanes of warp %d disagree on the operation (mask 0x%08x)",
                 warp, base[l].mask);
        return false;
      }
    uint64_t res[32];
    for (int k = 0; k < 32; k++)
      if (group >> k & 1) res[k] = lane_result(base, group, k);
    for (int k = 0; k < 32; k++)
      if (group >> k & 1) { base[k].result = res[k]; wake(base[k]); }
    waiting &= ~group;
  }
  return true;
}

// One lane enters a warp-synchronous operation over `mask`; it blocks until every live
// lane of the mask has entered one, then all of them leave with their results.
// Note: lanes of the mask that do not exist (a partial last warp) or have exited are
// not waited for (CUDA: "all non-exited threads named in mask"); a shuffle that reads
// one gets poison.
inline uint64_t warp_collective(unsigned mask, int op, uint64_t value, int arg, int width) {
  Runtime& rt = g_rt;
  Thread* me = rt.cur;
  if (!(mask >> me->lane & 1)) error("warp collective: calling lane not in mask");
  if (width <= 0 || width > 32 || (width & (width - 1)))
    error("shfl: width must be a power of two <= 32");
  me->wait = W_WARP;
  me->state = T_BLOCKED;
  me->mask = mask;
  me->op = op;
  me->op_arg = arg;
  me->op_width = width;
  me->value = value;
  if (!warp_try_complete(me->warp)) switch_out(true);  // the scheduler sees the status
  if (me->state == T_BLOCKED) switch_out(true);
  else preempt();
  return me->result;
}

template <class T> inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8, "shuffle of a type wider than 64 bits");
  uint64_t u = 0;
  memcpy(&u, &v, sizeof v);
  return u;
}
template <class T> inline T from_bits(uint64_t u) {
  T v;
  memcpy(&v, &u, sizeof v);
  return v;
}

// ----------------------------------------------------------------- mbarriers
inline MBar* find_mbar(u64* addr, const char* op) {
  for (MBar& m : g_rt.mbars)
    if (m.addr == addr) return &m;
  static char buf[128];
  snprintf(buf, sizeof buf, "mbarrier: %s on an uninitialised mbarrier", op);
  error(buf);
}

inline void mbar_complete_check(MBar& m) {
  if (m.pending != 0 || m.tx != 0) return;
  m.phase ^= 1;  // the phase completes; the next one starts with the init count
  m.pending = m.expected;
  for (Thread& t : g_rt.threads)
    if (t.state == T_BLOCKED && t.wait == W_MBAR && t.mbar == m.addr) wake(t);
}

inline void mbar_init(u64* bar, unsigned count) {
  if (count == 0 || count >= (1u << 20)) error("mbarrier: init count out of range");
  for (MBar& m : g_rt.mbars)
    if (m.addr == bar) { m = MBar{bar, count, count, 0, 0}; return; }
  g_rt.mbars.push_back(MBar{bar, count, count, 0, 0});
  *bar = count;  // the word itself is opaque; keep something deterministic there
}

inline void mbar_arrive_on(MBar& m, unsigned count = 1) {
  if (count == 0 || m.pending < count)
    error("mbarrier: arrive count exceeds the pending arrivals of the phase");
  m.pending -= count;
  mbar_complete_check(m);
}

inline u64 mbar_arrive(u64* bar, unsigned tx, unsigned count = 1) {
  MBar* m = find_mbar(bar, "arrive");
  u64 token = (u64)m->phase << 63;
  m->tx += tx;
  mbar_arrive_on(*m, count);
  // An arrive is an atomic on the barrier word: under the eager schedules it is a
  // preemption point, so the threads it releases may run before this one goes on.
  if (g_rt.cfg.seed >= 3) preempt();
  return token;
}

inline void mbar_expect_tx(u64* bar, unsigned tx) {
  find_mbar(bar, "expect_tx")->tx += tx;
}

// ----------------------------------------------------------------- async copies
// Where an asynchronous write to `dst`, issued for CTA `cta`, lands now: static shared
// of a CTA that is not swapped in lives in its saved copy (clusters only).
inline void* async_dst(void* dst, int cta) {
  Runtime& rt = g_rt;
  char* c = (char*)dst;
  if (rt.nctas > 1 && cta != rt.static_live && __start_gs_shared &&
      c >= __start_gs_shared && c < __stop_gs_shared)
    return rt.static_saved[cta].data() + (c - __start_gs_shared);
  return dst;
}
inline void async_copy(const Async& a) { memcpy(async_dst(a.dst, a.cta), a.src, a.bytes); }

// Complete thread t's cp.async copies: all of them (`all`, uncommitted included) or the
// committed groups <= upto_group; then fire every arrive-on marker that no longer has
// an incomplete copy before it.
inline void settle_copies(Thread& t, bool all, int upto_group = -1) {
  bool blocked = false;
  std::vector<Async> keep;
  for (Async& a : t.pending) {
    if (a.kind == A_COPY) {
      bool done = all || (a.group >= 0 && a.group <= upto_group);
      if (done) { async_copy(a); continue; }
      blocked = true;
    } else if (a.kind == A_ARRIVE && !blocked) {
      mbar_arrive_on(*find_mbar(a.mbar, "cp.async arrive"));
      continue;
    }
    keep.push_back(a);
  }
  t.pending.swap(keep);
}

inline void flush_bulk(u64* only) {
  std::vector<Async> keep;
  std::vector<Async> todo;
  for (Async& a : g_rt.bulk) (only == nullptr || a.mbar == only ? todo : keep).push_back(a);
  g_rt.bulk.swap(keep);
  for (Async& a : todo) {
    async_copy(a);
    MBar* m = find_mbar(a.mbar, "complete_tx");
    m->tx -= a.bytes;
    mbar_complete_check(*m);
  }
}

// Everything outstanding lands (used when no fibre can run, and at block end).
inline void flush_all_async() {
  for (Thread& t : g_rt.threads) settle_copies(t, true);
  flush_bulk(nullptr);
}

// An observer waits on `bar`: the async work that would arrive on it completes first.
inline void flush_for_mbar(u64* bar) {
  for (Thread& t : g_rt.threads) {
    bool targets = false;
    for (Async& a : t.pending) targets |= (a.kind == A_ARRIVE && a.mbar == bar);
    if (targets) settle_copies(t, true);
  }
  flush_bulk(bar);
}

inline bool mbar_wait_parity(u64* bar, unsigned parity, bool suspend) {
  flush_for_mbar(bar);
  MBar* m = find_mbar(bar, "wait");
  // The phase with parity P is complete once the current phase's parity differs.
  if (m->phase != (parity & 1)) {
    // Eager schedules (>= 3) let a thread whose wait is already satisfied run on, so
    // an arrive that came too early is seen (others may not have written yet).
    if (g_rt.cfg.seed < 3) preempt();
    return true;
  }
  if (!suspend) { preempt(); return false; }
  Thread* me = g_rt.cur;
  me->wait = W_MBAR;
  me->mbar = bar;
  me->parity = parity & 1;
  switch_out(true);
  return find_mbar(bar, "wait")->phase != (parity & 1);
}

inline void cp_async(void* dst, const void* src, int bytes) {
  if (bytes != 4 && bytes != 8 && bytes != 16) error("cp.async: size must be 4, 8 or 16");
  g_rt.cur->pending.push_back(
      Async{A_COPY, dst, src, (unsigned)bytes, -1, nullptr, g_rt.cur->cta});
}
inline void cp_async_commit() {
  Thread* t = g_rt.cur;
  for (Async& a : t->pending)
    if (a.kind == A_COPY && a.group < 0) a.group = t->next_group;
  t->next_group++;
}
// wait_group N: all but the N most recent committed groups complete; N < 0: wait_all.
inline void cp_async_wait_group(int n) {
  Thread* t = g_rt.cur;
  settle_copies(*t, n < 0, t->next_group - 1 - n);
  preempt();
}
inline void cp_async_mbar_arrive(u64* bar, bool inc) {
  MBar* m = find_mbar(bar, "cp.async.mbarrier.arrive");
  if (inc) m->pending++;
  g_rt.cur->pending.push_back(Async{A_ARRIVE, nullptr, nullptr, 0, -1, bar, 0});
}
inline void bulk_copy_g2s(void* dst, const void* src, unsigned bytes, u64* bar) {
  if (bytes % 16 != 0) error("cp.async.bulk: size must be a multiple of 16");
  find_mbar(bar, "cp.async.bulk");
  g_rt.bulk.push_back(Async{A_BULK, dst, src, bytes, -1, bar, g_rt.cur->cta});
}

// ----------------------------------------------------------------- clusters
// mapa: the address in CTA `rank`'s shared memory at the offset `p` has in its own
// (distributed shared memory). Dynamic shared memory only: static `__shared__` has
// one instance in the process, swapped between the CTAs of a cluster.
inline void* map_shared_rank(const void* p, unsigned rank) {
  Runtime& rt = g_rt;
  if (rank >= (unsigned)rt.nctas) error("mapa: CTA rank outside the cluster");
  long off = 0;
  if (smem_cta(p, &off) < 0) {
    const char* c = (const char*)p;
    if (__start_gs_shared && c >= __start_gs_shared && c < __stop_gs_shared) {
      if ((int)rank == rt.cur->cta) return (void*)p;
      unsupported("distributed shared memory on a static __shared__ variable");
    }
    error("mapa: the address is not in shared memory");
  }
  return rt.smem[rank] + off;
}

// cp.async.bulk ... .multicast::cluster: the same bytes to the same offset in the
// shared memory of every CTA in `mask`, each completing its tx on the mbarrier at the
// offset of `bar` in that CTA.
inline void bulk_copy_g2s_multicast(void* dst, const void* src, unsigned bytes, u64* bar,
                                    unsigned short mask) {
  if (bytes % 16 != 0) error("cp.async.bulk: size must be a multiple of 16");
  if (mask >> g_rt.nctas) error("cp.async.bulk multicast: ctaMask names a CTA outside the cluster");
  for (int r = 0; r < g_rt.nctas; r++) {
    if (!(mask >> r & 1)) continue;
    u64* rbar = (u64*)map_shared_rank(bar, (unsigned)r);
    find_mbar(rbar, "cp.async.bulk multicast");
    g_rt.bulk.push_back(
        Async{A_BULK, map_shared_rank(dst, (unsigned)r), src, bytes, -1, rbar, r});
  }
}

// mbarrier.arrive.release.cluster on the mbarrier of CTA `rank` at `bar`'s offset.
inline u64 mbar_arrive_remote(u64* bar, unsigned rank) {
  return mbar_arrive((u64*)map_shared_rank(bar, rank), 0);
}

// barrier.cluster.arrive / wait: every non-exited thread of the cluster arrives once
// per phase; a wait returns once the phase of the thread's own arrive completed.
// Called on an arrive and, from the scheduler, when a thread exits.
inline void cluster_try_complete() {
  Runtime& rt = g_rt;
  bool any = false;
  for (Thread& t : rt.threads) {
    if (t.state == T_EXITED) continue;
    if (t.cl_arrived != rt.cl_phase + 1) return;
    any = true;
  }
  if (!any) return;
  rt.cl_phase++;
  for (Thread& t : rt.threads)
    if (t.state == T_BLOCKED && t.wait == W_CLUSTER) wake(t);
}

inline void cluster_arrive() {
  Thread* me = g_rt.cur;
  if (me->cl_pending)
    error("barrier.cluster.arrive: arrived again before barrier.cluster.wait");
  me->cl_arrived = g_rt.cl_phase + 1;
  me->cl_pending = true;
  cluster_try_complete();
  preempt();
}

inline void cluster_wait() {
  Thread* me = g_rt.cur;
  if (!me->cl_pending) error("barrier.cluster.wait: no barrier.cluster.arrive before it");
  me->cl_pending = false;
  if (g_rt.cl_phase >= me->cl_arrived) { preempt(); return; }  // phase complete
  me->wait = W_CLUSTER;
  switch_out(true);
}

// A kernel built with __cluster_dims__(x, y, z) must be launched with those clusters.
inline void check_cluster_dims(unsigned x, unsigned y, unsigned z) {
  const unsigned* c = g_rt.cfg.cluster;
  unsigned cx = c[0] ? c[0] : 1, cy = c[1] ? c[1] : 1, cz = c[2] ? c[2] : 1;
  if (cx != x || cy != y || cz != z) {
    static char buf[160];
    snprintf(buf, sizeof buf, "bad launch: the kernel's __cluster_dims__(%u, %u, %u) differ "
             "from the launch's cluster (%u, %u, %u)", x, y, z, cx, cy, cz);
    error(buf);
  }
}

}  // namespace gs

#endif  // GPUSEM_SIMT_SYNC_H

// ---- end of simt_sync.h ----
// ---- simt_sched.h, inlined ----
// simt_sched.h: the harness's scheduler (seeded fibre orders), the time budget,
// deadlock reports and `gs::launch`, the entry point of every generated launcher.
#ifndef GPUSEM_SIMT_SCHED_H
#define GPUSEM_SIMT_SCHED_H

// #include "simt_sync.h" (inlined above)

namespace gs {

// ----------------------------------------------------------------- the scheduler
inline uint64_t next_rand() {
  uint64_t x = g_rt.rng;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  g_rt.rng = x;
  return x * 0x2545F4914F6CDD1Dull;
}

// The order of one round (or of the blocks): forward, reverse or seeded random.
inline void make_order(std::vector<int>& order, int n) {
  order.resize(n);
  for (int i = 0; i < n; i++) order[i] = i;
  // 0 forward, 1 reverse, 2 random, 3 forward with eager wake, >= 4 random eager.
  if (g_rt.cfg.seed == 1) {
    for (int i = 0; i < n / 2; i++) { int t = order[i]; order[i] = order[n - 1 - i]; order[n - 1 - i] = t; }
  } else if (g_rt.cfg.seed == 2 || g_rt.cfg.seed >= 4) {
    for (int i = n - 1; i > 0; i--) {
      int j = (int)(next_rand() % (uint64_t)(i + 1));
      int t = order[i]; order[i] = order[j]; order[j] = t;
    }
  }
}

extern "C" inline void gs_fibre_main() {
  Runtime& rt = g_rt;
  rt.thunk(rt.args);
  rt.cur->state = T_EXITED;
  void* dummy;
  gs_ctx_switch(&dummy, rt.sched_sp);
  __builtin_unreachable();
}

// The launcher's check that a kernel's parameters are the types KernelSpec.params
// declares: pointees and scalars must match up to cv-qualifiers (so `const float*` takes
// a float32 pointer), since the cuda backend passes raw bits with no conversion.
template <class K, class S> struct param_match : std::is_same<std::remove_cv_t<K>, S> {};
template <class K, class S>
struct param_match<K*, S*> : std::is_same<std::remove_cv_t<K>, std::remove_cv_t<S>> {};
template <class... K, class... S>
constexpr bool signature_matches(void (*)(K...), void (*)(S...)) {
  if constexpr (sizeof...(K) != sizeof...(S)) return false;
  else return (param_match<K, S>::value && ...);
}

inline bool ensure_stacks(int n, size_t bytes) {
  size_t slot = ((bytes + 4095) & ~(size_t)4095) + 4096;  // + one guard page
  if (g_rt.stacks && g_rt.stacks_len >= slot * n && g_rt.stack_slot == slot) return true;
  if (g_rt.stacks) munmap(g_rt.stacks, g_rt.stacks_len);
  size_t len = slot * n;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) { g_rt.stacks = nullptr; return false; }
  g_rt.stacks = (char*)p;
  g_rt.stacks_len = len;
  g_rt.stack_slot = slot;
  for (int i = 0; i < n; i++) mprotect(g_rt.stacks + i * slot, 4096, PROT_NONE);
  return true;
}

inline void init_fibre(Thread& t, char* top) {
  // Frame for gs_ctx_switch: six callee-saved registers, then the return address
  // (gs_fibre_main), then a fake return slot so the entry sees rsp % 16 == 8.
  u64* sp = (u64*)(((uintptr_t)top) & ~(uintptr_t)15);
  *--sp = 0;
  *--sp = (uint64_t)(void*)&gs_fibre_main;
  for (int i = 0; i < 6; i++) *--sp = 0;
  t.sp = sp;
}

inline void describe_deadlock();

// Put CTA `cta`'s copy of static shared memory in place (clusters only).
inline void swap_static_shared(int cta) {
  Runtime& rt = g_rt;
  size_t sh = (size_t)(__stop_gs_shared - __start_gs_shared);
  if (cta == rt.static_live || !__start_gs_shared || !sh) return;
  memcpy(rt.static_saved[rt.static_live].data(), __start_gs_shared, sh);
  memcpy(__start_gs_shared, rt.static_saved[cta].data(), sh);
  rt.static_live = cta;
}

// One cluster (one block without clusters): its CTAs' threads are fibres of one
// scheduler, so cluster barriers, distributed shared memory and multicast copies meet
// the other CTAs running. `first` is the block of rank 0; rank r is
// first + (r % cx, r / cx % cy, r / (cx cy)), as %cluster_ctarank numbers them.
inline void run_block(uint3 first) {
  Runtime& rt = g_rt;
  rt.block_idx = first;
  size_t sh = (size_t)(__stop_gs_shared - __start_gs_shared);
  if (__start_gs_shared && sh) memset(__start_gs_shared, (int)rt.cfg.poison, sh);
  rt.static_live = 0;
  for (int r = 0; r < rt.nctas; r++) {
    memset(rt.smem[r], (int)rt.cfg.poison, rt.cfg.dyn_smem);
    if (r && sh) rt.static_saved[r].assign(sh, (unsigned char)rt.cfg.poison);
    if (sh && rt.nctas > 1) rt.static_saved[r].resize(sh);
  }
  memset(rt.bars, 0, sizeof rt.bars);
  rt.cl_phase = 0;
  rt.mbars.clear();
  rt.bulk.clear();
  unsigned bx = rt.block_dim.x, by = rt.block_dim.y;
  unsigned cx = rt.cfg.cluster[0] ? rt.cfg.cluster[0] : 1;
  unsigned cy = rt.cfg.cluster[1] ? rt.cfg.cluster[1] : 1;
  int per_block = (rt.nthreads + 31) / 32;
  for (int i = 0; i < rt.nthreads * rt.nctas; i++) {
    Thread& t = rt.threads[i];
    int r = i / rt.nthreads, k = i % rt.nthreads;
    t.tid = uint3{k % bx, (k / bx) % by, k / (bx * by)};
    t.cta = r;
    t.bidx = uint3{first.x + r % cx, first.y + (r / cx) % cy, first.z + r / (cx * cy)};
    t.linear = i; t.warp = r * per_block + k / 32; t.lane = k % 32;
    t.state = T_RUNNABLE; t.wait = W_NONE; t.next_group = 0;
    t.cl_arrived = 0; t.cl_pending = false;
    t.pending.clear();
    init_fibre(t, rt.stacks + (size_t)(i + 1) * rt.stack_slot);
  }
  std::vector<int> order, eager;
  rt.woken.clear();
  for (;;) {
    make_order(order, (int)rt.threads.size());
    bool ran = false, live = false;
    size_t next = 0;
    for (;;) {
      // Eager wake (schedules >= 3): fibres released by the last switch run first.
      for (int w : rt.woken) eager.push_back(w);
      rt.woken.clear();
      int i;
      if (!eager.empty()) { i = eager.back(); eager.pop_back(); }
      else if (next < order.size()) i = order[next++];
      else break;
      Thread& t = rt.threads[i];
      if (t.state != T_RUNNABLE) continue;
      rt.cur = &t;
      if (rt.nctas > 1) swap_static_shared(t.cta);
      ran = true;
      rt.in_fibre = true;
      gs_ctx_switch(&rt.sched_sp, t.sp);
      rt.in_fibre = false;
      if (rt.status == ST_OK && t.state == T_EXITED) {
        warp_try_complete(t.warp);
        cluster_try_complete();  // barrier.cluster waits for non-exited threads only
      }
      if (rt.status != ST_OK) return;
      if (rt.alarm) {
        rt.status = ST_TIMEOUT;
        snprintf(rt.msg, sizeof rt.msg, "timeout: time budget of %.3gs exhausted", rt.cfg.time_budget_s);
        return;
      }
      if (++rt.switches > rt.cfg.max_switches) {
        rt.status = ST_TIMEOUT;
        snprintf(rt.msg, sizeof rt.msg, "timeout: step budget of %llu fibre switches exhausted", rt.cfg.max_switches);
        return;
      }
    }
    for (Thread& t : rt.threads) live |= t.state != T_EXITED;
    if (!live) break;
    if (now_s() > rt.deadline || rt.alarm) {
      rt.status = ST_TIMEOUT;
      snprintf(rt.msg, sizeof rt.msg, "timeout: time budget of %.3gs exhausted", rt.cfg.time_budget_s);
      return;
    }
    if (!ran) {
      flush_all_async();  // outstanding async work may still open a barrier
      bool any = false;
      for (Thread& t : rt.threads) any |= t.state == T_RUNNABLE;
      if (rt.status != ST_OK) return;
      if (!any) { describe_deadlock(); return; }
    }
  }
  flush_all_async();
  if (rt.nctas > 1) swap_static_shared(0);
}

// The time budget, enforced even on a fibre that never blocks: SIGALRM ticks once the
// budget is spent; a tick that interrupts a fibre (its stack pointer lies in the fibre
// stacks) abandons the fibre and jumps to the scheduler; a tick in the scheduler sets
// `alarm`, which the scheduler checks after every switch.
inline void on_alarm(int, siginfo_t*, void* uc_void) {
  Runtime& rt = g_rt;
  rt.alarm = 1;
  ucontext_t* uc = (ucontext_t*)uc_void;
  char* rsp = (char*)uc->uc_mcontext.gregs[REG_RSP];
  if (!(rt.stacks && rsp >= rt.stacks && rsp < rt.stacks + rt.stacks_len)) return;
  if (rt.status == ST_OK) {
    rt.status = ST_TIMEOUT;
    snprintf(rt.msg, sizeof rt.msg, "timeout: time budget of %.3gs exhausted (in %s)", rt.cfg.time_budget_s, where());
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGALRM);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);  // we never return through sigreturn
  void* dummy;
  gs_ctx_switch(&dummy, rt.sched_sp);
}

struct AlarmGuard {
  struct sigaction old;
  explicit AlarmGuard(double seconds) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_alarm;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, &old);
    itimerval it;
    it.it_value.tv_sec = (time_t)seconds;
    it.it_value.tv_usec = (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6) + 1;
    it.it_interval.tv_sec = 0;
    it.it_interval.tv_usec = 10000;
    setitimer(ITIMER_REAL, &it, nullptr);
  }
  ~AlarmGuard() {
    itimerval off;
    memset(&off, 0, sizeof off);
    setitimer(ITIMER_REAL, &off, nullptr);
    sigaction(SIGALRM, &old, nullptr);
  }
};

inline int launch(const LaunchCfg* cfg, void (*thunk)(void**), void** args, char* msg, int msglen) {
  Runtime& rt = g_rt;
  rt.cfg = *cfg;
  rt.status = ST_OK;
  rt.msg[0] = 0;
  rt.switches = 0;
  rt.rng = cfg->seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
  rt.deadline = now_s() + cfg->time_budget_s;
  rt.thunk = thunk;
  rt.args = args;
  rt.block_dim = dim3(cfg->block[0], cfg->block[1], cfg->block[2]);
  rt.grid_dim = dim3(cfg->grid[0], cfg->grid[1], cfg->grid[2]);
  long long nt = (long long)cfg->block[0] * cfg->block[1] * cfg->block[2];
  long long nb = (long long)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
  if (nt <= 0 || nt > 1024 || nb <= 0 || cfg->dyn_smem > GS_MAX_DYN_SMEM) {
    snprintf(msg, msglen, "bad launch: block of %lld threads, grid of %lld blocks, %u bytes of dynamic shared memory", nt, nb, cfg->dyn_smem);
    return ST_BAD_CONFIG;
  }
  unsigned cd[3];
  for (int d = 0; d < 3; d++) cd[d] = cfg->cluster[d] ? cfg->cluster[d] : 1;
  long long nc = (long long)cd[0] * cd[1] * cd[2];
  if (nc > GS_MAX_CLUSTER || cfg->grid[0] % cd[0] || cfg->grid[1] % cd[1] || cfg->grid[2] % cd[2] ||
      (nc > 1 && nt % 32)) {
    snprintf(msg, msglen, "bad launch: cluster (%u, %u, %u) for a grid of (%u, %u, %u) blocks of %lld threads (at most %d CTAs, dividing the grid, blocks of whole warps)", cd[0], cd[1], cd[2], cfg->grid[0], cfg->grid[1], cfg->grid[2], nt, GS_MAX_CLUSTER);
    return ST_BAD_CONFIG;
  }
  rt.nthreads = (int)nt;
  rt.nctas = (int)nc;
  rt.smem[0] = g_dyn_smem;
  for (int r = 1; r < rt.nctas; r++)
    if (!rt.smem[r]) rt.smem[r] = (unsigned char*)aligned_alloc(1024, GS_MAX_DYN_SMEM);
  rt.threads.resize(nt * nc);
  rt.cur = nullptr;
  if (!ensure_stacks((int)(nt * nc), cfg->stack_bytes)) {
    snprintf(msg, msglen, "bad launch: cannot map fibre stacks");
    return ST_BAD_CONFIG;
  }
  rt.alarm = 0;
  AlarmGuard guard(cfg->time_budget_s);
  std::vector<int> order;
  make_order(order, (int)(nb / nc));  // the clusters (blocks without clusters)
  try {
    for (int b : order) {
      unsigned gx = cfg->grid[0] / cd[0], gy = cfg->grid[1] / cd[1];
      run_block(uint3{b % gx * cd[0], (b / gx) % gy * cd[1], b / (gx * gy) * cd[2]});
      if (rt.status != ST_OK) break;
    }
  } catch (const SchedulerAbort&) {
    // the status and message are recorded
  }
  rt.in_fibre = false;
  // Give the touched stack pages back: a worker loads many batch libraries in a long
  // campaign, and each library has its own stacks.
  madvise(rt.stacks, rt.stacks_len, MADV_DONTNEED);
  snprintf(msg, msglen, "%s", rt.msg);
  return rt.status;
}

inline const char* wait_name(const Thread& t, char* buf, size_t n) {
  switch (t.wait) {
    case W_BAR:
      if (t.bar_id == 0) snprintf(buf, n, "barrier 0 (__syncthreads / bar.sync 0)");
      else snprintf(buf, n, "named barrier %d", t.bar_id);
      if (g_rt.nctas > 1) {
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, " of CTA %d", t.cta);
      }
      break;
    case W_WARP: snprintf(buf, n, "warp %d collective (mask 0x%08x)", t.warp, t.mask); break;
    case W_MBAR: {
      char at[64];
      snprintf(buf, n, "mbarrier at %s parity %u", smem_where(t.mbar, at, sizeof at), t.parity);
      break;
    }
    case W_CLUSTER: snprintf(buf, n, "cluster barrier (barrier.cluster.wait)"); break;
    default: snprintf(buf, n, "nothing"); break;
  }
  return buf;
}

// "deadlock: block (b): <wait>: threads [...] (k of n arrived); ... exited: m threads".
inline void describe_deadlock() {
  Runtime& rt = g_rt;
  rt.status = ST_DEADLOCK;
  int len = rt.nctas > 1
    ? snprintf(rt.msg, sizeof rt.msg, "deadlock: cluster of %d blocks from (%u,%u,%u):", rt.nctas, rt.block_idx.x, rt.block_idx.y, rt.block_idx.z)
    : snprintf(rt.msg, sizeof rt.msg, "deadlock: block (%u,%u,%u):", rt.block_idx.x, rt.block_idx.y, rt.block_idx.z);
  std::vector<bool> done(rt.threads.size(), false);
  int exited = 0;
  for (size_t i = 0; i < rt.threads.size(); i++) {
    const Thread& t = rt.threads[i];
    if (t.state == T_EXITED) { exited++; continue; }
    if (done[i]) continue;
    char w[96], w2[96];
    wait_name(t, w, sizeof w);
    len += snprintf(rt.msg + len, sizeof rt.msg - len, " %s waited by threads [", w);
    int shown = 0, count = 0;
    for (size_t j = i; j < rt.threads.size(); j++) {
      const Thread& u = rt.threads[j];
      if (u.state == T_EXITED || done[j] || strcmp(wait_name(u, w2, sizeof w2), w) != 0) continue;
      done[j] = true;
      count++;
      if (shown++ < 4 && len < (int)sizeof rt.msg - 32)
        len += snprintf(rt.msg + len, sizeof rt.msg - len, "%s%d", shown > 1 ? "," : "", u.linear);
    }
    if (len < (int)sizeof rt.msg - 64) {
      len += snprintf(rt.msg + len, sizeof rt.msg - len, "%s] (%d threads", count > 4 ? ",..." : "", count);
      if (t.wait == W_BAR)
        len += snprintf(rt.msg + len, sizeof rt.msg - len, "; %d of %d arrived", rt.bars[t.cta][t.bar_id].arrived, rt.bars[t.cta][t.bar_id].expected);
      len += snprintf(rt.msg + len, sizeof rt.msg - len, ");");
    }
    if (len >= (int)sizeof rt.msg - 64) break;
  }
  if (len < (int)sizeof rt.msg - 32)
    snprintf(rt.msg + len, sizeof rt.msg - len, " %d threads exited", exited);
}

}  // namespace gs

#endif  // GPUSEM_SIMT_SCHED_H

// ---- end of simt_sched.h ----
// ---- simt_intrinsics.h, inlined ----
// simt_intrinsics.h: the CUDA device API as the harness provides it: thread indices,
// __syncthreads / __syncwarp / shuffles / votes, atomics, fences, bit and float
// intrinsics with the GPU's exact meaning.
#ifndef GPUSEM_SIMT_INTRINSICS_H
#define GPUSEM_SIMT_INTRINSICS_H

// #include "simt_sched.h" (inlined above)

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

// ---- end of simt_intrinsics.h ----

#endif  // GPUSEM_SIMT_HARNESS_H

// ---- end of simt_harness.h ----
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
GS_DEV void gs_bulk_copy_g2s(void* dst, const void* src, unsigned bytes, gs_u64* bar) {
  ::gs::bulk_copy_g2s(dst, src, bytes, bar);
}
GS_DEV void gs_fence_proxy_async() {}
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

// ---- end of gpusem_rt.cuh ----

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <utility>

#ifndef LC_BLOCK
#define LC_BLOCK 256
#endif
static_assert((LC_BLOCK & (LC_BLOCK - 1)) == 0 && LC_BLOCK <= 1024,
              "LC_BLOCK: a power of two up to 1024 (the tree reductions halve it)");

#if GS_CUDA
#define LC_HD __host__ __device__ __forceinline__
#define LC_HDM __host__ __device__ __forceinline__
#else
#define LC_HD static inline
#define LC_HDM inline
#endif

// ------------------------------------------------------------------------- traps
enum LcTrap {
  LC_OK, LC_DIV_ZERO, LC_DIV_OVERFLOW, LC_SHIFT, LC_F2I, LC_CHR, LC_SUBSCRIPT,
  LC_PERMUTE_BOUNDS, LC_PERMUTE_1TO1, LC_NEG_SIZE
};
static const char* const kLcTrap[] = {
  "ok", "division by zero", "division overflow", "shift out of range",
  "conversion out of range", "char out of range", "index out of bounds",
  "permute index out of bounds", "permute not 1:1", "negative size"};

#if GS_CUDA
__device__ int lc_err_dev;
#else
static int lc_err_dev;
static bool lc_in_kernel;
#endif

// Everything the program prints goes through lc_out, so that a standalone
// reproducer (LC_EXPECT defined: the interpreter's output) can compare it.
static char lc_buf[1 << 20];
static size_t lc_len_out, lc_main_at;
static void lc_out(const char* text) {
  size_t n = strlen(text);
  if (lc_len_out + n < sizeof lc_buf) {
    memcpy(lc_buf + lc_len_out, text, n);
    lc_len_out += n;
  }
  fputs(text, stdout);
}
[[noreturn]] static void lc_finish() {
#ifdef LC_EXPECT
  lc_buf[lc_len_out] = 0;
  const char* mine = lc_buf + lc_main_at;
  bool trapped = strncmp(mine, "trap ", 5) == 0;
  bool ok = strcmp(LC_EXPECT, "trap") == 0 ? trapped : strcmp(mine, LC_EXPECT) == 0;
  if (!ok) {
    printf("mismatch: the interpreter (--rules fixed) prints\n%s", LC_EXPECT);
    exit(1);
  }
  printf("agree: the output is the interpreter's\n");
#endif
  exit(0);
}

static void lc_host_trap(int code) {
  lc_main_at = lc_len_out;
  lc_out("trap ");
  lc_out(kLcTrap[code]);
  lc_out("\n");
  lc_finish();
}

LC_HD void lc_trap(int code) {
#if GS_CUDA
#ifdef __CUDA_ARCH__
  atomicCAS(&lc_err_dev, 0, code);
#else
  lc_host_trap(code);
#endif
#else
  if (!lc_in_kernel) lc_host_trap(code);
  if (lc_err_dev == 0) lc_err_dev = code;  // fibres never run in parallel
#endif
}

// ---------------------------------------------------------------------- values
template <class T> struct Arr {
  T* p;
  int n;
};

LC_HD float lc_f(unsigned bits) {
  union { unsigned u; float f; } x;
  x.u = bits;
  return x.f;
}
LC_HD unsigned lc_bits(float f) {
  union { unsigned u; float f; } x;
  x.f = f;
  return x.u;
}

template <class T> static Arr<T> lc_alloc(int n) {
  if (n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<T> a = {nullptr, n};
  if (n == 0) return a;
#if GS_CUDA
  if (cudaMallocManaged(&a.p, sizeof(T) * (size_t)n) != cudaSuccess) {
    printf("error cudaMallocManaged\n");
    exit(3);
  }
  memset(a.p, 0, sizeof(T) * (size_t)n);
#else
  a.p = (T*)calloc((size_t)n, sizeof(T));
#endif
  return a;
}

template <class T, class... V> static Arr<T> lc_lit(V... v) {
  const T items[] = {(T)v...};
  Arr<T> a = lc_alloc<T>((int)sizeof...(V));
  for (int i = 0; i < a.n; ++i) a.p[i] = items[i];
  return a;
}

template <class T> static Arr<T> lc_empty() { return Arr<T>{nullptr, 0}; }

template <class T> LC_HD T lc_at(Arr<T> a, int i) {
  if (i < 0 || i >= a.n) {
    lc_trap(LC_SUBSCRIPT);
    return T();
  }
  return a.p[i];
}

// ------------------------------------------------------------------- primitives
LC_HD int lc_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
LC_HD int lc_sub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
LC_HD int lc_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
LC_HD int lc_div(int a, int b) {
  if (b == 0) { lc_trap(LC_DIV_ZERO); return 0; }
  if (a == GS_INT_MIN && b == -1) { lc_trap(LC_DIV_OVERFLOW); return 0; }
  return a / b;
}
LC_HD int lc_mod(int a, int b) {
  if (b == 0) { lc_trap(LC_DIV_ZERO); return 0; }
  if (a == GS_INT_MIN && b == -1) { lc_trap(LC_DIV_OVERFLOW); return 0; }
  return a % b;
}
LC_HD int lc_min(int a, int b) { return a < b ? a : b; }
LC_HD int lc_max(int a, int b) { return a > b ? a : b; }
LC_HD int lc_and(int a, int b) { return a & b; }
LC_HD int lc_or(int a, int b) { return a | b; }
LC_HD int lc_xor(int a, int b) { return a ^ b; }
LC_HD int lc_shl(int a, int b) {
  if (b < 0 || b > 31) { lc_trap(LC_SHIFT); return 0; }
  return (int)((unsigned)a << b);
}
LC_HD int lc_shr(int a, int b) {
  if (b < 0 || b > 31) { lc_trap(LC_SHIFT); return 0; }
  return a >> b;
}
LC_HD int lc_neg(int a) { return (int)(0u - (unsigned)a); }
LC_HD int lc_abs(int a) { return a < 0 ? lc_neg(a) : a; }
LC_HD int lc_not(int a) { return ~a; }
LC_HD float lc_i2f(int a) { return (float)a; }  // round to nearest even, both sides

#ifdef __CUDA_ARCH__
LC_HD float lc_add(float a, float b) { return __fadd_rn(a, b); }
LC_HD float lc_sub(float a, float b) { return __fsub_rn(a, b); }
LC_HD float lc_mul(float a, float b) { return __fmul_rn(a, b); }
LC_HD float lc_div(float a, float b) { return __fdiv_rn(a, b); }
LC_HD float lc_sqrt(float a) { return __fsqrt_rn(a); }
#else
// Note: one rounding per operation (volatile keeps the host compiler from fusing or
// widening; the builds pass -ffp-contract=off as well).
LC_HD float lc_add(float a, float b) { volatile float r = a + b; return r; }
LC_HD float lc_sub(float a, float b) { volatile float r = a - b; return r; }
LC_HD float lc_mul(float a, float b) { volatile float r = a * b; return r; }
LC_HD float lc_div(float a, float b) { volatile float r = a / b; return r; }
LC_HD float lc_sqrt(float a) { return sqrtf(a); }
#endif
// fminf/fmaxf (a NaN operand loses) with -0.0 < +0.0, as the interpreter's
// prims.py: written out, since C leaves the sign of fminf(+0.0, -0.0) open and glibc
// (the first operand), x86's minss (the second) and the GPU's min.f32 each choose.
LC_HD float lc_min(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  if (a == b) return (lc_bits(a) & 0x80000000u) ? a : b;
  return a < b ? a : b;
}
LC_HD float lc_max(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  if (a == b) return (lc_bits(a) & 0x80000000u) ? b : a;
  return a > b ? a : b;
}
LC_HD float lc_neg(float a) { return lc_f(lc_bits(a) ^ 0x80000000u); }
LC_HD float lc_abs(float a) { return lc_f(lc_bits(a) & 0x7fffffffu); }
LC_HD float lc_exp(float a) { return expf(a); }
LC_HD float lc_log(float a) { return logf(a); }
LC_HD int lc_f2i(float a) {
  if (!(a >= -2147483648.0f && a < 2147483648.0f)) { lc_trap(LC_F2I); return 0; }
  return (int)a;
}

LC_HD bool lc_and(bool a, bool b) { return a && b; }
LC_HD bool lc_or(bool a, bool b) { return a || b; }
LC_HD bool lc_xor(bool a, bool b) { return a != b; }
LC_HD bool lc_not(bool a) { return !a; }
LC_HD int lc_ord(char c) { return (int)c; }
LC_HD char lc_chr(int a) {
  if (a < 0 || a > 127) { lc_trap(LC_CHR); return 0; }
  return (char)a;
}

#define LC_CMP(name, op)                                         \
  LC_HD bool lc_##name(int a, int b) { return a op b; }          \
  LC_HD bool lc_##name(float a, float b) { return a op b; }      \
  LC_HD bool lc_##name(char a, char b) { return a op b; }
LC_CMP(lt, <)
LC_CMP(le, <=)
LC_CMP(gt, >)
LC_CMP(ge, >=)
LC_CMP(eq, ==)
LC_CMP(ne, !=)
#undef LC_CMP
LC_HD bool lc_eq(bool a, bool b) { return a == b; }
LC_HD bool lc_ne(bool a, bool b) { return a != b; }

template <class T> LC_HD int lc_len(Arr<T> a) { return a.n; }

// ---------------------------------------------------------------------- launches
#if GS_CUDA
template <class... P, class... A>
static void lc_launch(int grid, void (*k)(P...), A... a) {
  k<<<grid, LC_BLOCK>>>(a...);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    printf("error launch: %s\n", cudaGetErrorString(e));
    exit(3);
  }
  int code = 0;
  cudaMemcpyFromSymbol(&code, lc_err_dev, sizeof code);
  if (code != 0) lc_host_trap(code);
}
#else
template <class... P> struct LcPack {
  void (*k)(P...);
  std::tuple<P...> a;
};
template <class... P> static void lc_call(void** av) {
  LcPack<P...>* pk = (LcPack<P...>*)av[0];
  std::apply(pk->k, pk->a);
}
static unsigned long long lc_seed;
template <class... P, class... A>
static void lc_launch(int grid, void (*k)(P...), A... a) {
  LcPack<P...> pk = {k, std::tuple<P...>(a...)};
  void* av[] = {&pk};
  ::gs::LaunchCfg cfg = {{(unsigned)grid, 1u, 1u}, {LC_BLOCK, 1u, 1u}, 0u, lc_seed,
                         50000000ull, 60.0, 64u * 1024u, 0xFFu};
  char msg[1024];
  lc_in_kernel = true;
  int st = ::gs::launch(&cfg, &lc_call<P...>, av, msg, (int)sizeof msg);
  lc_in_kernel = false;
  if (st != 0) {
    printf("error launch: %s\n", msg);
    exit(3);
  }
  if (lc_err_dev != 0) lc_host_trap(lc_err_dev);
}
#endif

static int lc_blocks(int n) { return n <= 0 ? 1 : (n + LC_BLOCK - 1) / LC_BLOCK; }

// ------------------------------------------------- folds (REDUCE and SCAN, 5.3)
// R: a reduction operator (T, id(), op(a, b)), emitted per program. Int and bool
// operators are associative, so a tree in shared memory computes the left fold;
// float ones are not, and fold in one thread in index order (the interpreter's R).
template <class R> __global__ void lc_reduce_block(Arr<typename R::T> in,
                                                   Arr<typename R::T> out) {
  typedef typename R::T T;
  __shared__ T buf[LC_BLOCK];
  int t = (int)threadIdx.x, i = (int)blockIdx.x * LC_BLOCK + t;
  buf[t] = i < in.n ? in.p[i] : R::id();
  __syncthreads();
  for (int s = LC_BLOCK / 2; s > 0; s /= 2) {
    if (t < s) buf[t] = R::op(buf[t], buf[t + s]);
    __syncthreads();
  }
  if (t == 0) out.p[blockIdx.x] = buf[0];
}

template <class R> __global__ void lc_reduce_seq(Arr<typename R::T> in,
                                                 Arr<typename R::T> out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  typename R::T acc = in.n > 0 ? in.p[0] : R::id();
  for (int i = 1; i < in.n; ++i) acc = R::op(acc, in.p[i]);
  out.p[0] = acc;
}

// Multi-pass: one partial per block, then the partials, until one block is left.
template <class R> static typename R::T lc_reduce(Arr<typename R::T> in) {
  typedef typename R::T T;
  if (!R::tree) {
    Arr<T> out = lc_alloc<T>(1);
    lc_launch(1, &lc_reduce_seq<R>, in, out);
    return out.p[0];
  }
  for (;;) {
    int g = lc_blocks(in.n);
    Arr<T> out = lc_alloc<T>(g);
    lc_launch(g, &lc_reduce_block<R>, in, out);
    if (g == 1) return out.p[0];
    in = out;
  }
}

template <class R> __global__ void lc_scan_block(Arr<typename R::T> in,
                                                 Arr<typename R::T> out,
                                                 Arr<typename R::T> sums) {
  typedef typename R::T T;
  __shared__ T buf[LC_BLOCK];
  int t = (int)threadIdx.x, i = (int)blockIdx.x * LC_BLOCK + t;
  buf[t] = i < in.n ? in.p[i] : R::id();
  __syncthreads();
  for (int d = 1; d < LC_BLOCK; d *= 2) {  // Hillis-Steele, inclusive
    T left = t >= d ? buf[t - d] : R::id();
    __syncthreads();
    if (t >= d) buf[t] = R::op(left, buf[t]);
    __syncthreads();
  }
  if (i < in.n) out.p[i] = buf[t];
  if (t == LC_BLOCK - 1) sums.p[blockIdx.x] = buf[t];
}

template <class R> __global__ void lc_scan_add(Arr<typename R::T> out,
                                               Arr<typename R::T> sums) {
  int i = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (blockIdx.x > 0 && i < out.n) out.p[i] = R::op(sums.p[blockIdx.x - 1], out.p[i]);
}

template <class R> __global__ void lc_scan_seq(Arr<typename R::T> in,
                                               Arr<typename R::T> out) {
  if (threadIdx.x != 0 || blockIdx.x != 0 || in.n == 0) return;
  typename R::T acc = in.p[0];
  out.p[0] = acc;
  for (int i = 1; i < in.n; ++i) out.p[i] = acc = R::op(acc, in.p[i]);
}

// Inclusive scan of `in` into `out` (same length): per block, then the block sums
// scanned (recursively) and added to the blocks after the first.
template <class R> static void lc_scan(Arr<typename R::T> in,
                                       Arr<typename R::T> out) {
  typedef typename R::T T;
  if (in.n == 0) return;
  if (!R::tree) {
    lc_launch(1, &lc_scan_seq<R>, in, out);
    return;
  }
  int g = lc_blocks(in.n);
  Arr<T> sums = lc_alloc<T>(g);
  lc_launch(g, &lc_scan_block<R>, in, out, sums);
  if (g == 1) return;
  Arr<T> scanned = lc_alloc<T>(g);
  lc_scan<R>(sums, scanned);
  lc_launch(g, &lc_scan_add<R>, out, scanned);
}

// Only under the seeded fault `scan-exclusive` (faults.py): VCODE's exclusive scan.
template <class R> __global__ void lc_shift(Arr<typename R::T> from,
                                            Arr<typename R::T> to) {
  int i = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (i < to.n) to.p[i] = i == 0 ? R::id() : from.p[i - 1];
}
template <class R> static void lc_exclusive(Arr<typename R::T> a) {
  typedef typename R::T T;
  if (a.n == 0) return;
  Arr<T> copy = lc_alloc<T>(a.n);
  memcpy(copy.p, a.p, sizeof(T) * (size_t)a.n);
  lc_launch(lc_blocks(a.n), &lc_shift<R>, copy, a);
}

// ---------------------------------------------------------------------- printing
// A machine-readable form the driver parses (floats as bits: exact, NaN payloads kept).
static void lc_show(int v) {
  char t[32];
  snprintf(t, sizeof t, " i%d", v);
  lc_out(t);
}
static void lc_show(float v) {
  char t[32];
  snprintf(t, sizeof t, " f%08x", lc_bits(v));
  lc_out(t);
}
static void lc_show(bool v) { lc_out(v ? " b1" : " b0"); }
static void lc_show(char v) {
  char t[32];
  snprintf(t, sizeof t, " c%d", (int)v);
  lc_out(t);
}
template <class T> static void lc_show(Arr<T> a) {
  char t[32];
  snprintf(t, sizeof t, " [%d", a.n);
  lc_out(t);
  for (int i = 0; i < a.n; ++i) lc_show(a.p[i]);
  lc_out(" ]");
}
template <class... T> static void lc_show(const std::tuple<T...>& t) {
  lc_out(" (");
  std::apply([](const T&... x) { (lc_show(x), ...); }, t);
  lc_out(" )");
}
template <class... T> static std::tuple<> lc_print(T... x) {
  lc_out("print");
  (lc_show(x), ...);
  lc_out("\n");
  return std::tuple<>();
}

#endif  // LAMBDACU_RT_CUH


struct R_fadd {
  typedef float T;
  static constexpr bool tree = false;
  static LC_HDM float id() { return 0x0.0p+0f; }
  static LC_HDM float op(float a, float b) { return lc_add(a, b); }
};

struct R_fmul {
  typedef float T;
  static constexpr bool tree = false;
  static LC_HDM float id() { return 0x1.0000000000000p+0f; }
  static LC_HDM float op(float a, float b) { return lc_mul(a, b); }
};

struct R_iadd {
  typedef int T;
  static constexpr bool tree = true;
  static LC_HDM int id() { return 0; }
  static LC_HDM int op(int a, int b) { return lc_add(a, b); }
};

__global__ void k_k0_1(Arr<int> cell_0, Arr<int> h1_a0) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int r_0;
  const int g3_i1 = 0;
  int g4_t2;
  g4_t2 = lc_at(h1_a0, 0);
  int g7_t3;
  int g8_p4;
  int g9_q5;
  g8_p4 = g3_i1;
  g9_q5 = g3_i1;
  g7_t3 = lc_at(h1_a0, 0);
  r_0 = lc_min(g4_t2, g7_t3);
  cell_0.p[0] = r_0;
}

__global__ void k_k0_2(int n, Arr<bool> t14_col) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  bool r_0;
  const int g13_i7 = gid;
  r_0 = false;
  t14_col.p[gid] = r_0;
}

__global__ void k_k1_1(int n, Arr<int> t5_col, Arr<int> t6_keep) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r_0;
  const int g4_i9 = gid;
  r_0 = 8;
  t5_col.p[gid] = r_0;
  bool p;
  const int g7_e11 = r_0;
  bool g9_c12;
  bool g10_c13;
  g10_c13 = true;
  if (g10_c13) {
    g9_c12 = false;
  } else {
    g9_c12 = false;
  }
  if (g9_c12) {
    bool g11_t14;
    g11_t14 = true;
    p = lc_or(false, g11_t14);
  } else {
    bool g12_p15;
    float g13_q16;
    g12_p15 = true;
    g13_q16 = 0x1.0000000000000p+1f;
    p = true;
  }
  t6_keep.p[gid] = p ? 1 : 0;
}

__global__ void k_k1_2(int n, int count, Arr<int> keep, Arr<int> u, Arr<int> col0, Arr<int> out0, Arr<int> false0) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  if (keep.p[gid]) {
    const int to = u.p[gid] - 1;
    if (to < 0 || to >= count) return;
    out0.p[to] = col0.p[gid];
  } else {
    false0.p[gid - u.p[gid]] = col0.p[gid];
  }
}

__global__ void k_k1_3(Arr<float> cell_0, Arr<float> cell_1, Arr<float> h2_a1) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  float r_0;
  float r_1;
  const int g18_i19 = 0;
  float g19_v20;
  g19_v20 = lc_sub(-0x1.7000000000000p+2f, -0x1.8000000000000p+1f);
  float g21_v21;
  bool g22_c22;
  g22_c22 = false;
  if (g22_c22) {
    g21_v21 = lc_at(h2_a1, 0);
  } else {
    g21_v21 = 0x0.0p+0f;
  }
  r_0 = g19_v20;
  r_1 = g21_v21;
  cell_0.p[0] = r_0;
  cell_1.p[0] = r_1;
}

__global__ void k_k1_4(Arr<int> cell_0) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int r_0;
  int g27_t26;
  g27_t26 = 4;
  r_0 = lc_abs(g27_t26);
  cell_0.p[0] = r_0;
}

__global__ void k_k2_1(int n, Arr<float> t13_col, Arr<float> t14_col) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  float r_0;
  float r_1;
  const int g4_i28 = gid;
  float g8_v29;
  float g9_p31;
  int g10_q32;
  g9_p31 = -0x1.9000000000000p+2f;
  g10_q32 = 1;
  float g11_t33;
  g11_t33 = -0x1.4000000000000p+2f;
  g8_v29 = lc_sqrt(g11_t33);
  float g12_v30;
  g12_v30 = 0x1.1000000000000p+2f;
  r_0 = g8_v29;
  r_1 = g12_v30;
  t13_col.p[gid] = r_0;
  t14_col.p[gid] = r_1;
}

__global__ void k_k2_2(int n, Arr<int> t29_col, Arr<int> t30_col, Arr<int> t31_keep, Arr<int> h1_a0, Arr<int> h2_a1) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  int r_0;
  int r_1;
  const int g18_i36 = gid;
  int g21_v37;
  int g22_t42;
  g22_t42 = g18_i36;
  int g23_t43;
  g23_t43 = lc_at(h2_a1, g18_i36);
  g21_v37 = lc_mul(g22_t42, g23_t43);
  int g25_v38;
  bool g26_c39;
  g26_c39 = lc_le(-4, 5);
  if (g26_c39) {
    g25_v38 = lc_at(h2_a1, g18_i36);
  } else {
    int g27_p40;
    bool g28_q41;
    g27_p40 = -5;
    g28_q41 = false;
    g25_v38 = lc_at(h1_a0, g18_i36);
  }
  r_0 = g21_v37;
  r_1 = g25_v38;
  t29_col.p[gid] = r_0;
  t30_col.p[gid] = r_1;
  bool p;
  const int g32_e46 = r_0;
  const int g33_e47 = r_1;
  int g35_t48;
  int g36_t49;
  g36_t49 = 5;
  g35_t48 = lc_abs(g36_t49);
  p = lc_le(g35_t48, 4);
  t31_keep.p[gid] = p ? 1 : 0;
}

__global__ void k_k2_3(int n, int count, Arr<int> keep, Arr<int> u, Arr<int> col0, Arr<int> col1, Arr<int> out0, Arr<int> out1) {
  const int gid = (int)blockIdx.x * LC_BLOCK + (int)threadIdx.x;
  if (gid >= n) return;
  if (keep.p[gid]) {
    const int to = u.p[gid] - 1;
    if (to < 0 || to >= count) return;
    out0.p[to] = col0.p[gid];
    out1.p[to] = col1.p[gid];
  }
}

static int fn_bump(int v1_x);
static std::tuple<Arr<bool>, Arr<int>, int, Arr<int>, Arr<float>, int> fn_main();

static Arr<bool> run_k0(Arr<int> h1_a0, float h2_s0) {
  Arr<int> t10_cell = lc_alloc<int>(1);
  lc_launch(1, &k_k0_1, t10_cell, h1_a0);
  const int h11_r6 = t10_cell.p[0];
  const int t12_n = h1_a0.n;
  if (t12_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<bool> t14_col = lc_alloc<bool>(t12_n);
  if (t12_n > 0) lc_launch(lc_blocks(t12_n), &k_k0_2, t12_n, t14_col);
  const Arr<bool> h15_r8 = t14_col;
  return h15_r8;
}

static std::tuple<Arr<int>, int, Arr<int>> run_k1(Arr<bool> h1_a0, Arr<float> h2_a1) {
  const int t3_n = h1_a0.n;
  if (t3_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> t5_col = lc_alloc<int>(t3_n);
  Arr<int> t6_keep = lc_alloc<int>(t3_n);
  if (t3_n > 0) lc_launch(lc_blocks(t3_n), &k_k1_1, t3_n, t5_col, t6_keep);
  Arr<int> t14_u = lc_alloc<int>(t3_n);
  lc_scan<R_iadd>(t6_keep, t14_u);
  const int t15_count = t3_n > 0 ? t14_u.p[t3_n - 1] : 0;
  Arr<int> h16_r17 = lc_alloc<int>(t15_count);
  Arr<int> h17_r18 = lc_alloc<int>(t3_n - t15_count);
  if (t3_n > 0) lc_launch(lc_blocks(t3_n), &k_k1_2, t3_n, t15_count, t6_keep, t14_u, t5_col, h16_r17, h17_r18);
  Arr<float> t23_cell = lc_alloc<float>(1);
  Arr<float> t24_cell = lc_alloc<float>(1);
  lc_launch(1, &k_k1_3, t23_cell, t24_cell, h2_a1);
  const float h25_r23 = t23_cell.p[0];
  const float h26_r24 = t24_cell.p[0];
  Arr<int> t28_cell = lc_alloc<int>(1);
  lc_launch(1, &k_k1_4, t28_cell);
  const int h29_r27 = t28_cell.p[0];
  return std::make_tuple(h17_r18, h29_r27, h16_r17);
}

static Arr<float> run_k2(Arr<int> h1_a0, Arr<int> h2_a1) {
  const int t3_n = h2_a1.n;
  if (t3_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<float> t13_col = lc_alloc<float>(t3_n);
  Arr<float> t14_col = lc_alloc<float>(t3_n);
  if (t3_n > 0) lc_launch(lc_blocks(t3_n), &k_k2_1, t3_n, t13_col, t14_col);
  Arr<float> h15_r34 = lc_alloc<float>(t3_n);
  lc_scan<R_fadd>(t13_col, h15_r34);
  Arr<float> h16_r35 = lc_alloc<float>(t3_n);
  lc_scan<R_fmul>(t14_col, h16_r35);
  const int t17_n = h15_r34.n;
  if (t17_n < 0) lc_host_trap(LC_NEG_SIZE);
  Arr<int> t29_col = lc_alloc<int>(t17_n);
  Arr<int> t30_col = lc_alloc<int>(t17_n);
  Arr<int> t31_keep = lc_alloc<int>(t17_n);
  if (t17_n > 0) lc_launch(lc_blocks(t17_n), &k_k2_2, t17_n, t29_col, t30_col, t31_keep, h1_a0, h2_a1);
  Arr<int> t37_u = lc_alloc<int>(t17_n);
  lc_scan<R_iadd>(t31_keep, t37_u);
  const int t38_count = t17_n > 0 ? t37_u.p[t17_n - 1] : 0;
  Arr<int> h39_r50 = lc_alloc<int>(t38_count);
  Arr<int> h40_r51 = lc_alloc<int>(t38_count);
  if (t17_n > 0) lc_launch(lc_blocks(t17_n), &k_k2_3, t17_n, t38_count, t31_keep, t37_u, t29_col, t30_col, h39_r50, h40_r51);
  return h15_r34;
}

static int fn_bump(int v1_x) {
  return [&]() { auto v2_y = lc_add(v1_x, 1); return v2_y; }();
}

static std::tuple<Arr<bool>, Arr<int>, int, Arr<int>, Arr<float>, int> fn_main() {
  return [&]() { auto v1_o0 = run_k0(lc_lit<int>(2, 7, -4, 3, 2), -0x1.e000000000000p+2f); return [&]() { auto t = run_k1(lc_lit<bool>(true, false, false, false, false), lc_lit<float>(-0x1.d000000000000p+2f, -0x1.5000000000000p+2f, -0x1.a000000000000p+2f, -0x1.0000000000000p+3f, -0x1.2000000000000p+1f)); auto v2_o1 = std::get<0>(t); auto v3_o2 = std::get<1>(t); auto v4_o3 = std::get<2>(t); return [&]() { auto v5_in2 = lc_lit<int>(-7, 8, 9, -7, 9); return [&]() { auto v6_o4 = run_k2(v5_in2, lc_lit<int>(9, -5, -5, -1, 0)); return [&]() { auto v7_h = fn_bump(3); return [&]() { auto t = lc_print(v7_h); (void)t; return [&]() { auto v8_c = lc_lt(v7_h, 5); return [&]() { if (v8_c) return std::make_tuple(v1_o0, v2_o1, v3_o2, v4_o3, v6_o4, v7_h); return std::make_tuple(v1_o0, v2_o1, v3_o2, v4_o3, v6_o4, v7_h); }(); }(); }(); }(); }(); }(); }(); }();
}

int main(int argc, char** argv) {
#if !GS_CUDA
  lc_seed = argc > 1 ? strtoull(argv[1], nullptr, 10) : 0ull;
#endif
  (void)argc;
  (void)argv;
  auto value = fn_main();
  lc_main_at = lc_len_out;
  lc_out("main");
  lc_show(value);
  lc_out("\n");
  lc_finish();
}
