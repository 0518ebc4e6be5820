"""What the lowering to GPU IR (to_gpuir.py, seed 001 Sec. 4.2.6, l.699) reads off the
warp-specialised event IR of a tiled GEMM: the grid of blocks, the block's K loop
and its schedule, which operands the block stages in shared memory, the processor
levels of the compute, and the element-wise copies beside it. Anything else is
`NotLowered` with its reason, one line, never a crash.

Conventions: `ir` the warp-specialised event IR (events.py), `defs` every name the
IR binds (a tensor, an alias, a partition) to the op that binds it, `root(name)` the
tensor a name is a view of (a parameter or an allocation).

Note (errata "Cypress lowering to GPU IR"): the plan is a reading of the IR, not a
walk that emits one GPU IR statement per event: the roles, pipeline depth, staging
copies, barriers (the crossing edges) and processor levels are the IR's; the element
order inside a leaf processor's piece, and where an accumulator lives, are not
(l.163: a mapping "can only affect performance, not correctness").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.machine import Memory, Processor
from gpusem.calculus.errors import BadInput
from gpusem.compiler.cypress_cuda.warpspec import crossing

# threads of one processor of each level (the machine model's Fig. 5b levels)
THREADS = {Processor.WARPGROUP: 128, Processor.WARP: 32, Processor.THREAD: 1}
LEAVES = ("mma", "mma_fma", "clear", "copy")
MMAS = ("mma", "mma_fma")  # mma_fma: ours, one fma a step (errata "fused mma")
BLOCK_THREADS = 128  # the compute threads of a leaf mapped to the block itself


class NotLowered(BadInput):
    """An IR outside what the lowering covers: `not lowered: <reason>`."""

    def __init__(self, why: str) -> None:
        super().__init__(f"not lowered: {why}")


@dataclass(frozen=True)
class GemmPlan:
    m: int
    n: int
    k: int
    grid: tuple[int, int]                # blocks along M and N
    tile: tuple[int, int]                # the block's C tile (U, V)
    w: int                               # the K tile
    steps: int                           # iterations of the K loop
    depth: int                           # pipeline buffers (1: not pipelined)
    ws: bool                             # a DMA warp (Sec. 4.2.5)
    staged: tuple[str, ...]              # operands copied to shared memory per step
    levels: tuple[tuple[Processor, int], ...]  # the gemm leaf's processors
    threads: int                         # the compute threads of the block
    copies: tuple[tuple[str, str], ...]  # element-wise (dst, src) parameter copies
    instr: str = ""                      # the WGMMA_.. of partition_by_mma, if any
    fused: bool = False                  # the leaf is mma_fma: one fma a k step


def plan_gemm(ir: E.EventProgram, program: A.Program,
              arrays: dict[str, np.ndarray]) -> GemmPlan:
    if not {"C", "A", "B"} <= set(ir.params):
        raise NotLowered("the entrypoint's tensors are not C, A, B (not a GEMM)")
    defs = _defs(ir.body.ops)
    grid, block, tile = _grid(ir, arrays)
    m, n = arrays["C"].shape
    k = arrays["A"].shape[1]
    loops = [op for op in block if isinstance(op, E.Loop) and not op.parallel]
    if len(loops) != 1:
        raise NotLowered(f"{len(loops)} sequential loops in the block, not one K loop")
    loop = loops[0]
    if not (isinstance(loop.lo, E.INum) and isinstance(loop.hi, E.INum)
            and loop.lo.value == 0 and loop.hi.value > 0):
        raise NotLowered("the K loop's bounds are not constants from 0")
    steps = loop.hi.value
    if k % steps:
        raise NotLowered(f"K = {k} is not a multiple of the {steps} K steps")
    leaves = _leaf_calls(program, loop.body.ops, ())
    mma = [(c, lv) for c, lv, op in leaves if op in MMAS]
    if len(mma) != 1 or len(leaves) != 1:
        raise NotLowered("the K loop's body is not one call of the mma leaf "
                         f"({', '.join(op for _, _, op in leaves) or 'none'})")
    call, levels = mma[0]
    fills = _fills(ir.body.ops, defs)
    if tuple(source(r.name, defs, fills) for r in call.args[1:]) != ("A", "B"):
        raise NotLowered("the mma leaf's operands are not views of A and B")
    staged = _staged(loop, defs, fills)
    depth = max(loop.pipeline, 1)
    ws = any(getattr(op, "role", "") == "dma" for op in E.all_ops(loop.body.ops))
    _check_barriers(ir, ws, staged, depth)
    copies = _param_copies(program, block, defs, fills, ir.params)
    if set(ir.params) - {"C", "A", "B"} - {d for d, _ in copies}:
        raise NotLowered("a parameter besides C, A, B is not an element-wise copy")
    _check_levels(levels, tile[0] * tile[1])
    threads = levels[0][1] * THREADS[levels[0][0]] if levels else BLOCK_THREADS
    return GemmPlan(m, n, k, grid, tile, k // steps, steps, depth, ws, staged,
                    _fragments(levels, loop), threads, copies, _instr(loop),
                    leaves[0][2] == "mma_fma")


def _defs(ops: tuple[E.Op, ...]) -> dict[str, E.Op]:
    out: dict[str, E.Op] = {}
    for op in E.all_ops(ops):
        if isinstance(op, E.Alloc | E.Alias | E.PartBlocks | E.PartMma):
            out.setdefault(op.name, op)
    return out


def root(name: str, defs: dict[str, E.Op]) -> str:
    """The parameter or allocation that `name` is a view of."""
    seen = 0
    while name in defs and seen < 64:
        op = defs[name]
        if isinstance(op, E.Alias):
            name = op.ref.name
        elif isinstance(op, E.PartBlocks | E.PartMma):
            name = op.source
        else:
            return name
        seen += 1
    return name


def _roots(refs: tuple[E.Ref, ...], defs: dict[str, E.Op]) -> tuple[str, ...]:
    return tuple(root(r.name, defs) for r in refs)


def _fills(ops: tuple[E.Op, ...], defs: dict[str, E.Op]) -> dict[str, str]:
    """Each allocation a copy fills, to the tensor it fills it from."""
    return {root(op.dst.name, defs): root(op.src.name, defs)
            for op in E.all_ops(ops) if isinstance(op, E.Copy)
            and root(op.dst.name, defs) in defs}


def source(name: str, defs: dict[str, E.Op], fills: dict[str, str]) -> str:
    """The parameter whose data `name` holds, through the copies that fill the
    allocations it is a view of (a staged tile, Fig. 5b's global copies of A and B,
    l.43-44, the target's copy of A through a NONE tensor); "" if none."""
    name = root(name, defs)
    for _ in range(16):
        if name not in defs:
            return name
        if name not in fills:
            return ""
        name = fills[name]
    return ""


def _grid(ir: E.EventProgram, arrays: dict[str, np.ndarray]
          ) -> tuple[tuple[int, int], tuple[E.Op, ...], tuple[int, int]]:
    """The pfor nest over blocks (Fig. 5a l.20: `prange(cdiv(M, U), cdiv(N, V))`)
    and the block's body under it; no nest is one block."""
    m, n = arrays["C"].shape
    ops, extents = ir.body.ops, []
    while True:
        pfors = [op for op in ops if isinstance(op, E.Loop) and op.parallel]
        if not pfors:
            break
        if len(pfors) != 1 or pfors[0].type[-1][1] is not Processor.BLOCK:
            raise NotLowered("the parallel loops above the block are not one nest "
                             "over blocks")
        lo, hi = pfors[0].lo, pfors[0].hi
        if not (isinstance(lo, E.INum) and isinstance(hi, E.INum) and lo.value == 0):
            raise NotLowered("a grid loop's bounds are not constants from 0")
        extents.append(hi.value)
        ops = pfors[0].body.ops
    if len(extents) not in (0, 2):
        raise NotLowered(f"a grid of {len(extents)} dimensions, not M x N")
    gm, gn = extents or [1, 1]
    if m % gm or n % gn:
        raise NotLowered("the grid does not divide C")
    return (gm, gn), ops, (m // gm, n // gn)


def _leaf_calls(program: A.Program, ops: tuple[E.Op, ...],
                levels: tuple[tuple[Processor, int], ...]
                ) -> list[tuple[E.Call, tuple[tuple[Processor, int], ...], str]]:
    out = []
    for op in ops:
        if isinstance(op, E.Vec):
            out += _leaf_calls(program, op.ops, (*levels, (op.proc, op.extent)))
        elif isinstance(op, E.Loop):
            out += _leaf_calls(program, op.body.ops, levels)
        elif isinstance(op, E.Call):
            out.append((op, levels, leaf_op(program, op.function)))
    return out


def leaf_op(program: A.Program, function: str) -> str:
    var = program.variant(function)
    if var is None or var.kind != "Leaf" or len(var.body) != 1 \
            or not isinstance(var.body[0], A.LeafOp):
        raise NotLowered(f"the call of {function} is not one leaf library operation")
    op = var.body[0].op
    if op not in LEAVES:
        raise NotLowered(f"the leaf operation {op} has no GPU IR lowering "
                         f"(only {', '.join(LEAVES)})")
    return op


def _staged(loop: E.Loop, defs: dict[str, E.Op], fills: dict[str, str]
            ) -> tuple[str, ...]:
    """The operands the block copies into shared memory each step (on the DMA warp
    after warp specialisation): a copy at the loop's top from a view of A or B."""
    out = []
    for op in loop.body.ops:
        if not isinstance(op, E.Copy):
            continue
        dst = defs.get(root(op.dst.name, defs))
        if not (isinstance(dst, E.Alloc) and dst.mem is Memory.SHARED):
            continue
        src = source(op.src.name, defs, fills)
        if src in ("A", "B") and src not in out:
            out.append(src)
    return tuple(sorted(out))


def _check_barriers(ir: E.EventProgram, ws: bool, staged: tuple[str, ...],
                    depth: int) -> None:
    """The crossing edges (warpspec.crossing) must be the full/empty pair the
    lowering makes mbarriers of (l.699)."""
    if not ws:
        return
    edges = {(c.direction, c.back) for c in crossing(ir)}
    want = {("dma->compute", 0), ("compute->dma", depth)} if staged else set()
    if not edges <= want | {("compute->dma", 0)} or (staged and not want <= edges):
        raise NotLowered(f"the crossing edges {sorted(edges)} are not full/empty at "
                         f"distance {depth}")


def _param_copies(program: A.Program, block: tuple[E.Op, ...],
                  defs: dict[str, E.Op], fills: dict[str, str],
                  params: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Copy leaves whose destination is a parameter other than C and whose source
    is, through copies into allocations, another parameter (the target's X = A)."""
    drains = {root(op.src.name, defs): root(op.dst.name, defs)
              for op in E.all_ops(block) if isinstance(op, E.Copy)
              and root(op.src.name, defs) in defs}
    out = []
    for call, _, op in _leaf_calls(program, block, ()):
        if op != "copy" or len(call.args) != 2:
            continue
        dst = root(call.args[1].name, defs)
        for _ in range(16):  # a leaf writing a tensor copied out (Fig. 8b)
            if dst in params or dst not in drains:
                break
            dst = drains[dst]
        if dst in params and dst != "C":
            src = source(call.args[0].name, defs, fills)
            if src not in params:
                raise NotLowered(f"the copy into {dst} does not read a parameter")
            if (dst, src) not in out:
                out.append((dst, src))
    return tuple(out)


def _instr(loop: E.Loop) -> str:
    """The mma instruction the mapping's partition_by_mma names (Fig. 5a l.46)."""
    names = {op.instr for op in E.all_ops(loop.body.ops) if isinstance(op, E.PartMma)}
    return names.pop() if len(names) == 1 else ""


def _fragments(levels: tuple[tuple[Processor, int], ...], loop: E.Loop
               ) -> tuple[tuple[Processor, int], ...]:
    """The levels above those that partition_by_mma splits (Fig. 5a l.46-49): an
    mma instruction's fragments are its layout, spread over the threads of the
    processor that issues it (a warpgroup for wgmma), so the lowering deals that
    processor's piece out to its threads round-robin instead (note in the module
    docstring)."""
    mma = {op.proc for op in E.all_ops(loop.body.ops) if isinstance(op, E.PartMma)}
    kept = list(levels)
    while kept and kept[-1][0] in mma:
        kept.pop()
    return tuple(kept)


def _check_levels(levels: tuple[tuple[Processor, int], ...], cells: int) -> None:
    pieces = 1
    for proc, extent in levels:
        if proc not in THREADS:
            raise NotLowered(f"the mma leaf runs on {proc.name} processors")
        pieces *= extent
    if cells % pieces:
        raise NotLowered(f"{pieces} leaf processors do not divide a tile of "
                         f"{cells} elements")
