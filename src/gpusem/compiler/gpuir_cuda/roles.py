"""Pass `split_roles`: each warp role's code apart, so setmaxnreg can be emitted
(issue 30, branch cyreg; Exo-GPU Section 3.4's `CudaWarpConfig(name, n, dec, inc)`).

Why. A warp-specialised kernel as `from_gpuir` lowers it keeps the GPU IR's shape:
one K loop whose body tests the warp index for each role,

    for (k ..) { if (dma warps) {..copies..}  if (compute warps) {..wgmma..} }

so ptxas sees one program and allocates it one register budget, the launch's (168 a
thread at 384 threads), and `setmaxnreg` inside it could not raise the compute
branch's budget: nothing after it is the compute warps' alone. The pass rewrites the
kernel from its first loop holding a role's branch (the split point) to its end into
one branch a register class (`K.WarpRole`: warps with the same counts):

    if (compute warps) { setmaxnreg.inc 232; for (k ..) {..wgmma..} __syncthreads(); ..}
    if (dma warps)     { setmaxnreg.dec 40;  for (k ..) {..copies..} __syncthreads(); }

the form CUTLASS's warp-specialised kernels have, and what ptxas needs to allocate
each branch its own count (it reports C7508 "setmaxnreg ignored; unable to determine
register count at entry" without a minimum of CTAs an SM, hence `min_blocks` = 1:
`__launch_bounds__(T, 1)`; and a role rejoining the other after its setmaxnreg made
it spill, 468 B at 168 registers on u128-v128-wgs2-p4: each branch runs to the end).

Meaning. Each thread runs, statement for statement, what it ran before: in the
branch of its class a CudaWarps test that holds for the whole class is its body, a
test that fails for the whole class is nothing, any other test (a role covering part
of the class, e.g. one DMA warp of four) stays as it was, and every other statement
(loops, barriers, lets) is copied unchanged. So every thread's sequence of memory and
synchronisation operations is the same, and so is every execution; `__syncthreads`
(barrier 0) counts arriving threads, not code addresses (PTX ISA, bar / barrier: a
warp-uniform branch may hold it). setmaxnreg changes no value: a hint on the
registers a warp may hold (PTX ISA, setmaxnreg): `gs_setmaxnreg_*` is the PTX
under nvcc and nothing on the cpu harness, which runs the split code as it is.

Rules checked here (PTX ISA, setmaxnreg; the front end's units check already has
the counts multiples of 8 in 24..256, uniform in each warpgroup, the block whole
warpgroups): the class's warps whole warpgroups (the instruction is per warpgroup),
and the counts fit the CTA's register pool, which holds what the launch allocated,
R x T (R: 65,536 / T, 8 at a time, 255 at most, the budget ptxas gives under
`__launch_bounds__(T, 1)`): a `.inc` the pool cannot grant blocks forever.
"""

from __future__ import annotations

import re
from dataclasses import replace

from gpusem.compiler.gpuir_cuda import kir as K
from gpusem.compiler.gpuir_cuda.errors import unsupported
from gpusem.compiler.gpuir_cuda.instr import UNROLL

WARPGROUP_WARPS = 4
REGISTER_FILE = 65536  # 32-bit registers an SM (sm_90)


