"""The printer of the instantiated task tree (seed 001 l.393: "the mapping
specification statically instantiates a tree of tasks").

One line per launch site: the instance, its variant and processor, and each argument
as shape@memory. The tree is the reading's, run with `tree_only` (only the first point
of each range, no leaf computing): a range's other points instantiate the same
instances, so the tree is static; their shapes may differ only at ragged edges."""

from __future__ import annotations

import numpy as np

from gpusem.calculus.cypress import ast as A
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
    more = f" [{', '.join(extras)}]" if extras else ""
    line = (f"{'  ' * depth}{inst.instance} = {node.variant.name}"
            f"<{node.variant.task}, {node.variant.kind}> @ {inst.proc.name}"
            f"({args}){more}")
    lines = [line]
    for child in node.children:
        lines.extend(print_tree(child, depth + 1))
    return lines
