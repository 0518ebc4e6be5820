"""Vectorisation (seed 001, Sec. 4.2.2, l.563-625, Fig. 9): the `pfor` loops that are
implicit in the GPU programming model (over warpgroups, warps and threads) are
flattened, deepest first, into the block around them.

A flattened loop `ev: [(n, P)] = pfor i in [0, n), pr do b; yield y` becomes
`i = P_id()` and b's operations (a `Vec`), where
- every event defined in b (in vectorised loops inside b too) is *promoted*: its type
  gains the dimension (n, P) in front, and every use of it in b is indexed by `i`
  first (Fig. 9c l.12: `{e3[i, j]}`);
- a use of the loop's event array outside, `ev[x]`, becomes `y[x]` for each event y
  the body yielded (Fig. 9b l.15: `{e2[:]}` -> `{e4[:]}`; Fig. 9c l.14-15);
- the loop's precondition `pr` moves to the operations of b that had none (the loop
  used to start them).

Note (errata "Cypress vectorisation"): a BLOCK-level `pfor` is the grid, not a loop of
the block's code, so it stays; the event machine (interpreter/cypress/events.py) runs
a `Vec` as a loop whose iterations' events it stores in one array, so that each pass's
output is checked against its input by running both (tests/cypress/test_passes.py).
"""

from __future__ import annotations

import dataclasses

from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.machine import Processor
from gpusem.compiler.cypress_cuda import faults

IMPLICIT = frozenset({Processor.WARPGROUP, Processor.WARP, Processor.THREAD})

# a flattened loop's event -> the events its body yielded, each with whether it was
# promoted (defined in the body) or is the loop's precondition (an empty body's yield)
Subst = dict[str, tuple[tuple[E.EvRef, bool], ...]]


def vectorize(program: E.EventProgram) -> E.EventProgram:
    return dataclasses.replace(program, body=_block(program.body))


def _block(b: E.Block) -> E.Block:
    subst: Subst = {}
    ops: list[E.Op] = []
    for op in b.ops:
        op = _rename(op, subst)
        if isinstance(op, E.Loop):
            op = dataclasses.replace(op, body=_block(op.body))  # deepest first
            if _implicit(op):
                vec, yields = _flatten(op)
                ops.append(vec)
                subst[op.event] = yields
                continue
        ops.append(op)
    return E.Block(tuple(ops), _refs(b.yields, subst))


def _implicit(op: E.Loop) -> bool:
    return (op.parallel and len(op.type) == 1 and op.type[0][1] in IMPLICIT
            and op.lo == E.INum(0) and op.hi == E.INum(op.type[0][0]))


def _flatten(loop: E.Loop) -> tuple[E.Vec, tuple[tuple[E.EvRef, bool], ...]]:
    (n, proc), = loop.type
    defined = _defined(loop.body.ops)
    ops = _promote(loop.body.ops, defined, loop.var, (n, proc), loop.pre)
    # a block that yields nothing completes when it starts (the machine's reading)
    yields = tuple((_index(r, defined, loop.var), r.name in defined)
                   for r in loop.body.yields) or tuple((r, False) for r in loop.pre)
    return E.Vec(loop.var, proc, n, ops), yields


def _defined(ops: tuple[E.Op, ...]) -> frozenset[str]:
    """The events the ops define, in vectorised loops among them too (not inside a
    nested loop's block: those are local to it)."""
    out: set[str] = set()
    for op in ops:
        if isinstance(op, E.Copy | E.Call | E.Loop):
            out.add(op.event)
        elif isinstance(op, E.Vec):
            out |= _defined(op.ops)
    return frozenset(out)


def _index(r: E.EvRef, defined: frozenset[str], var: str) -> E.EvRef:
    return E.EvRef(r.name, (E.IVar(var), *r.index)) if r.name in defined else r


def _promote(ops: tuple[E.Op, ...], defined: frozenset[str], var: str,
             dim: tuple[int, Processor], loop_pre: tuple[E.EvRef, ...]
             ) -> tuple[E.Op, ...]:
    out: list[E.Op] = []
    for op in ops:
        if isinstance(op, E.Copy | E.Call | E.Loop):
            pre = tuple(_index(r, defined, var) for r in op.pre) or loop_pre
            op = dataclasses.replace(op, type=(dim, *op.type), pre=pre)
        elif isinstance(op, E.Vec):
            op = dataclasses.replace(op, ops=_promote(op.ops, defined, var, dim,
                                                      loop_pre))
        out.append(op)
    return tuple(out)


def _refs(refs: tuple[E.EvRef, ...], subst: Subst) -> tuple[E.EvRef, ...]:
    out: list[E.EvRef] = []
    for r in refs:
        if r.name not in subst:
            out.append(r)
            continue
        # `ev[x, rest]` of a flattened loop: x replaces the loop index in front
        first = r.index[0] if r.index else None
        if first is None and faults.active("cypress-drop-broadcast"):
            first = E.INum(0)
        for y, promoted in subst[r.name]:
            out.append(E.EvRef(y.name, (first, *y.index[1:], *r.index[1:]))
                       if promoted and r.index else y)
    return tuple(dict.fromkeys(out))


def _rename(op: E.Op, subst: Subst) -> E.Op:
    if not subst:
        return op
    match op:
        case E.Copy() | E.Call() | E.Loop():
            return dataclasses.replace(op, pre=_refs(op.pre, subst))
        case E.Vec():
            return dataclasses.replace(op, ops=tuple(_rename(o, subst)
                                                     for o in op.ops))
        case _:
            return op