def launch_registers(block: int) -> int:
    """The registers a thread has at launch with one CTA an SM: 65,536 over the block,
    allocated 8 at a time, 255 at most (ptxas's budget under __launch_bounds__(T, 1)
    at T = 384: 168)."""
    return min(255, REGISTER_FILE // max(block, 1) // 8 * 8)


def class_registers(k: K.GKernel) -> int:
    """The most registers a thread of any class holds after its setmaxnreg (the
    launch's where none raises it): the budget of the fused nest's chunk rule."""
    base = launch_registers(k.block)
    return max([base, *(r.inc for r in k.roles if r.inc)])


def pool_problem(k: K.GKernel) -> str:
    """Why the classes' counts do not fit the CTA's register pool ("" when they do)."""
    base = launch_registers(k.block)
    need = sum((r.inc or r.dec or base) * 32 * r.nwarps for r in k.roles)
    if need > base * k.block:
        return (f"setmaxnreg asks {need} registers of a pool of {base * k.block} "
                f"({base} a thread at launch x {k.block}): a setmaxnreg.inc would "
                "wait forever")
    return ""


def split_roles(k: K.GKernel) -> K.GKernel:
    """`k` with each register class's code from the split point on in a branch of its
    own, headed by its setmaxnreg (see the module's docstring)."""
    counted = [r for r in k.roles if r.dec or r.inc]
    if not counted:
        raise unsupported("setmaxnreg asked for, but the warp config gives no count",
                          k.span)
    for r in counted:
        if r.first % WARPGROUP_WARPS or r.nwarps % WARPGROUP_WARPS:
            raise unsupported(f"setmaxnreg on warps {r.first} .. {r.first + r.nwarps - 1}"
                              f" ({', '.join(r.names)}): not whole warpgroups", k.span)
    if (why := pool_problem(k)):
        raise unsupported(why, k.span)
    at = next((i for i, s in enumerate(k.body)
               if isinstance(s, K.GFor) and _has_role(s.body)), None)
    if at is None:
        raise unsupported("setmaxnreg asked for, but no loop holds a role's branch",
                          k.span)
    tail = k.body[at:]
    warp = "gs_t / 32" if k.cluster == 1 else f"gs_t % {k.block} / 32"
    branches = []
    for r in k.roles:
        rel = f"{warp} - {r.first}" if r.first else warp
        head: tuple[K.GStmt, ...] = ()
        if r.dec or r.inc:
            act, n = ("dec", r.dec) if r.dec else ("inc", r.inc)
            head = (K.GPrim(f"gs_setmaxnreg_{act}({n});"),)
        span = (r.first, r.first + r.nwarps)
        branches.append(K.GIf(f"(unsigned)({rel}) < {r.nwarps}u",
                              head + _project(tail, span), k.span,
                              f"role split: warp(s) {span[0]} .. {span[1] - 1} "
                              f"({', '.join(r.names)})", span))
    return replace(k, body=k.body[:at] + tuple(branches), min_blocks=1)


def _has_role(stmts: tuple[K.GStmt, ...]) -> bool:
    return any(isinstance(s, K.GIf) and s.warps is not None for s in K.walk(stmts))


def _project(stmts: tuple[K.GStmt, ...], span: tuple[int, int]
             ) -> tuple[K.GStmt, ...]:
    """`stmts` as the warps `span` run them: a warp branch holding all of them is its
    body, one holding none of them nothing, anything else as it is (with its body
    projected)."""
    lo, hi = span
    out: list[K.GStmt] = []
    for s in stmts:
        if isinstance(s, K.GIf) and s.warps is not None:
            a, b = s.warps
            if a <= lo and hi <= b:
                out.extend(_project(s.body, span))
                continue
            if b <= lo or hi <= a:
                continue
        if isinstance(s, (K.GIf, K.GFor)):
            s = replace(s, body=_project(s.body, span))
        out.append(s)
    return tuple(out)


def unroll_register_loops(k: K.GKernel) -> K.GKernel:
    """`#pragma unroll` (GS_CUDA) on each seq loop with constant bounds whose
    instructions index a register tile by the loop's variable (`D[wg, r]` under
    `for r in seq(0, 2)`): rolled, nvcc cannot name D's registers and keeps D in
    local memory (512 B of stack a thread on u256-v128-wgs2-p3, its tile copied in
    and out of `gs_acc` each step); unrolled, with the compute warps' 232 registers
    after setmaxnreg, D stays in registers (0 B of stack; at the launch's 168,
    Fig. 5's 256 accumulators spilled more unrolled than rolled, gemm_speed.md,
    cyperf2, so only split kernels get it). The loop's iterations run in the same
    order: the same program."""
    def visit(s: K.GStmt) -> tuple[K.GStmt, ...]:
        if isinstance(s, K.GFor) and s.lo.isdigit() and s.hi.isdigit() \
                and _indexes_registers(s):
            return (K.GPrim("\n".join(UNROLL), s.span), s)
        return (s,)
    return replace(k, body=K.map_body(k.body, visit))


def _indexes_registers(f: K.GFor) -> bool:
    var = re.compile(rf"\b{re.escape(f.var)}\b")
    return any(isinstance(a, K.Window) and a.space == "local" and var.search(a.base)
               for s in K.walk(f.body) if isinstance(s, K.GInstr) for a in s.args)
