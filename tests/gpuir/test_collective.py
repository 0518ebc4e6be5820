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


# ------------------------------- Figure 11's strided, quadpair and agnostic units

UNITS_MORE = """
proc p(Out: f32[8] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64, clusterDim=4):
        for task in cuda_tasks(0, 1):
            for c in cuda_threads(0, 2, unit=2 * cuda_cta_in_cluster_strided(2)):
                Fence(cuda_in_order, cuda_in_order)
            for cta in cuda_threads(0, 4, unit=cuda_cta_in_cluster):
                for w in cuda_threads(0, 2, unit=cuda_warp):
                    for q in cuda_threads(0, 4, unit=cuda_quadpair):
                        Fence(cuda_in_order, cuda_in_order)
                    for s in cuda_threads(0, 8, unit=4 * cuda_threads_strided(1, 8)):
                        Fence(cuda_in_order, cuda_in_order)
            with CudaWarps(0, 1):
                for r in cuda_threads(0, 2, unit=2 * cuda_warp_in_cluster_strided(2)):
                    Fence(cuda_in_order, cuda_in_order)
"""


def test_strided_and_quadpair_units() -> None:
    """Figure 11 with blockDim 64, clusterDim 4 (natural index = rank * 64 + tid):
    n1 * cuda_cta_in_cluster_strided(n3): domain (C/n3, n3, B), box (n1, 1, B);
    cuda_quadpair: domain (B/16, 16), box (2, 4); n1 * cuda_threads_strided(n2, n3):
    domain (B/n3, n3), box (n1, n2); n1 * cuda_warp_in_cluster_strided(n3): domain
    (C/n3, n3, B), box (n1, 1, 32). The loop tiles the one dimension whose box differs
    from the enclosing collective's and from the extent."""
    proc = parse_proc(UNITS_MORE)
    an = check_proc(proc, {})
    strided_ctas, quad, lanes, warps = _stmts(proc, A.Fence)
    b = 64
    # CTAs {1, 3}: ranks c and c + 2
    assert an.threads(strided_ctas, {"c": 1}) == tuple(range(b, 2 * b)) + \
        tuple(range(3 * b, 4 * b))
    # quadpair q of warp w: lanes 4q..4q+3 and 16+4q..16+4q+3
    env = {"cta": 2, "w": 1, "q": 3}
    first = 2 * b + 32
    assert an.threads(quad, env) == tuple(first + x for x in (12, 13, 14, 15,
                                                              28, 29, 30, 31))
    assert an.mapping(quad).describe() == "cuda_quadpair"
    # lanes s, s + 8, s + 16, s + 24 of the warp
    assert an.threads(lanes, {"cta": 0, "w": 1, "s": 5}) == (37, 45, 53, 61)
    # warp 0 of CTAs r and r + 2
    assert an.threads(warps, {"r": 1}) == tuple(range(b, b + 32)) + \
        tuple(range(3 * b, 3 * b + 32))


def test_agnostic_units_match_but_do_not_tile() -> None:
    """cuda_agnostic_sub_cta: any collective inside one CTA; cuda_agnostic_intact_cta:
    whole CTAs (Figure 11's `_` boxes). They are what an instruction accepts, not a
    loop's unit."""
    proc = parse_proc(UNITS_MORE)
    an = check_proc(proc, {})
    strided_ctas, quad, lanes, warps = _stmts(proc, A.Fence)
    sub = A.UnitExpr("cuda_agnostic_sub_cta")
    intact = A.UnitExpr("cuda_agnostic_intact_cta")
    assert an.mapping(quad).is_unit(sub) and an.mapping(lanes).is_unit(sub)
    assert not an.mapping(quad).is_unit(intact)
    assert an.mapping(strided_ctas).is_unit(intact)
    assert not an.mapping(strided_ctas).is_unit(sub)
    assert not an.mapping(warps).is_unit(sub)  # warps of two CTAs
    bad = parse_proc(UNITS_MORE.replace("unit=cuda_quadpair",
                                        "unit=cuda_agnostic_sub_cta"))
    errors = analyse(bad, {}).errors
    assert errors and errors[0].prefix == "bad tiling"
    assert "wildcard box" in errors[0].message


def test_quadpair_outside_a_warp_is_ambiguous() -> None:
    """In a whole CTA both of cuda_quadpair's dimensions differ from the collective's:
    no single dimension to tile (derive_ω's step 2)."""
    proc = parse_proc("""
proc p(Out: f32[8] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            for q in cuda_threads(0, 8, unit=cuda_quadpair):
                Fence(cuda_in_order, cuda_in_order)
""")
    errors = analyse(proc, {}).errors
    assert errors and "more than one dimension" in errors[0].message


def test_cta_loop_inside_warp_specialisation() -> None:
    """The paper's GEMM (Exo-GPU's sporkbench kernel) tiles CTAs inside
    CudaWarps(name="producer"): the collective of iteration cta is that CTA's
    producer warp (the unit's CTA-wide box equals the extent, so that dimension keeps
    the enclosing collective's box)."""
    proc = parse_proc("""
proc p(Out: f32[8] @ CudaGmemLinear):
    with CudaDeviceFunction(clusterDim=2, warp_config=[CudaWarpConfig("producer", 1, 0, 0), CudaWarpConfig("consumer", 2, 0, 0)]):
        for task in cuda_tasks(0, 1):
            with CudaWarps(name="producer"):
                for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                    Fence(cuda_in_order, cuda_in_order)
                for n in cuda_threads(0, 1, unit=2 * cuda_cta_in_cluster_strided(1)):
                    Fence(cuda_in_order, cuda_in_order)
""")
    an = check_proc(proc, {})
    per_cta, both = _stmts(proc, A.Fence)
    assert an.threads(per_cta, {"cta": 1}) == tuple(range(96, 128))
    assert an.threads(both, {"n": 0}) == tuple(range(32)) + tuple(range(96, 128))


ONE_THREAD_CTAS = """
proc p(Out: f32[2] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=1, clusterDim=2):
        for task in cuda_tasks(0, 1):
            for cta in cuda_threads(0, 2, unit=cuda_cta_in_cluster):
                for t in cuda_threads(0, {n}, unit=cuda_thread):
                    Out[cta + t] = 1.0
"""


@pytest.mark.parametrize("n,message", [(1, None),
                                       (64, "has one iteration, not 64")])
def test_one_thread_ctas_of_a_cluster_are_analysed(tmp_path, n, message) -> None:
    """Found by the 100,000-input robustness run: a cluster of one-thread CTAs (tiling
    (2, 1) against the thread unit's domain (2,)) was an AssertionError in tiling.align
    (exit 3); the launch is reported and the loops still analysed (a 64-thread loop in a
    one-thread CTA is a bad tiling)."""
    from click.testing import CliRunner
    from gpusem.cli.main import cli

    path = tmp_path / "p.gpuir"
    path.write_text(ONE_THREAD_CTAS.format(n=n))
    res = CliRunner().invoke(cli, ["check", str(path)])
    assert res.exit_code == 1, res.output
    assert "bad launch: blockDim 1 is not a multiple of 32" in res.output
    assert message is None or message in res.output, res.output
