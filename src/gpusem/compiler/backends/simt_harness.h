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

#include "simt_core.h"
#include "simt_sync.h"
#include "simt_sched.h"
#include "simt_intrinsics.h"

#endif  // GPUSEM_SIMT_HARNESS_H
