"""Warp specialisation and pipelining (seed 001, Sec. 4.2.5, l.691-697, Fig. 12):
the pass after allocation, for the BLOCK instance whose mapping asks for it
(`warpspecialize=True`, `pipeline=P`, Fig. 5b l.21-22).

- **WS-Partition** (l.691-693): the dependence graph of the block's body is cut in
  two: every copy from global into shared memory goes to the DMA warp (`on dma`),
  every other copy and call to the compute warps (`on compute`). An edge between
  the two parts is a barrier (`crossing`); the lowering (l.699) makes it an mbarrier.
- **Pipeline-Unroll** (l.695): each sequential loop at the top of the block's body
  becomes a pipelined loop (`for k in [..) pipeline P`): its iterations are no
  longer ordered by the body's yield, so the DMA warp runs up to P iterations ahead.
  Every dependence the yield carried becomes an explicit carried precondition
  `ev@-d`: for two operations u, v of the body (u = v included) that touch one
  tensor, one writing, v waits on u of the iteration before (d = 1), or, for a
  pipelined buffer, of the iteration P before (d = P). Chains of these cover every
  farther distance (u writes: u(k-2) -> u(k-1) -> v(k); else v(k-2) -> v(k-1)).
- **Pipeline-Buffers** (l.695, Fig. 1b l.3): a shared tensor the body allocates
  (placed by allocation) gets P buffers: one tensor `[P, ..]` before the loop, and in
  the body the piece `k % P` of it.
- **Pipeline-WAR** (l.697, the dashed edges of Fig. 12): the carried edges on a
  pipelined buffer are the backward write-after-read edges: the DMA copy into buffer
  `k % P` waits on the readers of that buffer from iteration k - P.

Carried preconditions implied by others are dropped (the one an ancestor in the
iteration already waits on, or one whose event a later carried event follows).
Notes (errata "Cypress warp specialisation"): Fig. 12 is an image we cannot read,
so the graph, the notation `ev@-d` and every choice below are ours: the pipelined
buffers are placed above the block's other shared tensors, where the buffers they
replace were if nothing else is above (a bound they exceed is
`Pipeline-OutOfMemory`); a carried edge into or out of a vectorised loop broadcasts
over its processors; depth 1 with warp specialisation still pipelines (one buffer,
the DMA warp one iteration ahead at most); pipelining without warp specialisation is
the same transformation without roles.
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
from gpusem.interpreter.cypress.seq import entrypoint


@dataclass(frozen=True)
class Schedule:
    """What the mapping asks of the block: warp specialisation, pipeline depth."""

    warpspecialize: bool
    depth: int


def schedule_of(program: A.Program) -> Schedule:
    """The BLOCK instance's request: the entrypoint if it runs on a BLOCK, else the
    first BLOCK instance its calls reach (Fig. 5b: gemm_block)."""
    inst = entrypoint(program)
    seen: set[str] = set()
    todo = [inst]
    while todo:
        m = todo.pop(0)
        if m.proc is Processor.BLOCK:
            return Schedule(m.warpspecialize, m.pipeline)
        seen.add(m.instance)
        todo += [c for n in m.calls if (c := program.instance(n)) is not None
                 and c.instance not in seen]
    return Schedule(False, 1)


def warp_specialise(ir: E.EventProgram, program: A.Program, itemsize: int = 4,
                    limit: int = SHARED_BYTES_PER_BLOCK,
                    schedule: Schedule | None = None) -> E.EventProgram:
    s = schedule or schedule_of(program)
    if not s.warpspecialize and s.depth <= 1:
        return ir
    names = Names(ir, program)
    at_block = entrypoint(program).proc is Processor.BLOCK
    pass_ = _Pass(names, s, itemsize, limit)
    return dataclasses.replace(ir, body=pass_.scopes(ir.body, at_block))


def _block_level(op: E.Op) -> bool:
    return isinstance(op, E.Loop) and op.parallel and op.type[-1:] != () \
        and op.type[-1][1] is Processor.BLOCK


class _Pass:
    def __init__(self, names: Names, s: Schedule, itemsize: int, limit: int) -> None:
        self.names = names
        self.s = s
        self.itemsize = itemsize
        self.limit = limit

    def scopes(self, block: E.Block, at_block: bool) -> E.Block:
        """The block's body: the program's body for a BLOCK entrypoint, else the
        body of each BLOCK-level pfor (the innermost of a nest)."""
        if at_block:
            return self.scope(block)
        ops: list[E.Op] = []
        for op in block.ops:
            if isinstance(op, E.Loop) and _block_level(op):
                inner = not any(_block_level(o) for o in op.body.ops)
                op = dataclasses.replace(op, body=self.scopes(op.body, inner))
            ops.append(op)
        return E.Block(tuple(ops), block.yields)

    def scope(self, block: E.Block) -> E.Block:
        moved = {id(op) for op in block.ops if isinstance(op, E.Loop)
                 and not op.parallel and self.s.depth > 1
                 for o in op.body.ops if isinstance(o, E.Alloc) and o.at is not None}
        peak = _peak(block.ops, self._rotated_ids(block.ops) if moved else set())
        out: list[E.Op] = []
        for op in block.ops:
            if isinstance(op, E.Loop) and not op.parallel:
                hoisted, op, peak = self.pipeline(op, peak)
                out += hoisted
            out.append(op)
        if peak * self.itemsize > self.limit:
            raise IllTyped(f"out of memory: {self.s.depth} pipelined buffers need "
                           f"{peak * self.itemsize} bytes of shared memory, more than "
                           f"the {self.limit} the mapping allows (l.695)",
                           rule="Pipeline-OutOfMemory")
        ops = tuple(out)
        if self.s.warpspecialize:
            ops = _roles(ops, self.names)
        return E.Block(ops, block.yields)

    def _rotated_ids(self, ops: tuple[E.Op, ...]) -> set[int]:
        return {id(o) for op in ops if isinstance(op, E.Loop) and not op.parallel
                for o in op.body.ops if isinstance(o, E.Alloc) and o.at is not None}

    # ---- pipelining ------------------------------------------------------------------

    def pipeline(self, loop: E.Loop, peak: int
                 ) -> tuple[list[E.Op], E.Loop, int]:
        depth = self.s.depth
        items = items_of(loop.body.ops)
        rotated = {it.op.name: it.op for it in items
                   if isinstance(it.op, E.Alloc) and it.op.at is not None
                   and not it.vars and depth > 1}
        hoisted: list[E.Op] = []
        swap: dict[int, E.Op] = {}
        for name, alloc in rotated.items():
            array, part = self._fresh(name + "s"), self._fresh(name + "sp")
            hoisted += [E.Alloc(array, (depth, *alloc.shape), Memory.SHARED, peak),
                        E.PartBlocks(part, array, (None, *alloc.shape))]
            peak += depth * math.prod(alloc.shape)
            slot = E.IBin("%", E.IVar(loop.var), E.INum(depth))
            swap[id(alloc)] = E.Alias(name, E.Ref(part, (slot,) + (E.INum(0),)
                                                  * len(alloc.shape)))
        extra = self.carried(items, set(rotated), _defined(loop.body.ops))
        body = E.Block(_rewrite(loop.body.ops, swap, extra), loop.body.yields)
        return hoisted, dataclasses.replace(loop, body=body, pipeline=depth), peak

    def _fresh(self, base: str) -> str:
        name, n = base, 1
        while name in self.names.defs:
            n += 1
            name = f"{base}{n}"
        self.names.defs[name] = None
        return name

    def carried(self, items: list[Item], rotated: set[str], inner: set[str]
                ) -> dict[int, list[E.EvRef]]:
        """id(op) -> the carried preconditions it gets (Pipeline-Unroll, -WAR)."""
        events = [it for it in items if isinstance(it.op, E.Copy | E.Call | E.Loop)]
        touch = {id(it.op): self._resources(it.op, rotated, inner) for it in events}
        by_event = {_op(it).event: it for it in events}
        cover = _cover(events, by_event)
        want: dict[int, list[tuple[Item, int]]] = {}
        for v in events:
            cands: dict[tuple[str, int], Item] = {}
            for u in events:
                d = _conflict(touch[id(u.op)], touch[id(v.op)], self.s.depth)
                for dist in d:  # dist > 1: a pipelined buffer's backward edge
                    if dist > 1 and faults.active("cypress-ws-no-backward-war"):
                        continue
                    cands[(_op(u).event, dist)] = u
            want[id(v.op)] = _prune(v, cands, cover, want, by_event)
        extra: dict[int, list[E.EvRef]] = {}
        for v in events:
            refs: list[E.EvRef] = []
            for u, dist in want[id(v.op)]:
                if dist > 1 and faults.active("cypress-ws-early-release"):
                    # the buffer released when its reader starts, not when it is done
                    refs += [dataclasses.replace(event_ref(by_event[r.name], ()),
                                                 back=dist)
                             for r in _op(u).pre if r.name in by_event and not r.back]
                    continue
                refs.append(dataclasses.replace(event_ref(u, ()), back=dist))
            if refs:
                extra[id(v.op)] = refs
        return extra

    def _resources(self, op: E.Op, rotated: set[str], inner: set[str]
                   ) -> list[tuple[object, bool, bool]]:
        """(key, writes, pipelined) per tensor access that persists across
        iterations: a shared tensor by its cells, others by their root name; a
        tensor the body allocates afresh (unplaced) does not persist."""
        out: list[tuple[object, bool, bool]] = []
        for name, writes in self.names.accesses(op):
            root = self.names.root(name)
            alloc = self.names.defs.get(root)
            placed = isinstance(alloc, E.Alloc) and alloc.at is not None
            if root in rotated:
                out.append((("buf", root), writes, True))
            elif placed:
                assert isinstance(alloc, E.Alloc) and alloc.at is not None
                out.append((("smem", alloc.at, alloc.at + math.prod(alloc.shape)),
                            writes, False))
            elif root not in inner:
                out.append((("name", root), writes, False))
        return out


def _op(it: Item) -> E.Copy | E.Call | E.Loop:
    assert isinstance(it.op, E.Copy | E.Call | E.Loop)
    return it.op


def _conflict(a: list[tuple[object, bool, bool]], b: list[tuple[object, bool, bool]],
              depth: int) -> set[int]:
    out: set[int] = set()
    for ka, wa, pa in a:
        for kb, wb, _ in b:
            if (wa or wb) and _same(ka, kb):
                out.add(depth if pa else 1)
    return out


def _same(a: object, b: object) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] == "smem":
        return bool(a[1] < b[2] and b[1] < a[2])
    return a == b


def _cover(events: list[Item], by_event: dict[str, Item]) -> dict[str, set[str]]:
    """event -> the events of the iteration all of whose instances come before all
    of its instances (preconditions indexed by processor variables or `:`)."""
    out: dict[str, set[str]] = {}
    for it in events:
        assert isinstance(it.op, E.Copy | E.Call | E.Loop)
        anc: set[str] = set()
        for r in it.op.pre:
            if r.back or r.name not in by_event:
                continue
            if all(i is None or isinstance(i, E.IVar) for i in r.index):
                anc |= {r.name} | out.get(r.name, set())
        out[it.op.event] = anc
    return out


def _ancestors(v: Item, by_event: dict[str, Item]) -> list[Item]:
    """Every event of the iteration v waits on, through any instance."""
    assert isinstance(v.op, E.Copy | E.Call | E.Loop)
    seen: dict[str, Item] = {}
    todo = [r.name for r in v.op.pre if not r.back and r.name in by_event]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen[n] = by_event[n]
        op = by_event[n].op
        assert isinstance(op, E.Copy | E.Call | E.Loop)
        todo += [r.name for r in op.pre if not r.back and r.name in by_event]
    return list(seen.values())


def _prune(v: Item, cands: dict[tuple[str, int], Item], cover: dict[str, set[str]],
           want: dict[int, list[tuple[Item, int]]], by_event: dict[str, Item]
           ) -> list[tuple[Item, int]]:
    """The carried preconditions of v that no other one implies."""
    implied: set[tuple[str, int]] = set()
    for w in _ancestors(v, by_event):
        for x, dist in want.get(id(w.op), []):
            assert isinstance(x.op, E.Copy | E.Call | E.Loop)
            implied |= {(x.op.event, dist)} | {(a, dist) for a in cover[x.op.event]}
    left = {k: u for k, u in cands.items() if k not in implied}
    for (name, dist) in list(left):
        for a in cover[name]:
            left.pop((a, dist), None)
    return [(u, dist) for (_, dist), u in left.items()]


def _defined(ops: tuple[E.Op, ...]) -> set[str]:
    out: set[str] = set()
    for op in ops:
        if isinstance(op, E.Alloc | E.Alias | E.PartBlocks | E.PartMma):
            out.add(op.name)
        elif isinstance(op, E.Loop):
            out |= _defined(op.body.ops)
        elif isinstance(op, E.Vec):
            out |= _defined(op.ops)
    return out


def _peak(ops: tuple[E.Op, ...], moved: set[int]) -> int:
    """The elements of shared memory the placed tensors of a scope use, those that
    pipelining moves (`moved`) left out: their buffers go above that."""
    peak = 0
    for op in ops:
        if isinstance(op, E.Alloc) and op.at is not None and id(op) not in moved:
            peak = max(peak, op.at + math.prod(op.shape))
        elif isinstance(op, E.Loop) and not _block_level(op):
            peak = max(peak, _peak(op.body.ops, moved))
        elif isinstance(op, E.Vec):
            peak = max(peak, _peak(op.ops, moved))
    return peak


def _rewrite(ops: tuple[E.Op, ...], swap: dict[int, E.Op],
             extra: dict[int, list[E.EvRef]]) -> tuple[E.Op, ...]:
    out: list[E.Op] = []
    for op in ops:
        new = swap.get(id(op), op)
        if isinstance(new, E.Copy | E.Call | E.Loop) and id(op) in extra:
            new = dataclasses.replace(new, pre=tuple(dict.fromkeys(
                new.pre + tuple(extra[id(op)]))))
        if isinstance(new, E.Vec):
            new = dataclasses.replace(new, ops=_rewrite(new.ops, swap, extra))
        out.append(new)
    return tuple(out)


# ---- warp specialisation ----------------------------------------------------------


def _roles(ops: tuple[E.Op, ...], names: Names, vec: bool = False
           ) -> tuple[E.Op, ...]:
    """WS-Partition: a global-to-shared copy outside the vectorised loops runs on the
    DMA warp, every other copy and call on the compute warps."""
    out: list[E.Op] = []
    for op in ops:
        match op:
            case E.Copy(_, _, src, dst, _, _):
                dma = not vec and names.memory(src.name) is Memory.GLOBAL \
                    and names.memory(dst.name) is Memory.SHARED
                op = dataclasses.replace(op, role="dma" if dma else "compute")
            case E.Call():
                op = dataclasses.replace(op, role="compute")
            case E.Loop(body=body):
                op = dataclasses.replace(op, body=E.Block(
                    _roles(body.ops, names, vec), body.yields))
            case E.Vec(ops=inner):
                op = dataclasses.replace(op, ops=_roles(inner, names, True))
        out.append(op)
    return tuple(out)


@dataclass(frozen=True)
class Crossing:
    """A dependence edge between the DMA and the compute warps: a barrier."""

    producer: str
    consumer: str
    back: int
    direction: str  # "dma->compute" | "compute->dma"


def crossing(ir: E.EventProgram) -> list[Crossing]:
    """The edges of a warp-specialised program that cross the partition."""
    out: list[Crossing] = []
    roles: dict[str, E.Role] = {}
    ops = [op for op in E.all_ops(ir.body.ops) if isinstance(op, E.Copy | E.Call)]
    for op in ops:
        roles[op.event] = op.role
    for op in ops:
        for r in op.pre:
            mine, theirs = op.role, roles.get(r.name, "")
            if mine and theirs and mine != theirs:
                out.append(Crossing(r.name, op.event, r.back, f"{theirs}->{mine}"))
    return out
