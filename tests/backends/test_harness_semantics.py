"""Finer points of the SIMT harness semantics, each on a small inline kernel."""

from __future__ import annotations

import numpy as np
import pytest

from gpusem.compiler.backends.cpu import CpuBackend
from gpusem.compiler.backends.kernel import Job, KernelSpec, ptr, scalar


def kernel(body: str, name: str = "k", params: str = "int* out") -> str:
    return f'#include "gpusem_rt.cuh"\nextern "C" __global__ void {name}({params}) {{\n{body}\n}}\n'


def run1(cpu, src, grid, block, params, inputs=None, seed=0, dyn=0, name="k", timeout_s=10.0):
    spec = KernelSpec(name, src, grid, block, dyn, params)
    (r,) = cpu.run([Job(spec, inputs or {}, seed, timeout_s)])
    return r


OUT64 = (ptr("out", "int32", 64),)


def test_indices_follow_cuda_linearisation(cpu):
    src = kernel(
        "  int lin = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;\n"
        "  int blk = blockIdx.x + blockIdx.y * gridDim.x;\n"
        "  out[blk * 24 + lin] = lin * 1000 + blk * 10 + (int)(gridDim.y * 100000);"
    )
    r = run1(cpu, src, (2, 3), (2, 3, 4), (ptr("out", "int32", 144),))
    assert r.kind == "ok", r.message
    lin, blk = np.meshgrid(np.arange(24), np.arange(6))
    assert np.array_equal(r.outputs["out"], (lin * 1000 + blk * 10 + 300000).reshape(-1))


def test_schedule_seed_orders_racing_writes_reproducibly(cpu):
    src = kernel("  out[0] = threadIdx.x;")
    outs = [run1(cpu, src, 1, 64, OUT64, seed=s).outputs["out"][0] for s in (0, 1, 5, 5)]
    assert outs[0] == 63  # forward: the last thread writes last
    assert outs[1] == 0  # reverse
    assert outs[2] == outs[3]  # a seed is a reproducible schedule


def test_block_order_follows_the_seed(cpu):
    src = kernel("  if (threadIdx.x == 0) out[1 + blockIdx.x] = atomicAdd(&out[0], 1);")
    fwd = run1(cpu, src, 4, 32, (ptr("out", "int32", 5),), seed=0).outputs["out"]
    rev = run1(cpu, src, 4, 32, (ptr("out", "int32", 5),), seed=1).outputs["out"]
    assert list(fwd[1:]) == [0, 1, 2, 3]
    assert list(rev[1:]) == [3, 2, 1, 0]


def test_shared_memory_is_poisoned_at_every_block(tmp_path):
    src = kernel("  __shared__ int s[4];\n  out[blockIdx.x] = s[1];\n  s[1] = 7;")
    for poison, word in ((0xA5, -1515870811), (0x5A, 0x5A5A5A5A)):
        be = CpuBackend(cache_dir=tmp_path, poison=poison)
        r = run1(be, src, 2, 1, (ptr("out", "int32", 2),))
        be.close()
        assert list(r.outputs["out"]) == [word, word]  # block 1 does not see block 0's 7


def test_warp_shuffle_width_segments(cpu):
    src = kernel(
        "  int v = threadIdx.x * 3;\n"
        "  out[threadIdx.x] = __shfl_sync(0xffffffffu, v, 2, 8);\n"
        "  out[32 + threadIdx.x] = __shfl_down_sync(0xffffffffu, v, 3, 8);"
    )
    r = run1(cpu, src, 1, 32, OUT64)
    lane = np.arange(32)
    seg = lane // 8 * 8
    down = np.where(lane % 8 + 3 < 8, lane + 3, lane)
    assert np.array_equal(r.outputs["out"][:32], (seg + 2) * 3)
    assert np.array_equal(r.outputs["out"][32:], down * 3)


def test_partial_mask_collective_with_an_exited_lane_deadlocks(cpu):
    src = kernel("  if (threadIdx.x == 5) return;\n  if (threadIdx.x < 8) __syncwarp(0x000000ffu);\n  out[threadIdx.x] = 1;")
    r = run1(cpu, src, 1, 32, OUT64)
    assert r.kind == "deadlock"
    assert "warp 0 collective (mask 0x000000ff)" in r.message


def test_syncwarp_caller_outside_mask_is_an_error(cpu):
    src = kernel("  __syncwarp(0x1u);")
    r = run1(cpu, src, 1, 32, OUT64)
    assert r.kind == "runtime_error"
    assert r.message.startswith("warp collective: calling lane not in mask")


