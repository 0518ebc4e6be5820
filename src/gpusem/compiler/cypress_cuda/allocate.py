"""Allocation (seed 001, Sec. 4.2.4, l.675-689, Fig. 11): every shared-memory tensor
left after copy elimination gets its place in the block's shared memory, with as
little aliasing as the bound allows.

The interference graph starts complete (every tensor its own bytes: no aliasing);
while the placement does not fit the bound, one *auxiliary* edge is removed: a pair
t1, t2 of one block whose uses do not overlap in program order (every op touching t1
comes before t2's allocation, none touches both). When no auxiliary edge is left and
the placement still does not fit, allocation fails: out of memory (l.687). Two
tensors that end up overlapping get the write-after-read edges of l.689: t2's first
users wait on every op that touched t1.

A placement is `@ smem[offset]` on the allocation (`calculus/cypress/events.py`); the
event machine gives all placed tensors of a block one static buffer, so a missing
edge shows as a race, and so does a loop whose next iteration overwrites a buffer
the previous one still reads: for that, a sequential loop whose body touches a placed
tensor yields every op that touched one (the loop-carried write-after-read edge; the
pipelined version of it is Fig. 12's backward edge).

Note (errata "Cypress allocation"): placement is first fit in program order; a
shared tensor allocated inside a vectorised loop (one per processor) or a `pfor` is
left unplaced (its own storage), as are tensors in other memories.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.machine import SHARED_BYTES_PER_BLOCK, Memory, Processor
from gpusem.calculus.errors import IllTyped
from gpusem.compiler.cypress_cuda import faults
from gpusem.compiler.cypress_cuda.copyelim import Names
from gpusem.compiler.cypress_cuda.items import Item, event_ref, items_of


@dataclass
class Tensor:
    alloc: E.Alloc
    block: int          # the id of the block (op list) it is allocated in
    pos: int            # its allocation's place in that block's items
    size: int           # elements
    users: list[Item]   # the items of its block that touch it


def allocate(ir: E.EventProgram, program: A.Program, itemsize: int = 4,
             limit: int = SHARED_BYTES_PER_BLOCK) -> E.EventProgram:
    names = Names(ir, program)
    return dataclasses.replace(ir, body=_scope(ir.body, names, itemsize, limit))


def _scope(block: E.Block, names: Names, itemsize: int, limit: int) -> E.Block:
    """One block's shared memory: the ops outside any BLOCK-level pfor (each body of
    one is a scope of its own)."""
    tensors: list[Tensor] = []
    _collect(block, names, tensors)
    at, apart = _place(tensors, itemsize, limit)
    extra: dict[int, list[E.EvRef]] = {}
    for t1, t2 in apart:
        if _overlap(t1, t2, at) and not faults.active("cypress-alias-no-war"):
            for u in _first_users(t2):
                extra.setdefault(id(u.op), []).extend(
                    event_ref(x, u.vars) for x in t1.users
                    if isinstance(x.op, E.Copy | E.Call | E.Loop))
    placed = {id(t.alloc): at[id(t.alloc)] for t in tensors}
    return _rebuild(block, placed, extra, {t.alloc.name for t in tensors}, names,
                    itemsize, limit)


def _collect(block: E.Block, names: Names, out: list[Tensor]) -> None:
    items = items_of(block.ops)
    for it in items:
        op = it.op
        if isinstance(op, E.Alloc) and op.mem is Memory.SHARED and not it.vars:
            users = [u for u in items if not isinstance(u.op, E.Vec)
                     and names.touches(u.op, op.name)]
            out.append(Tensor(op, id(block), it.pos, math.prod(op.shape), users))
        elif isinstance(op, E.Loop) and not _block_level(op) and not op.parallel:
            _collect(op.body, names, out)


def _block_level(op: E.Loop) -> bool:
    return op.parallel and op.type[-1:] != () and op.type[-1][1] is Processor.BLOCK


def _place(tensors: list[Tensor], itemsize: int, limit: int
           ) -> tuple[dict[int, int], list[tuple[Tensor, Tensor]]]:
    """First fit on the interference graph, auxiliary edges removed one at a time
    until the placement fits."""
    apart: list[tuple[Tensor, Tensor]] = []
    candidates = [(a, b) for i, a in enumerate(tensors) for b in tensors[i + 1:]
                  if _separable(a, b)]
    while True:
        at = _first_fit(tensors, apart)
        peak = max((at[id(t.alloc)] + t.size for t in tensors), default=0)
        if peak * itemsize <= limit:
            return at, apart
        if not candidates:
            raise IllTyped(f"out of memory: the shared tensors of a block need "
                           f"{peak * itemsize} bytes with as much aliasing as their "
                           f"uses allow, more than the {limit} the mapping allows "
                           "(l.687)", rule="Alloc-OutOfMemory")
        apart.append(candidates.pop(0))


def _separable(a: Tensor, b: Tensor) -> bool:
    """An auxiliary edge: a and b in one block, every use of a before b's
    allocation, so that b's users can wait for a's."""
    return a.block == b.block and a.pos < b.pos and all(u.pos < b.pos
                                                         for u in a.users)


def _first_fit(tensors: list[Tensor], apart: list[tuple[Tensor, Tensor]]
               ) -> dict[int, int]:
    free = {(id(a.alloc), id(b.alloc)) for a, b in apart}
    at: dict[int, int] = {}
    for t in tensors:
        busy = sorted((at[id(o.alloc)], at[id(o.alloc)] + o.size) for o in tensors
                      if id(o.alloc) in at and (id(o.alloc), id(t.alloc)) not in free)
        offset = 0
        for lo, hi in busy:
            if offset + t.size <= lo:
                break
            offset = max(offset, hi)
        at[id(t.alloc)] = offset
    return at


def _overlap(a: Tensor, b: Tensor, at: dict[int, int]) -> bool:
    x, y = at[id(a.alloc)], at[id(b.alloc)]
    return x < y + b.size and y < x + a.size


def _first_users(t: Tensor) -> list[Item]:
    events = {u.op.event for u in t.users if isinstance(u.op, E.Copy | E.Call | E.Loop)}
    return [u for u in t.users if isinstance(u.op, E.Copy | E.Call | E.Loop)
            and not any(r.name in events for r in u.op.pre)]


def _rebuild(block: E.Block, placed: dict[int, int], extra: dict[int, list[E.EvRef]],
             shared: set[str], names: Names, itemsize: int, limit: int) -> E.Block:
    ops = _ops(block.ops, placed, extra, shared, names, itemsize, limit)
    return E.Block(ops, block.yields)


def _ops(ops: tuple[E.Op, ...], placed: dict[int, int],
         extra: dict[int, list[E.EvRef]], shared: set[str], names: Names,
         itemsize: int, limit: int) -> tuple[E.Op, ...]:
    out: list[E.Op] = []
    for op in ops:
        new = op
        if isinstance(op, E.Alloc) and id(op) in placed:
            new = dataclasses.replace(op, at=placed[id(op)])
        elif isinstance(op, E.Copy | E.Call | E.Loop) and id(op) in extra:
            new = dataclasses.replace(op, pre=tuple(dict.fromkeys(
                op.pre + tuple(extra[id(op)]))))
        if isinstance(new, E.Loop):
            if _block_level(new):
                body = _scope(new.body, names, itemsize, limit)
            else:
                body = E.Block(_ops(new.body.ops, placed, extra, shared, names,
                                    itemsize, limit), new.body.yields)
                if not new.parallel and not faults.active("cypress-no-carried-war"):
                    body = _carried(body, shared, names)
            new = dataclasses.replace(new, body=body)
        elif isinstance(new, E.Vec):
            new = dataclasses.replace(new, ops=_ops(new.ops, placed, extra, shared,
                                                    names, itemsize, limit))
        out.append(new)
    return tuple(out)


def _carried(body: E.Block, shared: set[str], names: Names) -> E.Block:
    """A loop's next iteration reuses the buffers: its body yields every op that
    touched a placed tensor (the loop-carried write-after-read edge)."""
    users = [event_ref(u, ()) for u in items_of(body.ops)
             if isinstance(u.op, E.Copy | E.Call | E.Loop)
             and any(names.touches(u.op, t) for t in shared)]
    return E.Block(body.ops, tuple(dict.fromkeys(body.yields + tuple(users))))
