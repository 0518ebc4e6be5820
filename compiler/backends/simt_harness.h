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
//     with the configured byte at every block start; uninitialised locals are poisoned
//     by g++'s -ftrivial-auto-var-init=pattern (cpu.py passes it);
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
#define GS_DYN_SHARED(T, name) T* const name = reinterpret_cast<T*>(::gs::g_dyn_smem)

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
enum Wait { W_NONE, W_BAR, W_WARP, W_MBAR };
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
};

struct Async {
  AsyncKind kind;
  void* dst;
  const void* src;
  unsigned bytes;
  int group;       // cp.async commit group; -1 while uncommitted
  u64* mbar;  // A_ARRIVE / A_BULK target
};

struct Thread {
  void* sp;
  char* stack_top;
  uint3 tid;
  int linear, warp, lane;
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
  uint3 block_idx;
  dim3 block_dim, grid_dim;
  int nthreads = 0;
  Barrier bars[16];
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
};

inline Runtime g_rt;
alignas(1024) inline unsigned char g_dyn_smem[GS_MAX_DYN_SMEM];

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
           t->tid.z, g_rt.block_idx.x, g_rt.block_idx.y, g_rt.block_idx.z);
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
inline void wake(Thread& t) { t.state = T_RUNNABLE; t.wait = W_NONE; }

inline long smem_off(const void* p) {
  const char* c = (const char*)p;
  if (c >= (const char*)g_dyn_smem && c < (const char*)g_dyn_smem + GS_MAX_DYN_SMEM)
    return c - (const char*)g_dyn_smem;
  return -1;
}

