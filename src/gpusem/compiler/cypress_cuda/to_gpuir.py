"""The first step of lowering warp-specialised Cypress IR to GPU IR (issue 30 item 5;
seed 001 Sec. 4.2.6, l.699): one shape only, a single-block GEMM without TMA or
wgmma, whose pipelined loop has the two DMA copies of an A and a B tile and a
compute part of the `mma` leaf on one row piece per thread (examples/cypress/
gemm_ws_small.cyp). Any other IR is refused (BadInput): the general lowering is not
written.

What it lowers, as l.699 says: the roles become two `CudaWarpConfig`s (one DMA warp,
the compute warps); the crossing edges of warp specialisation become mbarriers: the
DMA-to-compute edges of iteration k `full[k % P]` (the DMA warp's plain copies arrive
`cuda_in_order`: no TMA), the backward compute-to-DMA edges at distance P
`empty[k % P]`, awaited `if k >= P` (none before the loop's P-th iteration, as `@-P`
means); after the loop the DMA warp drains the last phases of `empty`, so arrivals
and waits agree when the barriers are freed. The pipelined buffers `[P, ..]` become
shared tensors indexed `k % P`; the accumulator, which the event IR keeps in NONE
memory and copies through registers every iteration, stays in each thread's registers
(the copies in and out of the accumulator are the identity there).
"""

from __future__ import annotations

import math

import numpy as np
from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.machine import Processor
from gpusem.calculus.errors import BadInput
from gpusem.compiler.cypress_cuda.warpspec import crossing


def _refuse(why: str) -> BadInput:
    return BadInput(f"lowering to GPU IR: {why} (only a single-block GEMM of "
                    "examples/cypress/gemm_ws_small.cyp's shape is lowered yet)")


def lower_gemm(ir: E.EventProgram, program: A.Program,
               arrays: dict[str, np.ndarray], name: str = "cypress_gemm") -> str:
    """GPU IR text for the warp-specialised IR of a single-block GEMM."""
    if ir.params[:3] != ("C", "A", "B") or len(ir.params) != 3:
        raise _refuse("the entrypoint's tensors are not C, A, B")
    loops = [op for op in ir.body.ops if isinstance(op, E.Loop) and op.pipeline]
    if len(loops) != 1 or any(isinstance(op, E.Loop) and op.parallel
                              for op in ir.body.ops):
        raise _refuse("not one pipelined loop in one block")
    loop = loops[0]
    depth = loop.pipeline
    dma = [op for op in loop.body.ops if isinstance(op, E.Copy) and op.role == "dma"]
    parts = {op.name: op for op in ir.body.ops if isinstance(op, E.PartBlocks)}
    sources = [parts.get(op.src.name) for op in dma]
    if len(dma) != 2 or [p.source if p else "" for p in sources] != ["A", "B"]:
        raise _refuse("the loop's DMA copies are not one A and one B tile")
    vecs = [op for op in loop.body.ops if isinstance(op, E.Vec)]
    if len(vecs) != 1 or vecs[0].proc is not Processor.THREAD:
        raise _refuse("the compute part is not one loop over threads")
    threads = vecs[0].extent
    calls = [op for op in vecs[0].ops if isinstance(op, E.Call)]
    for c in calls:
        var = program.variant(c.function)
        if var is None or var.kind != "Leaf" or [type(s).__name__ for s in var.body] \
                != ["LeafOp"] or getattr(var.body[0], "op", "") != "mma":
            raise _refuse(f"the compute call {c.function} is not the mma leaf")
    if len(calls) != 1:
        raise _refuse("not one compute call")
    edges = {(c.direction, c.back) for c in crossing(ir)}
    if edges != {("dma->compute", 0), ("compute->dma", depth)}:
        raise _refuse(f"the barriers are not full/empty at distance {depth}")
    m, n = arrays["C"].shape
    k = arrays["A"].shape[1]
    a_part = sources[0]
    assert a_part is not None and a_part.blocks[1] is not None
    w = a_part.blocks[1]
    steps = math.ceil(k / w)
    if k % w or m % threads or (m * w) % 32 or (w * n) % 32 or threads > 128:
        raise _refuse("tile sizes the lowering's copies do not divide")
    rows = m // threads
    warps = math.ceil(threads / 32)
    slot = f"k % {depth}"
    drain = [f"{j % depth}" for j in range(max(steps - depth, 0), steps)]
    lines = [
        f"# defines: M={m} N={n} K={k}",
        f"proc {name}(M: size, N: size, K: size, A: f32[M, K] @ CudaGmemLinear, "
        "B: f32[K, N] @ CudaGmemLinear, C: f32[M, N] @ CudaGmemLinear):",
        '    with CudaDeviceFunction(warp_config=[CudaWarpConfig("dma", 1, 0, 0), '
        f'CudaWarpConfig("compute", {warps}, 0, 0)]):',
        "        for task in cuda_tasks(0, 1):",
        f"            As: f32[{depth}, {m}, {w}] @ CudaSmemLinear",
        f"            Bs: f32[{depth}, {w}, {n}] @ CudaSmemLinear",
        f"            acc: f32[{threads}, {rows}, {n}] @ CudaRmem",
        f"            full: barrier[{depth}] @ CudaMbarrier",
        f"            empty: barrier[{depth}] @ CudaMbarrier",
        '            with CudaWarps(name="compute"):',
        f"                for t in cuda_threads(0, {threads}, unit=cuda_thread):",
        f"                    for r in seq(0, {rows}):",
        f"                        for c in seq(0, {n}):",
        "                            acc[t, r, c] = 0.0",
        f"            for k in seq(0, {steps}):",
        '                with CudaWarps(name="dma"):',
        f"                    if k >= {depth}:",
        f"                        Await(empty[{slot}], cuda_in_order, -1)",
        "                    for lane in cuda_threads(0, 32, unit=cuda_thread):",
        f"                        for i in seq(0, {m * w // 32}):",
        f"                            As[{slot}, (i * 32 + lane) / {w}, "
        f"(i * 32 + lane) % {w}] = A[(i * 32 + lane) / {w}, "
        f"k * {w} + (i * 32 + lane) % {w}]",
        f"                        for i in seq(0, {w * n // 32}):",
        f"                            Bs[{slot}, (i * 32 + lane) / {n}, "
        f"(i * 32 + lane) % {n}] = B[k * {w} + (i * 32 + lane) / {n}, "
        f"(i * 32 + lane) % {n}]",
        f"                    Arrive(cuda_in_order, 1) >> full[{slot}]",
        '                with CudaWarps(name="compute"):',
        f"                    Await(full[{slot}], cuda_in_order, -1)",
        f"                    for t in cuda_threads(0, {threads}, unit=cuda_thread):",
        f"                        for r in seq(0, {rows}):",
        f"                            for c in seq(0, {n}):",
        f"                                for kk in seq(0, {w}):",
        "                                    acc[t, r, c] = acc[t, r, c] + "
        f"As[{slot}, t * {rows} + r, kk] * Bs[{slot}, kk, c]",
        f"                    Arrive(cuda_in_order, 1) >> empty[{slot}]",
        '            with CudaWarps(name="dma"):',
        *[f"                Await(empty[{s}], cuda_in_order, -1)" for s in drain],
        '            with CudaWarps(name="compute"):',
        f"                for t in cuda_threads(0, {threads}, unit=cuda_thread):",
        f"                    for r in seq(0, {rows}):",
        f"                        for c in seq(0, {n}):",
        f"                            C[t * {rows} + r, c] = acc[t, r, c]",
        "            Fence(cuda_in_order, cuda_in_order)",
    ]
    return "\n".join(lines) + "\n"
