"""The Hopper form of the lowering to GPU IR (seed 001 Sec. 4.2.6, l.699; Fig. 1b):
where the mapping asks for wgmma (partition_by_mma with a `WGMMA_..` instruction on
warpgroups, Fig. 5a l.46-49) and warp specialisation stages both operands, the DMA
warp's copies become TMA loads and the warpgroups' mma leaves wgmmas, in the GPU IR
forms of examples/gpuir/gemm_hopper.gpuir (without its cluster):

- a first kernel writes Bt = B^T (an extra global parameter, the lowering's
  scratch): tf32 wgmma reads both operands K-major (`b: [n, 8]`), and Cypress's B is
  K x N, which a TMA box cannot transpose;
- `A_map`, `B_map`: tensor maps over A and Bt, 128-byte swizzle, boxes of the block's
  tiles (U x 32 and V x 32: the K tile must be 32 floats, one swizzle row);
- the DMA warp: `Await(war, cuda_temporal, -P)` (the backward edge at distance P on a
  ring of P stages), two TMA loads issued by the warp (`TMA`) into stage `k % P`
  completing on `raw`, an Arrive;
- each warpgroup: `Await(raw)`, the wgmma fence, W / 8 wgmmas m64nVk8 per 64 rows it
  owns into its `Sm90_RmemMatrixD` accumulator, a commit group, at most one group in
  flight (the compute -> DMA edge: its `Arrive >> war` after the previous group is
  done), the drain and the store of D.

On a tensor core wgmma computes in tf32: equal to the float32 reading on
integer-valued data (the checks use integers in [-3, 3]), not on every input (errata
"Cypress lowering to GPU IR"). gpuir_cuda compiles it to exact float32 on the CUDA
cores instead (errata "MMA rounding"; its speed: results/cypress/gemm_speed.md).
Anything else falls back to the FMA form (to_gpuir.py).
"""

from __future__ import annotations

from gpusem.calculus.cypress.machine import Processor
from gpusem.compiler.cypress_cuda.gemm_plan import GemmPlan

TILE = 4096  # elements of B each block of the transposition kernel moves
# The DMA warp's tile load: the TMA load issued by a warp (ncta = 1: into its own
# CTA), Exo-GPU's form in its Hopper GEMM. gpuir_cuda spreads its rows over the
# warp's lanes; issued by one thread, each 128-byte row cost that thread 19 to 29
# instructions of address arithmetic (results/cypress/gemm_speed.md).
TMA = "Sm90_tma_multicast_warps_2d_f32"
# The leaf `mma` -> tf32 wgmma (exact float32 in gpuir_cuda: multiply, then add);
# `mma_fma` (ours) -> the fused wgmma of the same shape, one fma a step (errata
# "Extension: fused mma"): the leaf's k order and roundings are the instruction's.
WGMMA = {False: "Sm90_wgmma_m64nNk8_f32", True: "Sm90_wgmma_m64nNk8_f32_fma"}


def hopper_fits(p: GemmPlan) -> str:
    """Why the plan has no Hopper form ("" when it has one)."""
    u, v = p.tile
    if not p.instr.startswith("WGMMA"):
        return "the mapping names no wgmma instruction"
    if not (p.ws and p.staged == ("A", "B")):
        return "no DMA warp staging both operands"
    if len(p.levels) != 1 or p.levels[0][0] is not Processor.WARPGROUP:
        return "the mma leaf is not split over warpgroups alone"
    groups = p.levels[0][1]
    if p.w != 32 or u % (64 * groups) or v % 8 or v > 256 or u > 256:
        return "tiles wgmma and TMA do not take (K tile 32, 64 rows a warpgroup)"
    if p.copies or (p.n * p.k) % TILE:
        return "a copy beside the GEMM, or B not in whole transposition tiles"
    return ""


