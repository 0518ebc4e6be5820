"""Equivalence modulo inputs for CKernel (Le, Afshari, Su, PLDI 2014), on GPU kernels.

The reference run records which blocks some thread entered (interpreter/ckernel:
`Run.reached`). A block no thread entered on these inputs may be rewritten at will:
every variant must end in the same memory as the original. A compiler that treats two
variants differently (one right, one wrong) has an optimisation that depends on code
which never runs: exactly what Orion found in GCC and LLVM.

Mutations (each applied to every dead block at once, one variant each):
  prune      the dead block emptied
  keep-lets  only the dead block's declarations kept (its effects dropped)
  poison     a store of a constant into an own cell appended to the dead block
A variant is kept only when it is still well-formed (typing_rules/ckernel): the
rewrites cannot make an access out of bounds or racy, but the check decides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gpusem.calculus.ckernel import ast as A
from gpusem.calculus.errors import IllTyped
from gpusem.fuzz.ckernel.coverage import dead_blocks
from gpusem.typing_rules.ckernel.wellformed import check_kernel

Path = tuple[int, ...]
MUTATIONS = ("prune", "keep-lets", "poison")


def _rewrite(block: A.Block, dead: set[Path], fn: Callable[[A.Block], A.Block],
             path: Path = ()) -> A.Block:
    if path in dead:
        return fn(block)
    out: list[A.Stmt] = []
    for i, s in enumerate(block.stmts):
        match s:
            case A.If(then=then, orelse=orelse):
                s = replace(s, then=_rewrite(then, dead, fn, (*path, i, 0)),
                            orelse=_rewrite(orelse, dead, fn, (*path, i, 1)))
            case A.For(body=body):
                s = replace(s, body=_rewrite(body, dead, fn, (*path, i, 0)))
        out.append(s)
    return replace(block, stmts=tuple(out))


def _mutation(k: A.Kernel, name: str) -> Callable[[A.Block], A.Block]:
    match name:
        case "prune":
            return lambda b: replace(b, stmts=())
        case "keep-lets":
            return lambda b: replace(b, stmts=tuple(
                s for s in b.stmts if isinstance(s, A.Let | A.VecLoad)))
    written = [p for p in k.params if p.mode in ("rw", "rwr") and p.ty == "i32"]
    if not written:
        return lambda b: b
    poison = A.Store(written[0].name, A.Own(0), A.Lit("i32", -559038737))
    return lambda b: replace(b, stmts=(*b.stmts, poison))


def variants(k: A.Kernel, reached: set[Path]) -> list[tuple[str, A.Kernel]]:
    """(mutation, variant) for each mutation that changes `k` and stays well-formed;
    [] when every block was reached (nothing to rewrite)."""
    dead = set(dead_blocks(k.body, reached))
    if not dead:
        return []
    out: list[tuple[str, A.Kernel]] = []
    for name in MUTATIONS:
        v = replace(k, body=_rewrite(k.body, dead, _mutation(k, name)))
        if v == k:
            continue
        try:
            check_kernel(v)
        except IllTyped:
            continue
        out.append((name, v))
    return out
