"""Copy elimination (seed 001, Sec. 4.2.3, l.627-673, Fig. 10): the copies the
copy-in/copy-out discipline of the dependence analysis introduced, removed by rewrite
patterns applied one at a time until none applies, the spill patterns (which remove
events) first (l.673).

- **Spill elimination** (Fig. 10a, l.627): a fresh tensor t that is copied out into a
  piece P[x] of its caller's tensor, perhaps after being copied in from that same
  piece, is bound to P[x] itself (`t = P[x]`) when nothing else touches P's tensor in
  between and nothing touches t after; both copies go.
- **Shared-piece forwarding** (l.671: "copies between the thread-local and warp-local
  partitions of the shared memory tensor are removed"): a fresh tensor t copied in
  from P[x] in the same memory and then only read is bound to P[x] when P's tensor
  lives in the same block and nothing writes it later.
- **Self copy elimination** (Fig. 10d): `copy(t, t)` goes.

A removed copy's event is replaced where it is used by the events it stood for
(Fig. 10d: `b2[e2 / e1]`): its preconditions, plus, for a copy-out, every operation
that touched t (they touch P[x] now) and, for a copy-in, every earlier operation of
the block that touched P's tensor (t's writers now write it). Indices follow the uses:
a removed `e[i, j]` used as `e[i, :]` stands for its preconditions with `j` broadcast.

Note (errata "Cypress copy elimination"): Fig. 10b (spill hoisting) and 10c (duplicate
elimination) are not applied: our dependence analysis allocates a loop body's tensors
in the body, so a hoisted spill is the spill elimination above applied to the loop's
own copy-in and copy-out; and it emits no duplicate copies. Every rewrite is checked
by running the IR before and after it on the event machine (tests/cypress).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.machine import Memory
from gpusem.compiler.cypress_cuda import faults
from gpusem.compiler.cypress_cuda.items import Item, Vars, event_ref, items_of



@dataclass(frozen=True)
class Rewrite:
    replace: dict[int, E.Op | None]           # id(op) -> its replacement, None: gone
    forward: dict[str, tuple[Vars, tuple[E.EvRef, ...]]]  # a removed event -> refs
    extra_pre: dict[int, tuple[E.EvRef, ...]]  # id(op) -> preconditions to add


def eliminate_copies(ir: E.EventProgram, program: A.Program,
                     limit: int = 10_000) -> E.EventProgram:
    for _ in range(limit):
        names = Names(ir, program)
        body = _step(ir.body, names)
        if body is None:
            return ir
        ir = dataclasses.replace(ir, body=body)
    return ir


class Names:
    """What every tensor and partition name of the program is (names are unique:
    the dependence analysis makes them so; a program where they are not is left as
    it is)."""

    def __init__(self, ir: E.EventProgram, program: A.Program) -> None:
        self.program = program
        self.defs: dict[str, E.Op | None] = {p: None for p in ir.params}
        self.unique = True
        self.collect(ir.body.ops)

    def collect(self, ops: tuple[E.Op, ...]) -> None:
        for op in ops:
            if isinstance(op, E.Alloc | E.Alias | E.PartBlocks | E.PartMma):
                self.unique &= op.name not in self.defs
                self.defs[op.name] = op
            elif isinstance(op, E.Loop):
                self.collect(op.body.ops)
            elif isinstance(op, E.Vec):
                self.collect(op.ops)

    def root(self, name: str) -> str:
        op = self.defs.get(name)
        match op:
            case E.Alias(_, ref):
                return self.root(ref.name)
            case E.PartBlocks(_, source, _) | E.PartMma(_, source, _, _, _, _):
                return self.root(source)
            case _:
                return name

    def memory(self, name: str) -> Memory:
        op = self.defs.get(self.root(name))
        return op.mem if isinstance(op, E.Alloc) else Memory.GLOBAL

    def resolve(self, ref: E.Ref) -> E.Ref:
        op = self.defs.get(ref.name)
        if ref.index is None and isinstance(op, E.Alias):
            return self.resolve(op.ref)
        return ref

    def accesses(self, op: E.Op) -> list[tuple[str, bool]]:
        """(name, writes) of every tensor an op touches, a loop's body included."""
        match op:
            case E.Copy(_, _, src, dst, _):
                return [(src.name, False), (dst.name, True)]
            case E.Call(_, _, fn, args, _):
                var = self.program.variant(fn)
                if var is None:
                    return [(a.name, True) for a in args]
                return [(a.name, p.name in var.writes)
                        for p, a in zip(var.tensor_params, args)]
            case E.Loop(_, _, _, _, _, _, _, body):
                return [x for o in body.ops for x in self.accesses(o)]
            case E.Vec(_, _, _, ops):
                return [x for o in ops for x in self.accesses(o)]
            case _:
                return []

    def touches(self, op: E.Op, root: str, writes_only: bool = False) -> bool:
        return any(self.root(n) == root and (w or not writes_only)
                   for n, w in self.accesses(op))


