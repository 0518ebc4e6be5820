"""The ops of an event-IR block as one list, the vectorised loops (Fig. 9) opened,
for the passes after vectorisation that reason about program order and about which
processor indices two ops share (copy elimination, allocation)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from gpusem.calculus.cypress import events as E

Vars = tuple[tuple[int, str], ...]  # the vectorised loops around an op: (id, var)


@dataclass(frozen=True)
class Item:
    """An op of a block, vectorised loops opened (nested loops' blocks are not)."""

    op: E.Op
    pos: int
    vars: Vars
    container: int


def items_of(ops: tuple[E.Op, ...]) -> list[Item]:
    """A block's ops in program order, those of its vectorised loops included (each
    with the loops around it), nested loops' blocks not (a loop is one item)."""
    out: list[Item] = []
    _walk(ops, (), out, itertools.count(1), 0)
    return out


def _walk(ops: tuple[E.Op, ...], vars: Vars, out: list[Item],
          counter: itertools.count[int], container: int) -> None:
    for op in ops:
        out.append(Item(op, len(out), vars, container))
        if isinstance(op, E.Vec):
            region = next(counter)
            _walk(op.ops, (*vars, (region, op.var)), out, counter, region)


def event_ref(it: Item, at: Vars) -> E.EvRef:
    """The event of an item as an op at `at` refers to it: the vectorised loops both
    are in by their variable, the others and a pfor's own dimension broadcast."""
    assert isinstance(it.op, E.Copy | E.Call | E.Loop)
    shared = 0
    for (k, _), (k2, _) in zip(it.vars, at):
        if k != k2:
            break
        shared += 1
    index: list[E.IExpr | None] = [E.IVar(v) for _, v in it.vars[:shared]]
    index += [None] * (len(it.op.type) - shared)
    return E.EvRef(it.op.event, tuple(index))
