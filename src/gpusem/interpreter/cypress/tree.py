"""The printer of the instantiated task tree (seed 001 l.393: "the mapping
specification statically instantiates a tree of tasks").

One line per launch site: the instance, its variant and processor, each argument as
shape@memory, and in brackets how many tasks the site launches at once (`x4`: the
points of the pranges around it), warp specialisation and the pipeline depth. The tree is the reading's, run with `tree_only` (only the first point
of each range, no leaf computing): a range's other points instantiate the same
instances, so the tree is static; their shapes may differ only at ragged edges."""

from __future__ import annotations

import numpy as np
from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress.machine import (
    CAPACITY,
    SHARED_BYTES_PER_BLOCK,
    Processor,
    below,
)
from gpusem.calculus.errors import IllTyped
from gpusem.interpreter.cypress.seq import TreeNode, seq


def task_tree(program: A.Program, arrays: dict[str, np.ndarray],
              scalars: dict[str, int]) -> TreeNode:
    _, reading = seq(program, arrays, scalars, tree_only=True)
    assert reading.root is not None
    return reading.root


def print_tree(node: TreeNode, depth: int = 0) -> list[str]:
    inst = node.instance
    extras = []
    if inst.warpspecialize:
        extras.append("warpspecialize")
    if inst.pipeline > 1:
        extras.append(f"pipeline={inst.pipeline}")
    args = ", ".join(f"{name}: {what}" for name, what in node.args)
    if node.units > 1:  # the prange points its launch site spans
        extras.insert(0, f"x{node.units}")
    more = f" [{', '.join(extras)}]" if extras else ""
    line = (f"{'  ' * depth}{inst.instance} = {node.variant.name}"
            f"<{node.variant.task}, {node.variant.kind}> @ {inst.proc.name}"
            f"({args}){more}")
    lines = [line]
    for child in node.children:
        lines.extend(print_tree(child, depth + 1))
    return lines


def check_tree(root: TreeNode) -> list[IllTyped]:
    """The rules that need the instantiated tree's shapes and counts:

    - Shared-Bound (l.172, the H100's 227 KiB of l.711): the peak of what one block
      holds in shared memory fits it. Each launch site where an argument is SHARED and
      the caller's tensor is not gets a fresh allocation (l.551, copy-in/copy-out),
      alive while its task runs, once per prange point; sites one after the other
      reuse the space (copy-out ends an allocation), except the sites in an srange
      the caller pipelines, which are alive together, `pipeline` times over (l.697:
      buffers get "an extra dimension with size equal to the pipeline depth").
      Note: errata "Cypress shared-memory bound".
    - Prange-Capacity (l.156, l.158): a prange that launches on the level just below
      its caller's spans at most the units that level has (4 warps per warpgroup, 32
      threads per warp, 8 warpgroups per block).
    """
    errors: list[IllTyped] = []

    def blocks(node: TreeNode) -> None:
        if node.instance.proc is Processor.BLOCK:
            used = _inside(node)
            if used > SHARED_BYTES_PER_BLOCK:
                errors.append(IllTyped(
                    f"shared memory: the block of instance {node.instance.instance} "
                    f"holds up to {used} bytes in shared memory, more than the "
                    f"{SHARED_BYTES_PER_BLOCK} a block has (l.172)",
                    rule="Shared-Bound", span=node.instance.span))
            return
        for child in node.children:
            blocks(child)

    def capacity(node: TreeNode) -> None:
        for child in node.children:
            cap = CAPACITY[node.instance.proc]
            if (below(node.instance.proc) is child.instance.proc and cap is not None
                    and child.units > cap):
                errors.append(IllTyped(
                    f"capacity: {node.instance.instance} ({node.instance.proc.name}) "
                    f"launches {child.units} {child.instance.proc.name} tasks at once, "
                    f"a {node.instance.proc.name} has {cap} (l.156, l.158)",
                    rule="Prange-Capacity", span=child.instance.span))
            capacity(child)

    blocks(root)
    capacity(root)
    return errors


def _peak(node: TreeNode) -> int:
    """Shared bytes alive at the peak of one launch site of `node`'s (all points)."""
    return node.units * (node.shared_bytes + _inside(node))


def _inside(node: TreeNode) -> int:
    piped = sum(_peak(c) for c in node.children if c.piped)
    one_by_one = max((_peak(c) for c in node.children if not c.piped), default=0)
    return max(node.instance.pipeline * piped, one_by_one)