def _step(block: E.Block, names: Names) -> E.Block | None:
    """One rewrite somewhere in the block or a nested loop's block; None: none."""
    if not names.unique:
        return None
    items = items_of(block.ops)
    for find in (_spill, _shared_piece, _self_copy):
        for it in items:
            rw = find(it, items, names)
            if rw is not None:
                return _apply(block, rw)
    for it in items:
        if isinstance(it.op, E.Loop):
            body = _step(it.op.body, names)
            if body is not None:
                new = dataclasses.replace(it.op, body=body)
                return _apply(block, Rewrite({id(it.op): new}, {}, {}))
    return None


def _fresh(name: str, it: Item, items: list[Item]) -> Item | None:
    """The allocation of `name` if it is in the same op list as `it`, before it."""
    for a in items[:it.pos]:
        if isinstance(a.op, E.Alloc) and a.op.name == name:
            return a if a.container == it.container else None
    return None


def _defined_before(name: str, pos: int, items: list[Item], names: Names) -> bool:
    """A parameter, a name of an enclosing block, or one of this block before pos."""
    here = [a.pos for a in items if isinstance(a.op, E.Alloc | E.Alias | E.PartBlocks
                                               | E.PartMma) and a.op.name == name]
    return not here or here[0] < pos


def _spill(it: Item, items: list[Item], names: Names) -> Rewrite | None:
    """Fig. 10a: `t` fresh; [copy(P[x], t)]; ..; copy(t, P[x]); nothing else touches
    P's tensor in between, nothing touches t after."""
    out = it.op
    if not (isinstance(out, E.Copy) and out.src.index is None):
        return None
    t, piece = out.src.name, names.resolve(out.dst)
    alloc = _fresh(t, it, items)
    root = names.root(piece.name)
    if (alloc is None or root == names.root(t) or names.memory(t) != names.memory(root)
            or not _defined_before(piece.name, alloc.pos, items, names)):
        return None
    between = items[alloc.pos + 1:it.pos]
    users = [b for b in between if names.touches(b.op, t)]
    first = users[0] if users else None
    copy_in = (first if first is not None and first.container == it.container
               and isinstance(first.op, E.Copy) and first.op.dst == E.Ref(t)
               and names.resolve(first.op.src) == piece else None)
    if any(names.touches(b.op, root) for b in between if b is not copy_in
           and not isinstance(b.op, E.Vec)):
        return None
    if any(names.touches(b.op, t) for b in items[it.pos + 1:]
           if not isinstance(b.op, E.Vec)):
        return None
    assert isinstance(alloc.op, E.Alloc)
    replace: dict[int, E.Op | None] = {id(alloc.op): E.Alias(t, piece), id(out): None}
    forward = {out.event: (it.vars, out.pre + tuple(
        event_ref(b, it.vars) for b in users if b is not copy_in
        and not isinstance(b.op, E.Vec)))}
    if faults.active("cypress-eager-spill"):  # the synchronisation elided too
        forward = {out.event: (it.vars, ())}
    before = tuple(event_ref(b, alloc.vars) for b in items[:alloc.pos]
                   if not isinstance(b.op, E.Vec) and names.touches(b.op, root)
                   and isinstance(b.op, E.Copy | E.Call | E.Loop))
    extra: dict[int, tuple[E.EvRef, ...]] = {}
    if copy_in is not None:
        assert isinstance(copy_in.op, E.Copy)
        replace[id(copy_in.op)] = None
        forward[copy_in.op.event] = (copy_in.vars, copy_in.op.pre + before)
    elif before:
        for b in users:  # t's first users now write P[x]: after P's earlier users
            if isinstance(b.op, E.Copy | E.Call | E.Loop) and not any(
                    r.name in {u.op.event for u in users
                               if isinstance(u.op, E.Copy | E.Call | E.Loop)}
                    for r in b.op.pre):
                extra[id(b.op)] = tuple(event_ref(x, b.vars) for x in items[:alloc.pos]
                                        if not isinstance(x.op, E.Vec)
                                        and names.touches(x.op, root)
                                        and isinstance(x.op, E.Copy | E.Call | E.Loop))
    return Rewrite(replace, forward, extra)