def test_named_barrier_count_disagreement_is_an_error(cpu):
    src = kernel("  if (threadIdx.x < 32) gs_bar_sync(3, 64); else gs_bar_sync(3, 32);")
    r = run1(cpu, src, 1, 64, OUT64)
    assert r.kind == "runtime_error"
    assert r.message.startswith("barrier: thread count disagrees")


def test_syncthreads_and_or_count(cpu):
    src = kernel(
        "  int p = threadIdx.x % 3 == 0;\n"
        "  out[0 + threadIdx.x % 2] = __syncthreads_count(p);\n"
        "  out[2] = __syncthreads_and(threadIdx.x < 100);\n"
        "  out[3] = __syncthreads_or(threadIdx.x == 17);\n"
        "  out[4] = __syncthreads_and(threadIdx.x != 17);"
    )
    r = run1(cpu, src, 1, 64, OUT64)
    assert list(r.outputs["out"][:5]) == [22, 22, 1, 1, 0]


def test_mbarrier_before_init_is_an_error(cpu):
    src = kernel("  __shared__ gs_u64 bar;\n  gs_mbar_arrive(&bar);")
    r = run1(cpu, src, 1, 32, OUT64)
    assert r.kind == "runtime_error"
    assert r.message.startswith("mbarrier: arrive on an uninitialised mbarrier")


CP_MBAR = """
  __shared__ int s[32];
  __shared__ gs_u64 bar;
  int t = threadIdx.x;
  if (t == 0) gs_mbar_init(&bar, 32);
  __syncthreads();
  if (t < 32) {
    gs_cp_async(&s[t], &in[t], 4);
    gs_cp_async_mbar_arrive_noinc(&bar);
  } else {
    if (WAIT) gs_mbar_wait_parity(&bar, 0);
    out[t - 32] = s[(t + 1) % 32];
  }
"""


@pytest.mark.parametrize("wait", [1, 0])
def test_cp_async_mbarrier_arrive_completes_copies_for_the_waiter(cpu, wait):
    src = kernel(f"#define WAIT {wait}\n" + CP_MBAR, params="const int* in, int* out")
    x = np.arange(32, dtype=np.int32) * 11
    params = (ptr("in", "int32", 32), ptr("out", "int32", 32))
    results = [run1(cpu, src, 1, 64, params, {"in": x}, seed=s) for s in (0, 1, 2)]
    good = [r.kind == "ok" and np.array_equal(r.outputs["out"], np.roll(x, -1)) for r in results]
    assert all(good) if wait else not any(good)


def test_scalar_parameters_of_every_width(cpu):
    src = kernel(
        "  o[0] = (double)a + (double)b + c + (double)d;",
        params="double* o, signed char a, unsigned short b, double c, long long d",
    )
    params = (ptr("o", "float64", 1), scalar("a", "int8"), scalar("b", "uint16"),
              scalar("c", "float64"), scalar("d", "int64"))
    r = run1(cpu, src, 1, 1, params, {"a": -5, "b": 60000, "c": 0.25, "d": 2**40})
    assert r.outputs["o"][0] == -5 + 60000 + 0.25 + 2**40


def test_bad_launch_shape_is_a_runtime_error(cpu):
    src = kernel("  out[0] = 1;")
    r = run1(cpu, src, 1, 32, OUT64, dyn=300 * 1024)
    assert r.kind == "runtime_error" and "bad launch" in r.message


def test_time_budget_stops_a_yielding_livelock(cpu):
    src = kernel("  while (!gs_mbar_test_wait_parity(&bar, 0)) {}",
                 params="int* out")
    src = src.replace("{\n  while", "{\n  __shared__ gs_u64 bar;\n  if (threadIdx.x == 0) gs_mbar_init(&bar, 64);\n  __syncthreads();\n  while")
    r = run1(cpu, src, 1, 32, OUT64, timeout_s=0.3)
    assert r.kind == "timeout"


@pytest.mark.parametrize("index", ["n", "n + 1000", "-2000"])
def test_out_of_bounds_global_access_crashes(cpu, index):
    src = kernel(f"  int n = 5;\n  if (threadIdx.x == 0) out[{index}] = 1;", name="oob")
    r = run1(cpu, src, 1, 1, (ptr("out", "int32", 5),), name="oob")
    assert r.kind == "crash" and "SIGSEGV" in r.message


def test_in_bounds_last_element_is_fine(cpu):
    src = kernel("  out[threadIdx.x] = (int)threadIdx.x;", name="last")
    r = run1(cpu, src, 1, 5, (ptr("out", "int32", 5),), name="last")
    assert r.kind == "ok" and list(r.outputs["out"]) == [0, 1, 2, 3, 4]