// ----------------------------------------------------------------- block barriers
// bar.sync / bar.arrive (id, n): per-thread arrival counts; `op` folds a predicate
// for __syncthreads_count/and/or (0 none, 1 count, 2 and, 3 or).
inline long long bar_arrive_impl(int id, int n, bool wait, int op, int pred) {
  Runtime& rt = g_rt;
  if (id < 0 || id > 15) error("barrier: id out of range 0..15");
  if (n <= 0 || (n % 32 != 0 && n != rt.nthreads))
    error("barrier: thread count must be a positive multiple of 32 (or the block size)");
  Barrier& b = rt.bars[id];
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
  Thread* me = rt.cur;
  if (wait) {
    me->wait = W_BAR;
    me->bar_id = id;
    me->state = T_BLOCKED;
  }
  if (b.arrived == b.expected) {  // the barrier completes: release every waiter
    for (Thread& t : rt.threads)
      if (t.state == T_BLOCKED && t.wait == W_BAR && t.bar_id == id) {
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
  int n = g_rt.nthreads - warp * 32;
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
// threads named in mask" to take part. Called when a lane arrives and, from the
// scheduler, when a lane exits. Returns false (status set, nothing switched) when the
// lanes of a group disagree on the operation.
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
    for (int k = 0; k < 32; k++)
      if ((group >> k & 1) && (base[k].mask != base[l].mask || base[k].op != base[l].op)) {
        rt.status = ST_RUNTIME_ERROR;
        snprintf(rt.msg, sizeof rt.msg,
                 "warp collective: lanes of warp %d disagree on the operation or mask", warp);
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
  return token;
}

inline void mbar_expect_tx(u64* bar, unsigned tx) {
  find_mbar(bar, "expect_tx")->tx += tx;
}

// ----------------------------------------------------------------- async copies
// Complete thread t's cp.async copies: all of them (`all`, uncommitted included) or the
// committed groups <= upto_group; then fire every arrive-on marker that no longer has
// an incomplete copy before it.
inline void settle_copies(Thread& t, bool all, int upto_group = -1) {
  bool blocked = false;
  std::vector<Async> keep;
  for (Async& a : t.pending) {
    if (a.kind == A_COPY) {
      bool done = all || (a.group >= 0 && a.group <= upto_group);
      if (done) { memcpy(a.dst, a.src, a.bytes); continue; }
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
    memcpy(a.dst, a.src, a.bytes);
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
  if (m->phase != (parity & 1)) { preempt(); return true; }
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
  g_rt.cur->pending.push_back(Async{A_COPY, dst, src, (unsigned)bytes, -1, nullptr});
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
  g_rt.cur->pending.push_back(Async{A_ARRIVE, nullptr, nullptr, 0, -1, bar});
}
inline void bulk_copy_g2s(void* dst, const void* src, unsigned bytes, u64* bar) {
  if (bytes % 16 != 0) error("cp.async.bulk: size must be a multiple of 16");
  find_mbar(bar, "cp.async.bulk");
  g_rt.bulk.push_back(Async{A_BULK, dst, src, bytes, -1, bar});
}

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
  if (g_rt.cfg.seed == 1) {
    for (int i = 0; i < n / 2; i++) { int t = order[i]; order[i] = order[n - 1 - i]; order[n - 1 - i] = t; }
  } else if (g_rt.cfg.seed >= 2) {
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

inline void run_block(uint3 bidx) {
  Runtime& rt = g_rt;
  rt.block_idx = bidx;
  size_t sh = (size_t)(__stop_gs_shared - __start_gs_shared);
  if (__start_gs_shared && sh) memset(__start_gs_shared, (int)rt.cfg.poison, sh);
  memset(g_dyn_smem, (int)rt.cfg.poison, rt.cfg.dyn_smem);
  memset(rt.bars, 0, sizeof rt.bars);
  rt.mbars.clear();
  rt.bulk.clear();
  unsigned bx = rt.block_dim.x, by = rt.block_dim.y;
  for (int i = 0; i < rt.nthreads; i++) {
    Thread& t = rt.threads[i];
    t.tid = uint3{i % bx, (i / bx) % by, i / (bx * by)};
    t.linear = i; t.warp = i / 32; t.lane = i % 32;
    t.state = T_RUNNABLE; t.wait = W_NONE; t.next_group = 0;
    t.pending.clear();
    init_fibre(t, rt.stacks + (size_t)(i + 1) * rt.stack_slot);
  }
  std::vector<int> order;
  for (;;) {
    make_order(order, rt.nthreads);
    bool ran = false, live = false;
    for (int i : order) {
      Thread& t = rt.threads[i];
      if (t.state != T_RUNNABLE) continue;
      rt.cur = &t;
      ran = true;
      rt.in_fibre = true;
      gs_ctx_switch(&rt.sched_sp, t.sp);
      rt.in_fibre = false;
      if (rt.status == ST_OK && t.state == T_EXITED) warp_try_complete(t.warp);
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
  rt.nthreads = (int)nt;
  rt.threads.resize(nt);
  if (!ensure_stacks((int)nt, cfg->stack_bytes)) {
    snprintf(msg, msglen, "bad launch: cannot map fibre stacks");
    return ST_BAD_CONFIG;
  }
  rt.alarm = 0;
  AlarmGuard guard(cfg->time_budget_s);
  std::vector<int> order;
  make_order(order, (int)nb);
  try {
    for (int b : order) {
      unsigned gx = cfg->grid[0], gy = cfg->grid[1];
      run_block(uint3{b % gx, (b / gx) % gy, b / (gx * gy)});
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
      break;
    case W_WARP: snprintf(buf, n, "warp %d collective (mask 0x%08x)", t.warp, t.mask); break;
    case W_MBAR: snprintf(buf, n, "mbarrier at shared+%ld parity %u", smem_off(t.mbar), t.parity); break;
    default: snprintf(buf, n, "nothing"); break;
  }
  return buf;
}

// "deadlock: block (b): <wait>: threads [...] (k of n arrived); ... exited: m threads".
inline void describe_deadlock() {
  Runtime& rt = g_rt;
  rt.status = ST_DEADLOCK;
  int len = snprintf(rt.msg, sizeof rt.msg, "deadlock: block (%u,%u,%u):", rt.block_idx.x, rt.block_idx.y, rt.block_idx.z);
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
        len += snprintf(rt.msg + len, sizeof rt.msg - len, "; %d of %d arrived", rt.bars[t.bar_id].arrived, rt.bars[t.bar_id].expected);
      len += snprintf(rt.msg + len, sizeof rt.msg - len, ");");
    }
    if (len >= (int)sizeof rt.msg - 64) break;
  }
  if (len < (int)sizeof rt.msg - 32)
    snprintf(rt.msg + len, sizeof rt.msg - len, " %d threads exited", exited);
}

}  // namespace gs

// ----------------------------------------------------------------- CUDA intrinsics
#define threadIdx (::gs::g_rt.cur->tid)
#define blockIdx (::gs::g_rt.block_idx)
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
template <class T> static inline T __ldg(const T* p) { return *p; }

#endif  // GPUSEM_SIMT_HARNESS_H