def _shared_piece(it: Item, items: list[Item], names: Names) -> Rewrite | None:
    """l.671: `t` fresh; copy(P[x], t); t only read; P's tensor allocated in this
    block, in t's memory, and never written after the copy."""
    cin = it.op
    if not (isinstance(cin, E.Copy) and cin.dst.index is None):
        return None
    t, piece = cin.dst.name, names.resolve(cin.src)
    alloc = _fresh(t, it, items)
    root = names.root(piece.name)
    root_def = names.defs.get(root)
    if (alloc is None or root == names.root(t) or not isinstance(root_def, E.Alloc)
            or not any(b.op is root_def for b in items)
            or names.memory(t) != names.memory(root)
            or not _defined_before(piece.name, alloc.pos, items, names)):
        return None
    if any(names.touches(b.op, t) for b in items[alloc.pos + 1:it.pos]):
        return None
    later = [b for b in items[it.pos + 1:] if not isinstance(b.op, E.Vec)]
    if any(names.touches(b.op, t, True) or names.touches(b.op, root, True)
           for b in later):
        return None
    assert isinstance(alloc.op, E.Alloc)
    return Rewrite({id(alloc.op): E.Alias(t, piece), id(cin): None},
                   {cin.event: (it.vars, cin.pre)}, {})


def _self_copy(it: Item, items: list[Item], names: Names) -> Rewrite | None:
    op = it.op
    if isinstance(op, E.Copy) and names.resolve(op.src) == names.resolve(op.dst):
        return Rewrite({id(op): None}, {op.event: (it.vars, op.pre)}, {})
    return None


def _apply(block: E.Block, rw: Rewrite) -> E.Block:
    return E.Block(_ops(block.ops, rw, ()), _refs(block.yields, rw, ()))


def _ops(ops: tuple[E.Op, ...], rw: Rewrite, vars: tuple[str, ...]
         ) -> tuple[E.Op, ...]:
    out: list[E.Op] = []
    for op in ops:
        new = rw.replace.get(id(op), op)
        if new is None:
            continue
        if isinstance(new, E.Copy | E.Call | E.Loop):
            pre = _refs(new.pre + rw.extra_pre.get(id(op), ()), rw, vars)
            new = dataclasses.replace(new, pre=pre)
        elif isinstance(new, E.Vec):
            new = dataclasses.replace(new, ops=_ops(new.ops, rw, (*vars, new.var)))
        out.append(new)
    return tuple(out)


def _refs(refs: tuple[E.EvRef, ...], rw: Rewrite, vars: tuple[str, ...]
          ) -> tuple[E.EvRef, ...]:
    out: list[E.EvRef] = []
    for r in refs:
        if r.name not in rw.forward:
            out.append(r)
            continue
        at, targets = rw.forward[r.name]
        sigma = {v: r.index[k] if k < len(r.index) else None
                 for k, (_, v) in enumerate(at)}
        for t in _refs(targets, rw, vars):
            out.append(E.EvRef(t.name, tuple(_subst(i, sigma) for i in t.index)))
    return _minimal(out)


def _subst(e: E.IExpr | None, sigma: dict[str, E.IExpr | None]) -> E.IExpr | None:
    """A removed event's index variables replaced by its use's indices; one used
    broadcast (`:`) broadcasts the index it appears in."""
    match e:
        case None | E.INum():
            return e
        case E.IVar(name):
            return sigma.get(name, e) if name in sigma else e
        case E.IBin(op, left, right):
            a, b = _subst(left, sigma), _subst(right, sigma)
            return None if a is None or b is None else E.IBin(op, a, b)


def _minimal(refs: list[E.EvRef]) -> tuple[E.EvRef, ...]:
    """Duplicates dropped, and `e[i]` where `e[:]` is there too."""
    out = list(dict.fromkeys(refs))
    return tuple(r for r in out if not any(
        o is not r and o.name == r.name and len(o.index) == len(r.index)
        and all(a is None or a == b for a, b in zip(o.index, r.index)) for o in out))
