"""Collective analysis (Section 4): the thread mapping of every unit of Figure 11 we
support, under CudaDeviceFunction and CudaWarps. Expected thread sets are computed
from Definition 4.1 (natural index = cluster_ctarank * blockDim + threadIdx.x) and
the unit sizes of Figure 11, not from the implementation."""

from __future__ import annotations

import pytest
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.parser import parse_proc
from gpusem.calculus.gpuir.walk import walk
from gpusem.typing_rules.gpuir.frontend import analyse, check_proc

NEST = """
proc p(Out: f32[8] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=256, clusterDim=2):
        for task in cuda_tasks(0, 3):
            Fence(cuda_in_order, cuda_in_order)
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                    for wp in cuda_threads(0, 2, unit=2 * cuda_warp):
                        for w in cuda_threads(0, 2, unit=cuda_warp):
                            for q in cuda_threads(0, 8, unit=4 * cuda_thread):
                                for t in cuda_threads(0, 4, unit=cuda_thread):
                                    Fence(cuda_in_order, cuda_in_order)
"""


def _stmts(proc: A.Proc, cls) -> list:
    return [s for s in walk(proc.body) if isinstance(s, cls)]


@pytest.fixture(scope="module")
def nest():
    proc = parse_proc(NEST)
    an = check_proc(proc, {})
    loops = {f.var: f for f in _stmts(proc, A.For)}
    return proc, an, loops


def test_cluster_scope_is_every_thread_of_the_cluster(nest) -> None:
    proc, an, _ = nest
    fence = _stmts(proc, A.Fence)[0]
    assert an.threads(fence, {"task": 1}) == tuple(range(512))
    assert an.mapping(fence).describe() == "cuda_cluster"


@pytest.mark.parametrize("var,env,first,size,unit", [
    ("cta", {"cta": 1}, 256, 256, "cuda_cta_in_cluster"),
    ("wg", {"cta": 1, "wg": 1}, 256 + 128, 128, "cuda_warpgroup"),
    ("wp", {"cta": 0, "wg": 1, "wp": 1}, 128 + 64, 64, "2 * cuda_warp"),
    ("w", {"cta": 1, "wg": 0, "wp": 1, "w": 1}, 256 + 64 + 32, 32, "cuda_warp"),
    ("q", {"cta": 0, "wg": 0, "wp": 0, "w": 1, "q": 5}, 32 + 20, 4, "4 threads"),
    ("t", {"cta": 1, "wg": 1, "wp": 1, "w": 1, "q": 7, "t": 3},
     256 + 128 + 64 + 32 + 28 + 3, 1, "cuda_thread"),
])
def test_iteration_runs_on_its_collective(nest, var, env, first, size, unit) -> None:
    proc, an, loops = nest
    body0 = loops[var].body[0]
    assert an.threads(body0, env) == tuple(range(first, first + size))
    assert an.mapping(body0).describe() == unit
    tiling = an.tiling(loops[var])
    assert tiling.stride == size and tiling.var == var


def test_cpu_scope_has_no_mapping() -> None:
    proc = parse_proc("proc p(X: f32[4] @ DRAM):\n    X[0] = 1.0\n")
    an = check_proc(proc, {})
    assert an.mapping(proc.body[0]) is None
    assert an.threads(proc.body[0], {}) == ()


WARPS = """
proc p(Out: f32[128] @ CudaGmemLinear):
    with CudaDeviceFunction(clusterDim=2, warp_config=[CudaWarpConfig("producer", 1, 40, 0), CudaWarpConfig("unused", 3, 40, 0), CudaWarpConfig("consumer", 8, 0, 232)]):
        for task in cuda_tasks(0, 1):
            with CudaWarps(name="producer"):
                Fence(cuda_in_order, cuda_in_order)
            with CudaWarps(2, 6, name="consumer"):
                Fence(cuda_in_order, cuda_in_order)
                for w in cuda_threads(0, 4, unit=cuda_warp):
                    Fence(cuda_in_order, cuda_in_order)
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                with CudaWarps(name="consumer"):
                    for wg in cuda_threads(0, 2, unit=cuda_warpgroup):
                        Fence(cuda_in_order, cuda_in_order)
"""


def test_cuda_warps_selects_named_warps_in_every_cta() -> None:
    # Figure 3: 1 producer, 3 unused, 8 consumer warps: blockDim = 384.
    proc = parse_proc(WARPS)
    an = check_proc(proc, {})
    f_prod, f_cons, f_w, f_wg = _stmts(proc, A.Fence)
    b = 384
    assert an.threads(f_prod, {}) == tuple(range(0, 32)) + tuple(range(b, b + 32))
    # consumer warps are warps 4..11; CudaWarps(2, 6) keeps warps 6..9
    cons = tuple(range(6 * 32, 10 * 32))
    assert an.threads(f_cons, {}) == cons + tuple(t + b for t in cons)
    assert an.threads(f_w, {"w": 3}) == tuple(range(9 * 32, 10 * 32)) + \
        tuple(range(b + 9 * 32, b + 10 * 32))
    # in CTA 1, consumer warpgroup 1 is warps 8..11
    assert an.threads(f_wg, {"cta": 1, "wg": 1}) == tuple(range(b + 256, b + 384))
    assert an.mapping(f_wg).describe() == "cuda_warpgroup"


def test_tiling_leaves_leftover_threads_inactive() -> None:
    proc = parse_proc("""
proc p(Out: f32[8] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, 1):
            for t in cuda_threads(0, 3, unit=32 * cuda_thread):
                Fence(cuda_in_order, cuda_in_order)
""")
    an = check_proc(proc, {})
    fence = _stmts(proc, A.Fence)[0]
    assert an.threads(fence, {"t": 2}) == tuple(range(64, 96))
    assert an.mapping(fence).describe() == "cuda_warp"


def test_loop_bounds_come_from_defines() -> None:
    proc = parse_proc("""
proc p(W: size, Out: f32[8] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, 1):
            for t in cuda_threads(1, W, unit=cuda_warp):
                Fence(cuda_in_order, cuda_in_order)
""")
    an = check_proc(proc, {"W": 4})
    fence = _stmts(proc, A.Fence)[0]
    assert an.threads(fence, {"t": 1}) == tuple(range(0, 32))  # iteration lo -> first warp
    assert an.threads(fence, {"t": 3}) == tuple(range(64, 96))
    bad = analyse(proc, {"W": 6})  # 5 warps do not fit in 4
    assert bad.errors and bad.errors[0].prefix == "bad tiling"


def test_failed_tiling_reports_once() -> None:
    proc = parse_proc("""
proc p(Out: f32[256] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=128):
        for task in cuda_tasks(0, 1):
            for t in cuda_threads(0, 256, unit=cuda_thread):
                Out[t] = 1.0
""")
    an = analyse(proc, {})
    assert [e.rule for e in an.errors] == ["CollectiveAnalysis"]
