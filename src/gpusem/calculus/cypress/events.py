"""The event IR of seed 001, Fig. 7 (l.420-453), as our dependence analysis emits it
and our event machine runs it: frozen, slotted dataclasses, one per production.

  et ::= () | [(N, p), ..]          ev ::= x | ev[ei, ..]     ei ::= e | :
  pr ::= {ev, ..}
  o  ::= x = tensor([N, ..], m)                         (Fig. 8b l.2)
      |  x = partition_by_blocks(x, (N|None, ..))       (Fig. 8b l.1, `partition(..)`)
      |  x = partition_by_mma(x, WGMMA_MxNxK(), p, "A"|"B"|"C")
      |  x: et = copy(r, r), pr
      |  x: et = call(f, r, ..), pr
      |  x: et = for x in [e, e), pr do b  |  x: et = pfor x in [e, e), pr do b
      |  x: et = for x in [e, e) pipeline N, pr do b      (Sec. 4.2.5, pipelined)
      |  x: et = copy(..), pr on dma|compute              (after warp specialisation)
      |  x = warp_id() o ..                               (Fig. 9, after vectorisation)
      |  x = r                                            (after copy elimination)
  b  ::= o ..; yield pr
  r  ::= x | x[e, ..]                e ::= N | x | e (+|-|*|//|%) e
  pr ::= {ev, ..}, where in a pipelined body ev may be ev@-N (N iterations back)

Notes (errata "Cypress event IR"): Fig. 7's `partition(e..)` names no operator; we
print the source's. A block yields an event set (Fig. 7: one event), since a loop body
may end in independent operations. Sizes are concrete: the IR is the mapping's
instantiation for one input shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpusem.calculus.cypress.machine import Memory, Processor


@dataclass(frozen=True, slots=True)
class INum:
    value: int


@dataclass(frozen=True, slots=True)
class IVar:
    name: str


@dataclass(frozen=True, slots=True)
class IBin:
    op: Literal["+", "-", "*", "//", "%"]
    left: IExpr
    right: IExpr


IExpr = INum | IVar | IBin


@dataclass(frozen=True, slots=True)
class EvRef:
    """`e1`, `e1[:]`, `e4[i, :]` (None is the broadcast `:`, l.437). In the body of
    a pipelined loop (Sec. 4.2.5), `e19[:, :]@-3` is the instance of e19 of the
    iteration 3 before this one (`back`), none before the loop's first iteration."""

    name: str
    index: tuple[IExpr | None, ...] = ()
    back: int = 0


@dataclass(frozen=True, slots=True)
class Ref:
    """A tensor `C1` or a piece `C1p[i, 0]` of a partition."""

    name: str
    index: tuple[IExpr, ...] | None = None


EventType = tuple[tuple[int, Processor], ...]
# the warps an op runs on after warp specialisation (Sec. 4.2.5): "" before it
Role = Literal["", "dma", "compute"]


@dataclass(frozen=True, slots=True)
class Alloc:
    """`x = tensor([N, ..], m)`; after allocation (Sec. 4.2.4) a shared tensor has
    its place in the block's shared memory, `@ smem[at]` (an element offset): one
    static buffer however often the allocation runs, shared with the tensors it is
    aliased to."""

    name: str
    shape: tuple[int, ...]
    mem: Memory
    at: int | None = None


@dataclass(frozen=True, slots=True)
class PartBlocks:
    name: str
    source: str
    blocks: tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class PartMma:
    name: str
    source: str
    instr: str
    m: int
    proc: Processor
    operand: Literal["A", "B", "C"]


@dataclass(frozen=True, slots=True)
class Alias:
    """`t = P[i]`: a tensor that copy elimination (Sec. 4.2.3) bound to the piece it
    used to be copied from or to, instead of an allocation of its own."""

    name: str
    ref: Ref


@dataclass(frozen=True, slots=True)
class Copy:
    event: str
    type: EventType
    src: Ref
    dst: Ref
    pre: tuple[EvRef, ...]
    role: Role = ""


@dataclass(frozen=True, slots=True)
class Call:
    event: str
    type: EventType
    function: str
    args: tuple[Ref, ...]
    pre: tuple[EvRef, ...]
    role: Role = ""


@dataclass(frozen=True, slots=True)
class Loop:
    """`for` / `pfor`. A `for` with `pipeline` P >= 1 is a pipelined loop (Sec.
    4.2.5, l.695): its iterations are not ordered by the body's yield; every
    dependence between iterations is a carried precondition `ev@-d`, and the loop
    completes when every iteration has."""

    event: str
    type: EventType
    parallel: bool
    var: str
    lo: IExpr
    hi: IExpr
    pre: tuple[EvRef, ...]
    body: Block
    pipeline: int = 0


@dataclass(frozen=True, slots=True)
class Vec:
    """A flattened implicit loop of Fig. 9 (l.563-625): `i = warp_id()` and the ops
    that run on every one of `extent` processors of kind `proc`, with `i` their index.
    It is not a block: the events its ops define are visible after it, each promoted
    by one dimension `(extent, proc)` in front (l.625), and indexed there by `i` or
    `:`. Fig. 9 prints the ops flat after the binding; we keep them grouped (the
    printer indents them under the binding) so that which allocations are private to
    a processor stays written down (errata "Cypress vectorisation")."""

    var: str
    proc: Processor
    extent: int
    ops: tuple[Op, ...]


Op = Alloc | Alias | PartBlocks | PartMma | Copy | Call | Loop | Vec


@dataclass(frozen=True, slots=True)
class Block:
    ops: tuple[Op, ...]
    yields: tuple[EvRef, ...]


@dataclass(frozen=True, slots=True)
class EventProgram:
    """A lowered entrypoint: its tensor parameters (the kernel's arguments) and body."""

    params: tuple[str, ...]
    body: Block


def all_ops(ops: tuple[Op, ...]) -> list[Op]:
    """Every operation of `ops`, loop and vectorised bodies included, in program order
    (each container before what it holds)."""
    out: list[Op] = []
    for op in ops:
        out.append(op)
        if isinstance(op, Loop):
            out += all_ops(op.body.ops)
        elif isinstance(op, Vec):
            out += all_ops(op.ops)
    return out
