// simt_sync.h: the harness's blocking points: block barriers (bar.sync / bar.arrive),
// warp collectives, mbarriers and the lazy asynchronous copies (cp.async, bulk).
#ifndef GPUSEM_SIMT_SYNC_H
#define GPUSEM_SIMT_SYNC_H

#include "simt_core.h"

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
