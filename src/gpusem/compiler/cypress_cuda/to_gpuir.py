"""Lowering warp-specialised Cypress IR to GPU IR (issue 30; seed 001 Sec. 4.2.6,
l.699) for the tiled GEMMs of Fig. 5 and of the fuzz target: the plan that
gemm_plan.py reads off the IR, written out as one GPU IR procedure.

What becomes what:
- the pfor nest over blocks (Fig. 5a l.20) -> one `cuda_tasks` loop, its index split
  into the block's row and column (`task / GN`, `task % GN`);
- the roles (l.699) -> two `CudaWarpConfig`s, one DMA warp and the compute warps;
  without warp specialisation one `blockDim`;
- the processor levels of the mma leaf (Vec nests after vectorisation, Fig. 9) ->
  nested `cuda_threads` loops over warpgroups, warps and threads, each leaf processor
  owning a block of rows; a leaf above THREAD spreads its piece over its own threads
  (per-processor copies: element q of the piece on thread q % L);
- the crossing edges of warp specialisation -> mbarriers: DMA-to-compute of
  iteration k `full[k % P]`, the backward compute-to-DMA edges at distance P
  `empty[k % P]` awaited `if k >= P`; the `[:]` broadcast of the compute side's
  events is the arrival of every compute warp on `empty`; after the loop the DMA warp
  drains the last phases of `empty`, so arrivals and waits agree when the barriers
  are freed;
- without warp specialisation the edges are CTA-wide Fences: one after the copies
  (the `[:]` of the copies' events), and, with one buffer only, one after the compute
  (the write-after-read edge into the next copy; with P >= 2 buffers the next
  iteration's Fence already orders it);
- the pipelined buffers `[P, ..]` -> shared tensors indexed `k % P`; an operand the
  IR does not stage (its leaf reads global memory) is read from global memory;
- the accumulator, which the event IR keeps in NONE memory and copies through
  registers every iteration, stays in each thread's registers (the copies in and
  out of it are the identity there).
Seeded faults (faults.py): `cypress-lower-no-full-wait`, `cypress-lower-stage`.
"""

from __future__ import annotations

import math

import numpy as np
from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.machine import Processor
from gpusem.compiler.cypress_cuda import faults
from gpusem.compiler.cypress_cuda.gemm_plan import (
    THREADS,
    GemmPlan,
    NotLowered,
    plan_gemm,
)
from gpusem.compiler.cypress_cuda.to_gpuir_hopper import emit_hopper, hopper_fits

UNITS = {Processor.WARPGROUP: "cuda_warpgroup", Processor.WARP: "cuda_warp",
         Processor.THREAD: "cuda_thread"}


def lower_gemm(ir: E.EventProgram, program: A.Program,
               arrays: dict[str, np.ndarray], name: str = "cypress_gemm",
               form: str = "auto", dma_warps: int = 1) -> str:
    """GPU IR text for the warp-specialised IR of a tiled GEMM, or NotLowered.
    `form`: `hopper` (TMA + wgmma, to_gpuir_hopper.py, where the mapping asks for
    wgmma), `fma` (this module's loads and FMA loops), `auto` (hopper where it
    fits, else fma). `dma_warps`: of the hopper form, the warps issuing a stage's
    copies (to_gpuir_hopper.emit_hopper)."""
    plan = plan_gemm(ir, program, arrays)
    why = hopper_fits(plan)
    if plan.fused and (form == "fma" or why):
        # GPU IR's scalar expressions have no fma: only the fused wgmma says it
        raise NotLowered("the fused mma leaf (mma_fma) lowers only to the TMA + "
                         f"wgmma form{': ' + why if why else ''}")
    if form == "hopper" and why:
        raise NotLowered(f"no TMA + wgmma form: {why}")
    if form != "fma" and not why:
        return emit_hopper(plan, name, dma_warps)
    return emit(plan, name)


class _Out:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)


def _mul(a: str, b: int) -> str:
    return "0" if b == 0 or a == "0" else a if b == 1 else f"{a} * {b}"


def _add(*terms: str) -> str:
    kept = [t for t in terms if t != "0"]
    return " + ".join(kept) if kept else "0"


