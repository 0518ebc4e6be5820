// simt_sched.h: the harness's scheduler (seeded fibre orders), the time budget,
// deadlock reports and `gs::launch`, the entry point of every generated launcher.
#ifndef GPUSEM_SIMT_SCHED_H
#define GPUSEM_SIMT_SCHED_H

#include "simt_sync.h"

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

// The cpu backend's libraries enter the runtime here (cpu_source.launcher). It is
// defined once per harness version, in an object the backend builds beside the
// precompiled header (cpu.py, RUNTIME_UNIT) and links into every library, so a
// kernel's translation unit never odr-uses gs::launch and g++ does not generate the
// whole runtime (launch, the scheduler, the deadlock report) again for each unit:
// about half of a one-kernel unit's g++ time. Hidden: each library calls its own copy.
extern "C" __attribute__((visibility("hidden"))) int gs_rt_launch(
    const gs::LaunchCfg* cfg, void (*thunk)(void**), void** args, char* msg, int msglen);

#endif  // GPUSEM_SIMT_SCHED_H