def emit_hopper(p: GemmPlan, name: str, dma_warps: int = 1) -> str:
    """`dma_warps`: the warps issuing a stage's copies, 1 (the form above) or 4
    (`_dma4`)."""
    if dma_warps not in (1, 4):
        raise ValueError(f"dma_warps {dma_warps}: 1 or 4")
    u, v = p.tile
    groups = p.levels[0][1]
    reps = u // (64 * groups)  # 64-row tiles of each warpgroup
    gm, gn = p.grid
    row0 = f"{u} * (task / {gn})" if gm > 1 else "0"
    col0 = f"{v} * (task % {gn})" if gn > 1 else "0"
    slot = f"k % {p.depth}"
    q = f"(task * {TILE} + i * 256 + t)"
    d_ix = "wg, r, :, :"
    lines = [
        f"# defines: M={p.m} N={p.n} K={p.k}",
        f"proc {name}(M: size, N: size, K: size, A: f32[M, K] @ CudaGmemLinear, "
        "B: f32[K, N] @ CudaGmemLinear, C: f32[M, N] @ CudaGmemLinear, "
        "Bt: f32[N, K] @ CudaGmemLinear):",
        "    with CudaDeviceFunction(blockDim=256):",
        f"        for task in cuda_tasks(0, N * K / {TILE}):",
        "            for t in cuda_threads(0, 256, unit=cuda_thread):",
        f"                for i in seq(0, {TILE // 256}):",
        f"                    Bt[{q} / K, {q} % K] = B[{q} % K, {q} / K]",
        f"    A_map = A[0:M, 0:K] @ Sm90_tensorMap(128, {u}, 32)",
        f"    B_map = Bt[0:N, 0:K] @ Sm90_tensorMap(128, {v}, 32)",
        '    with CudaDeviceFunction(warp_config=[CudaWarpConfig("compute", '
        f'{4 * groups}, 0, 232), '
        + ('CudaWarpConfig("dma", 1, 40, 0), CudaWarpConfig("unused", 3, 40, 0)]):'
           if dma_warps == 1 else 'CudaWarpConfig("dma", 4, 40, 0)]):'),
        f"        for task in cuda_tasks(0, {gm * gn}):",
        f"            D: f32[{groups}, {reps}, 64, {v}] @ Sm90_RmemMatrixD(64, {v})",
        '            with CudaWarps(name="compute"):',
        f"                for wg in cuda_threads(0, {groups}, "
        "unit=cuda_warpgroup):",
        f"                    for r in seq(0, {reps}):",
        f"                        Sm90_wgmma_zero_d_f32(D[{d_ix}])",
        "            raw: barrier @ CudaMbarrier",
        "            war: barrier @ CudaMbarrier",
        f"            cg: barrier[{groups}] @ CudaCommitGroup",
        f"            As: f32[{p.depth}, {u}, 32] @ Sm90_SmemSwizzled(128)",
        f"            Bs: f32[{p.depth}, {v}, 32] @ Sm90_SmemSwizzled(128)",
        f"            for k in seq(0, {p.steps}):",
        '                with CudaWarps(name="dma"):',
        f"                    Await(war, cuda_temporal, -{p.depth})",
        *(_dma4(p, row0, col0) if dma_warps == 4 else [
            (f"                    {TMA}(1, 1, As[{slot}:{slot} + 1, :, :], "
             f"A_map[{row0}:{row0} + {u}, 32 * k:32 * k + 32]) >> raw"),
            (f"                    {TMA}(1, 1, Bs[{slot}:{slot} + 1, :, :], "
             f"B_map[{col0}:{col0} + {v}, 32 * k:32 * k + 32]) >> raw")]),
        "                    Arrive(cuda_temporal, 1) >> raw",
        '                with CudaWarps(name="compute"):',
        "                    Await(raw, cuda_generic_and_async_proxy, -1)",
        f"                    for wg in cuda_threads(0, {groups}, "
        "unit=cuda_warpgroup):",
        "                        Fence(wgmma_fence_1, wgmma_fence_2)",
        f"                        for r in seq(0, {reps}):",
        "                            for kk in seq(0, 4):",
        f"                                {WGMMA[p.fused]}(D[{d_ix}], As[{slot}, "
        f"64 * ({reps} * wg + r):64 * ({reps} * wg + r) + 64, 8 * kk:8 * kk + 8], "
        f"Bs[{slot}, :, 8 * kk:8 * kk + 8])",
        "                        Arrive(wgmma_async, 1) >> cg[wg]",
        "                        if k >= 1:",
        "                            Await(cg[wg], cuda_in_order, 1)",
        "                    Arrive(cuda_in_order, 1) >> war",
        '            with CudaWarps(name="compute"):',
        f"                for wg in cuda_threads(0, {groups}, unit=cuda_warpgroup):",
        "                    Await(cg[wg], cuda_in_order, 0)",
        "            Fence(cuda_in_order, cuda_in_order)",
        '            with CudaWarps(name="compute"):',
        f"                for wg in cuda_threads(0, {groups}, unit=cuda_warpgroup):",
        f"                    for r in seq(0, {reps}):",
        f"                        Sm90_wgmma_store_d_f32(C[{row0} + 64 * ({reps} * wg"
        f" + r):{row0} + 64 * ({reps} * wg + r) + 64, {col0}:{col0} + {v}], "
        f"D[{d_ix}])",
    ]
    return "\n".join(lines) + "\n"


def _dma4(p: GemmPlan, row0: str, col0: str) -> list[str]:
    """A stage's copies over the DMA warpgroup's 4 warps (issue 30, cydma): warp w
    loads rows [w U / 4, (w + 1) U / 4) of A's tile and [w V / 4, (w + 1) V / 4) of
    B's, so the 4 schedulers each issue a quarter of the stage's bulk copies (one
    warp issuing all of them was the compute warps' wait: results/cypress/
    gemm_speed.md, cydma). Each warp waits on the stage's empty barrier itself (the
    Await before, by the 4 warps), and the 128 threads' one Arrive after the loop
    carries the whole stage's bytes (gpuir_cuda: the copies of a cuda_threads loop
    count once an instance): its expect-tx comes from one thread, after which the
    other warps' copies may already have completed. PTX ISA, "Parallel
    Synchronization and Communication Instructions: mbarrier", its subsections
    on the contents of the mbarrier object (tx-count's valid range is signed,
    -(2^20 - 1) .. 2^20 - 1) and on phase completion (pending arrivals and
    tx-count both zero): a complete-tx before the expect-tx is a transiently
    negative tx-count while an arrival is still pending, which cannot end the
    phase. (Section numbers differ between ISA versions; not pinned here.)
    count with arrivals still pending."""
    u, v = p.tile
    a, b = u // 4, v // 4
    slot = f"k % {p.depth}"
    return [
        "                    for w in cuda_threads(0, 4, unit=cuda_warp):",
        (f"                        {TMA}(1, 1, As[{slot}:{slot} + 1, {a} * w:{a} * w "
         f"+ {a}, :], A_map[{row0} + {a} * w:{row0} + {a} * w + {a}, "
         "32 * k:32 * k + 32]) >> raw"),
        (f"                        {TMA}(1, 1, Bs[{slot}:{slot} + 1, {b} * w:{b} * w "
         f"+ {b}, :], B_map[{col0} + {b} * w:{col0} + {b} * w + {b}, "
         "32 * k:32 * k + 32]) >> raw")]