def _shape(p: GemmPlan) -> tuple[int, int, int]:
    """(threads of the block's compute, lanes of one leaf processor, the elements
    of the C tile it owns)."""
    pieces = math.prod(e for _, e in p.levels)
    lanes = THREADS[p.levels[-1][0]] if p.levels else p.threads
    block = max(32, -(-p.threads // 32) * 32)
    return block, lanes, p.tile[0] * p.tile[1] // pieces


def emit(p: GemmPlan, name: str) -> str:
    threads, lanes, piece = _shape(p)
    u, v = p.tile
    ws = p.ws and bool(p.staged)
    if p.copies and p.grid != (1, 1):
        raise NotLowered("an element-wise copy beside a multi-block grid")
    o = _Out()
    params = ", ".join(f"{t}: f32[{d}] @ CudaGmemLinear" for t, d in _params(p))
    o.add(0, f"# defines: M={p.m} N={p.n} K={p.k}")
    o.add(0, f"proc {name}(M: size, N: size, K: size, {params}):")
    warps = threads // 32
    if ws:
        # the compute warps first: a warpgroup starts at a multiple of 4 warps
        o.add(1, 'with CudaDeviceFunction(warp_config=[CudaWarpConfig("compute", '
              f'{warps}, 0, 0), CudaWarpConfig("dma", 1, 0, 0)]):')
    else:
        o.add(1, f"with CudaDeviceFunction(blockDim={threads}):")
    gm, gn = p.grid
    o.add(2, f"for task in cuda_tasks(0, {gm * gn}):")
    r0 = _mul("task / " + str(gn) if gn > 1 else "task", u) if gm > 1 else "0"
    c0 = _mul("task % " + str(gn), v) if gn > 1 else "0"
    d = 3
    if "A" in p.staged:
        o.add(d, f"As: f32[{p.depth}, {u}, {p.w}] @ CudaSmemLinear")
    if "B" in p.staged:
        o.add(d, f"Bs: f32[{p.depth}, {p.w}, {v}] @ CudaSmemLinear")
    acc_dims = [str(e) for _, e in p.levels] + ([str(lanes)] if lanes > 1 else [])
    per = -(-piece // lanes)
    o.add(d, f"acc: f32[{', '.join([*acc_dims, str(per)])}] @ CudaRmem")
    if ws:
        o.add(d, f"full: barrier[{p.depth}] @ CudaMbarrier")
        o.add(d, f"empty: barrier[{p.depth}] @ CudaMbarrier")
    leaf = _Leaf(p, lanes, piece, per)
    with_compute = 'with CudaWarps(name="compute"):'
    cd = d + 1 if ws else d
    if ws:
        o.add(d, with_compute)
    inner = leaf.open(o, cd)
    o.add(inner, f"acc[{leaf.acc}] = 0.0")
    _k_loop(o, p, leaf, d, r0, c0, threads, ws)
    if ws:
        o.add(d, 'with CudaWarps(name="dma"):')
        drain = range(max(p.steps - p.depth, 0), p.steps)
        for j in drain:
            o.add(d + 1, f"Await(empty[{j % p.depth}], cuda_in_order, -1)")
        o.add(d, with_compute)
    inner = leaf.open(o, cd)
    o.add(inner, f"C[{_add(r0, leaf.row)}, {_add(c0, leaf.col)}] = acc[{leaf.acc}]")
    for dst, src in p.copies:
        _copy_all(o, cd, threads, dst, src, p)
    o.add(d, "Fence(cuda_in_order, cuda_in_order)")
    return "\n".join(o.lines) + "\n"


def _params(p: GemmPlan) -> list[tuple[str, str]]:
    out = [("A", "M, K"), ("B", "K, N"), ("C", "M, N")]
    return out + [(dst, "M, K" if src == "A" else "K, N" if src == "B" else "M, N")
                  for dst, src in p.copies]


class _Leaf:
    """The loops over the mma leaf's processors and the element of the block's C
    tile each thread holds in `acc[.., e]`: leaf processor uid owns the S elements
    from uid * S (row-major), its element q = e * L + lane on thread `lane`. (Fig.
    5's partition_by_mma hands each thread a fragment of as many elements; which
    ones is the layout of the mma instruction, not the meaning of the GEMM.)"""

    def __init__(self, p: GemmPlan, lanes: int, piece: int, per: int) -> None:
        self.p, self.lanes, self.per = p, lanes, per
        names = [f"u{i}" for i in range(len(p.levels))]
        uid = ""
        for nm, (_, extent) in zip(names, p.levels, strict=True):
            uid = nm if not uid else f"({uid}) * {extent} + {nm}"
        idx = names + (["ln"] if lanes > 1 else [])
        self.names = names
        self.acc = ", ".join([*idx, "e"])
        q = "e" if lanes == 1 else f"e * {lanes} + ln"
        at = _add(_mul(f"({uid})" if "+" in uid else uid, piece) if uid else "0", q)
        at = f"({at})" if "+" in at else at
        v = p.tile[1]
        self.row, self.col = f"{at} / {v}", f"{at} % {v}"
        self.guard = f"{q} < {piece}" if per * lanes != piece else ""

    def open(self, o: _Out, d: int) -> int:
        for nm, (proc, extent) in zip(self.names, self.p.levels, strict=True):
            o.add(d, f"for {nm} in cuda_threads(0, {extent}, unit={UNITS[proc]}):")
            d += 1
        if self.lanes > 1:
            o.add(d, f"for ln in cuda_threads(0, {self.lanes}, unit=cuda_thread):")
            d += 1
        o.add(d, f"for e in seq(0, {self.per}):")
        if self.guard:
            o.add(d + 1, f"if {self.guard}:")
            return d + 2
        return d + 1


def _k_loop(o: _Out, p: GemmPlan, leaf: _Leaf, d: int, r0: str, c0: str,
            threads: int, ws: bool) -> None:
    slot = f"k % {p.depth}"
    read_slot = f"(k + 1) % {p.depth}" if faults.active("cypress-lower-stage") \
        else slot
    o.add(d, f"for k in seq(0, {p.steps}):")
    d += 1
    if ws:
        o.add(d, 'with CudaWarps(name="dma"):')
        o.add(d + 1, f"if k >= {p.depth}:")
        o.add(d + 2, f"Await(empty[{slot}], cuda_in_order, -1)")
        _stage(o, d + 1, p, slot, 32, "lane", r0, c0)
        o.add(d + 1, f"Arrive(cuda_in_order, 1) >> full[{slot}]")
        o.add(d, 'with CudaWarps(name="compute"):')
        d += 1
        if not faults.active("cypress-lower-no-full-wait"):
            o.add(d, f"Await(full[{slot}], cuda_in_order, -1)")
    elif p.staged:
        _stage(o, d, p, slot, threads, "t", r0, c0)
        if not faults.active("cypress-lower-no-full-wait"):
            o.add(d, "Fence(cuda_in_order, cuda_in_order)")
    inner = leaf.open(o, d)
    a = f"As[{read_slot}, {leaf.row}, kk]" if "A" in p.staged else \
        f"A[{_add(r0, leaf.row)}, k * {p.w} + kk]"
    b = f"Bs[{read_slot}, kk, {leaf.col}]" if "B" in p.staged else \
        f"B[k * {p.w} + kk, {_add(c0, leaf.col)}]"
    o.add(inner, f"for kk in seq(0, {p.w}):")
    o.add(inner + 1, f"acc[{leaf.acc}] = acc[{leaf.acc}] + {a} * {b}")
    if ws:
        o.add(d, f"Arrive(cuda_in_order, 1) >> empty[{slot}]")
    elif p.staged and p.depth == 1:
        o.add(d, "Fence(cuda_in_order, cuda_in_order)")


def _stage(o: _Out, d: int, p: GemmPlan, slot: str, threads: int, var: str,
           r0: str, c0: str) -> None:
    """The staging copies of one K step, element i * threads + var of each tile on
    thread var (the DMA warp's lanes, or every thread without a DMA warp)."""
    o.add(d, f"for {var} in cuda_threads(0, {threads}, unit=cuda_thread):")
    u, v, w = p.tile[0], p.tile[1], p.w
    q = f"(i * {threads} + {var})"
    for name, (rows, cols) in (("A", (u, w)), ("B", (w, v))):
        if name not in p.staged:
            continue
        count = rows * cols
        o.add(d + 1, f"for i in seq(0, {-(-count // threads)}):")
        at = d + 2
        if count % threads:
            o.add(at, f"if {q} < {count}:")
            at += 1
        r, c = f"{q} / {cols}", f"{q} % {cols}"
        src = f"A[{_add(r0, r)}, k * {w} + {c}]" if name == "A" else \
            f"B[k * {w} + {r}, {_add(c0, c)}]"
        o.add(at, f"{name}s[{slot}, {r}, {c}] = {src}")


def _copy_all(o: _Out, d: int, threads: int, dst: str, src: str,
              p: GemmPlan) -> None:
    """An element-wise copy of a whole parameter by every compute thread."""
    rows, cols = (p.m, p.k) if src == "A" else (p.k, p.n) if src == "B" \
        else (p.m, p.n)
    count = rows * cols
    q = f"(i * {threads} + t)"
    o.add(d, f"for t in cuda_threads(0, {threads}, unit=cuda_thread):")
    o.add(d + 1, f"for i in seq(0, {-(-count // threads)}):")
    at = d + 2
    if count % threads:
        o.add(at, f"if {q} < {count}:")
        at += 1
    o.add(at, f"{dst}[{q} / {cols}, {q} % {cols}] = {src}[{q} / {cols}, {q} % {cols}]")
