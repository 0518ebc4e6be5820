"""The event machine: what an event-IR program of seed 001 Fig. 7 means (l.420-453).

"Any potentially asynchronous operation ... produces an event ... Each asynchronous
operation accepts a set of precondition events that must complete before it can
start" (l.424), and the IR is in SSA form "to ensure that any valid ordering of
operations forms an ordering that satisfies all event dependencies" (l.430). So the
machine instantiates every copy and call of the program (loops unrolled, a fresh
tensor per allocation per iteration), links each to the operations its preconditions
name, and runs them in any order in which an operation fires after its preconditions
have: program order, random orders, the latest-ready-first order, or every order of a
small program. Two operations that touch one element, one of them writing, and that
no chain of events orders, are a **race**: a schedule exists in which they run the
other way round.

A pipelined `for` (Sec. 4.2.5) starts every iteration after the loop's
preconditions only; `ev@-d` in its body names the instance of `ev` of the iteration d
before (nothing in the first d iterations), and the loop's event is every
iteration's yield.

Conventions: a *node* is one instance of a copy or a call; an event instance
completes when a set of nodes has run; a block instance starts after the nodes in
`start` (its loop's preconditions; for an iteration of a `for`, the previous
iteration's yield too: a `for` runs its iterations in order).

Note: the calls run the leaf variants of the Cypress program with the leaf library
(interpreter/cypress/leaf.py); their footprints are their privileges (errata "Cypress
event IR").
"""

from __future__ import annotations

import functools
import itertools
import operator
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.machine import Processor
from gpusem.calculus.errors import BudgetExhausted, Stuck, Trap
from gpusem.calculus.span import NO_SPAN
from gpusem.interpreter.cypress.seq import call_leaf
from gpusem.interpreter.cypress.views import (
    Partition,
    View,
    partition_by_blocks,
    partition_by_mma,
    root_view,
)

Nodes = frozenset[int]


@dataclass
class Node:
    id: int
    label: str
    deps: Nodes
    reads: list[View] = field(default_factory=list)
    writes: list[View] = field(default_factory=list)
    copy: tuple[View, View] | None = None
    call: tuple[A.Variant, tuple[View, ...]] | None = None


@dataclass
class Race:
    first: str
    second: str
    tensor: str
    cell: int

    def __str__(self) -> str:
        return (f"race: {self.first} and {self.second} both touch element {self.cell} "
                f"of {self.tensor}, one writing, and no event orders them")


@dataclass
class Instance:
    """A program instantiated on its inputs: the nodes, the entry tensors, and every
    storage array the nodes' views index with its contents before any node fired
    (`run_order` restores them first, so one instance runs many orders: building it
    is most of a run's cost, 109 of 194 profiled seconds of the dual GEMM's copy
    elimination test, which built one per schedule)."""

    nodes: list[Node]
    outputs: dict[str, View]
    completion: Nodes
    program: A.Program
    initial: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)


class _Builder:
    def __init__(self, program: A.Program, max_nodes: int) -> None:
        self.program = program
        self.nodes: list[Node] = []
        self.max_nodes = max_nodes
        self.dtype: np.dtype = np.dtype(np.float32)
        self.smem = 0
        self.storage: list[np.ndarray] = []   # every array a view may index

    def node(self, label: str, deps: Nodes) -> Node:
        if len(self.nodes) >= self.max_nodes:
            raise BudgetExhausted(f"step budget: more than {self.max_nodes} operations")
        n = Node(len(self.nodes), label, deps)
        self.nodes.append(n)
        return n

    def block(self, b: E.Block, env: dict[str, object], start: Nodes,
              suffix: str, events: dict[str, object] | None = None) -> Nodes:
        events = {} if events is None else events
        self.ops(b.ops, env, start, suffix, events, ())
        return self.pre(b.yields, events, env) or start

    def ops(self, ops: tuple[E.Op, ...], env: dict[str, object], start: Nodes,
            suffix: str, events: dict[str, object], path: tuple[int, ...]) -> None:
        """`path`: the processor indices of the vectorised loops (Fig. 9) around
        these ops in their block; an event defined here is stored at that path of its
        event array, so that `e[i, j]` and `e[i, :]` find it."""
        for op in ops:
            match op:
                case E.Alloc(name, shape, _, at) if at is not None:
                    # a placed shared tensor: the block's one static buffer
                    smem = env["@smem"]
                    assert isinstance(smem, np.ndarray)
                    cells = np.arange(at, at + int(np.prod(shape)), dtype=np.int64)
                    env[name] = View(smem, cells.reshape(shape), f"smem({name})")
                case E.Alloc(name, shape, _, _):
                    env[name] = self.root(name + suffix, self.blank(shape))
                case E.Alias(name, r):
                    env[name] = self.ref(env, r)
                case E.PartBlocks(name, source, blocks):
                    env[name] = partition_by_blocks(self.view(env, source), blocks,
                                                    NO_SPAN)
                case E.PartMma(name, source, _, m, proc, operand):
                    env[name] = partition_by_mma(self.view(env, source), m, proc,
                                                 operand, NO_SPAN)
                case E.Copy(event, _, src, dst, pre):
                    deps = start | self.pre(pre, events, env)
                    n = self.node(f"{event}{suffix}", deps)
                    s, d = self.ref(env, src), self.ref(env, dst)
                    n.copy, n.reads, n.writes = (s, d), [s], [d]
                    _put(events, event, path, frozenset({n.id}))
                case E.Call(event, _, fn, args, pre):
                    deps = start | self.pre(pre, events, env)
                    n = self.node(f"{event}{suffix}", deps)
                    var = self.program.variant(fn)
                    if var is None:
                        raise Stuck(f"unknown function: {fn}", rule="Event-Call")
                    views = tuple(self.ref(env, a) for a in args)
                    n.call = (var, views)
                    for p, v in zip(var.tensor_params, views):
                        if p.name in var.reads:
                            n.reads.append(v)
                        if p.name in var.writes:
                            n.writes.append(v)
                    _put(events, event, path, frozenset({n.id}))
                case E.Loop(event, ety, parallel, var_name, lo, hi, pre, body, pipe):
                    first = start | self.pre(pre, events, env)
                    iters: list[Nodes] = []
                    prev = first
                    past: list[dict[str, object]] = []  # a pipelined loop's events
                    block_level = parallel and ety[-1:] != () \
                        and ety[-1][1] == Processor.BLOCK
                    for i in range(self.expr(lo, env), self.expr(hi, env)):
                        inner = dict(env)
                        inner[var_name] = i
                        if block_level:  # each block its own shared memory
                            inner["@smem"] = self.fill((self.smem,))
                        if pipe:
                            inner["@past"] = past
                        mine: dict[str, object] = {}
                        done = self.block(body, inner,
                                          first if parallel or pipe else prev,
                                          f"{suffix}[{var_name}={i}]", mine)
                        past.append(mine)
                        iters.append(done)
                        prev = first | done if not parallel else prev
                    last = iters[-1] if iters else first
                    if pipe:  # done when every iteration is
                        last = first.union(*iters)
                    _put(events, event, path, iters if parallel else last)
                case E.Vec(var_name, _, extent, inner_ops):
                    for i in range(extent):
                        inner = dict(env)
                        inner[var_name] = i
                        self.ops(inner_ops, inner, start, f"{suffix}[{var_name}={i}]",
                                 events, (*path, i))

    def blank(self, shape: tuple[int, ...]) -> np.ndarray:
        """NaN (or INT_MIN), so that reading it before a write shows."""
        return np.full(shape, np.nan if self.dtype.kind == "f" else -2**31, self.dtype)

    def fill(self, shape: tuple[int, ...]) -> np.ndarray:
        """Fresh storage, blank, kept for resets."""
        out = self.blank(shape)
        self.storage.append(out)
        return out

    def root(self, name: str, data: np.ndarray) -> View:
        """A root tensor (its own copy of `data`), its storage kept for resets."""
        v = root_view(name, data)
        self.storage.append(v.base)
        return v

    def pre(self, refs: tuple[E.EvRef, ...], events: dict[str, object],
            env: dict[str, object]) -> Nodes:
        out: set[int] = set()
        for r in refs:
            if r.back:  # a carried precondition: an earlier iteration's instance
                past = env.get("@past")
                if not isinstance(past, list):
                    raise Stuck(f"carried event {r.name}@-{r.back} outside a "
                                "pipelined loop", rule="Event-Pre")
                if len(past) >= r.back:
                    then = past[len(past) - r.back]
                    if r.name not in then:
                        raise Stuck(f"undefined event: {r.name} (a carried event "
                                    "is one of the loop's body)", rule="Event-Pre")
                    out |= self.select(r, then[r.name], r.index, env)
                continue
            if r.name not in events:
                raise Stuck(f"undefined event: {r.name} (SSA: an event is defined "
                            "before it is used, in its block)", rule="Event-Pre")
            out |= self.select(r, events[r.name], r.index, env)
        return frozenset(out)

    def select(self, r: E.EvRef, e: object, index: tuple[E.IExpr | None, ...],
               env: dict[str, object]) -> Nodes:
        """Index an event array dimension by dimension: a value picks one element,
        the broadcast `:` all of them (l.437)."""
        if not isinstance(e, list):
            assert isinstance(e, frozenset)
            if index:
                raise Stuck(f"event {r.name} indexed past its dimensions",
                            rule="Event-Pre")
            return e
        if not index:
            raise Stuck(f"event array {r.name} used without an index",
                        rule="Event-Pre")
        if index[0] is None:
            if len(index) == 1 and all(isinstance(x, frozenset) for x in e):
                # the common last `:` over instances: one union, not a call each
                return frozenset().union(*e)
            return frozenset().union(*(self.select(r, x, index[1:], env) for x in e))
        k = self.expr(index[0], env)
        if not 0 <= k < len(e):
            raise Stuck(f"event {r.name} indexed out of range: {k}", rule="Event-Pre")
        return self.select(r, e[k], index[1:], env)

    def expr(self, e: E.IExpr, env: dict[str, object]) -> int:
        match e:
            case E.INum(value):
                return value
            case E.IVar(name):
                v = env[name]
                assert isinstance(v, int)
                return v
            case E.IBin(op, left, right):
                a, b = self.expr(left, env), self.expr(right, env)
                return {"+": a + b, "-": a - b, "*": a * b, "//": a // b,
                        "%": a % b}[op]

    def view(self, env: dict[str, object], name: str) -> View:
        v = env.get(name)
        if not isinstance(v, View):
            raise Stuck(f"not a tensor: {name}", rule="Event-Ref")
        return v

    def ref(self, env: dict[str, object], r: E.Ref) -> View:
        if r.index is None:
            return self.view(env, r.name)
        p = env.get(r.name)
        if not isinstance(p, Partition):
            raise Stuck(f"not a partition: {r.name}", rule="Event-Ref")
        return p.piece(tuple(self.expr(i, env) for i in r.index), NO_SPAN)


def _smem_size(ops: tuple[E.Op, ...]) -> int:
    """The elements of shared memory the placed tensors need (allocation)."""
    size = 0
    for op in ops:
        match op:
            case E.Alloc(_, shape, _, at) if at is not None:
                size = max(size, at + int(np.prod(shape)))
            case E.Loop(body=body):
                size = max(size, _smem_size(body.ops))
            case E.Vec(ops=inner):
                size = max(size, _smem_size(inner))
    return size


def _put(events: dict[str, object], name: str, path: tuple[int, ...],
         value: object) -> None:
    """Store an event instance at `path` of its array (promoted dimensions first)."""
    if not path:
        events[name] = value
        return
    at = events.setdefault(name, [])
    assert isinstance(at, list)
    for k in path[:-1]:
        while len(at) <= k:
            at.append([])
        at = at[k]
        assert isinstance(at, list)
    while len(at) <= path[-1]:
        at.append(frozenset())
    at[path[-1]] = value


def instantiate(ir: E.EventProgram, program: A.Program, arrays: dict[str, np.ndarray],
                max_nodes: int = 200_000) -> Instance:
    b = _Builder(program, max_nodes)
    env: dict[str, object] = {}
    outputs = {}
    for name in ir.params:
        env[name] = outputs[name] = b.root(name, arrays[name])
        b.dtype = arrays[name].dtype
    b.smem = _smem_size(ir.body.ops)
    env["@smem"] = b.fill((b.smem,))
    done = b.block(ir.body, env, frozenset(), "")
    initial = [(a, a.copy()) for a in b.storage]
    return Instance(b.nodes, outputs, done, program, initial)


def _fire(program: A.Program, n: Node) -> None:
    if n.copy is not None:
        src, dst = n.copy
        if src.shape != dst.shape:
            raise Trap(f"copy shapes: {src.shape} to {dst.shape} ({n.label})",
                       rule="Event-Copy")
        dst.write(src.read())
    elif n.call is not None:
        var, views = n.call
        call_leaf(program, var, {p.name: v for p, v in zip(var.tensor_params, views)})


def orders(inst: Instance, schedule: str) -> list[int]:
    """One order of the nodes in which each fires after its preconditions:
    `program` (the order they were issued), `latest` (the most recently enabled node
    first), `random:SEED`."""
    if schedule == "program":
        return [n.id for n in inst.nodes]
    rng = random.Random(int(schedule.split(":", 1)[1])) if schedule.startswith(
        "random:") else None
    if rng is None and schedule != "latest":
        raise ValueError(f"unknown schedule: {schedule}")
    # the users of each node as one sorted array (CSR), and each pop's decrements
    # as one NumPy step: the edges number millions on a dual GEMM (every `e[:]`),
    # which a Python loop a edge took seconds to walk. Same order as a loop: each
    # node's users ascending (a stable sort of the edges, issued in node order), the
    # newly ready appended in that order; a node's deps are a set (no repeats).
    count = len(inst.nodes)
    lens = np.fromiter((len(n.deps) for n in inst.nodes), np.int64, count)
    src = np.fromiter(itertools.chain.from_iterable(n.deps for n in inst.nodes),
                      np.int64, int(lens.sum()))
    dst = np.repeat(np.arange(count, dtype=np.int64), lens)
    by_src = np.argsort(src, kind="stable")
    users = dst[by_src]
    starts = np.searchsorted(src[by_src], np.arange(count + 1))
    waiting = lens.copy()
    ready = [n.id for n in inst.nodes if not n.deps]
    out = []
    while ready:
        pick = rng.randrange(len(ready)) if rng else len(ready) - 1
        ready[pick], ready[-1] = ready[-1], ready[pick]
        nid = ready.pop()
        out.append(nid)
        lo, hi = starts[nid], starts[nid + 1]
        if lo == hi:
            continue
        mine = users[lo:hi]
        waiting[mine] -= 1
        ready.extend(mine[waiting[mine] == 0].tolist())
    return out


def run(ir: E.EventProgram, program: A.Program, arrays: dict[str, np.ndarray],
        schedule: str = "program") -> dict[str, np.ndarray]:
    """The entry tensors after every operation has fired in the given order."""
    inst = instantiate(ir, program, arrays)
    return run_order(inst, orders(inst, schedule))


def run_order(inst: Instance, order: list[int]) -> dict[str, np.ndarray]:
    """The entry tensors after the nodes fired in `order`, from the instance's
    initial storage (restored first: an instance runs any number of orders)."""
    for arr, first in inst.initial:
        arr[...] = first
    for nid in order:
        _fire(inst.program, inst.nodes[nid])
    return {k: v.base.reshape(v.shape).copy() for k, v in inst.outputs.items()}


def every_order(inst: Instance, limit: int) -> Iterator[list[int]]:
    """Every order of a small instance, up to `limit` of them (exhaustive)."""
    count = 0
    for perm in itertools.permutations(range(len(inst.nodes))):
        pos = {nid: i for i, nid in enumerate(perm)}
        if all(pos[d] < pos[n.id] for n in inst.nodes for d in n.deps):
            yield list(perm)
            count += 1
            if count >= limit:
                return


def races(inst: Instance, limit: int = 1) -> list[Race]:
    """Pairs of nodes that touch one element, one writing, with no chain of events
    between them (happens-before is the transitive closure of the preconditions)."""
    before: list[int] = []
    upto: list[int] = []  # before[d] with d's own bit: what a node after d inherits
    for n in inst.nodes:  # issued in a topological order
        bits = functools.reduce(operator.or_, map(upto.__getitem__, n.deps), 0)
        before.append(bits)
        upto.append(bits | (1 << n.id))
    by_base: dict[int, list[tuple[np.ndarray, int, bool]]] = {}
    names: dict[int, str] = {}
    for n in inst.nodes:
        for v, w in [(v, False) for v in n.reads] + [(v, True) for v in n.writes]:
            by_base.setdefault(id(v.base), []).append((v.idx.reshape(-1), n.id, w))
            names[id(v.base)] = v.root
    found: list[Race] = []
    weights = np.random.default_rng(0).integers(1, 2**62, size=2 * len(inst.nodes) + 2,
                                                dtype=np.int64)
    for key, accesses in by_base.items():
        cells = np.concatenate([a for a, _, _ in accesses])
        who = np.concatenate([np.full(a.size, n) for a, n, _ in accesses])
        wr = np.concatenate([np.full(a.size, w) for a, _, w in accesses])
        order = np.lexsort((who, cells))
        cells, who, wr = cells[order], who[order], wr[order]
        starts = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1]])
        # one check per distinct set of accesses (a hash of the set: cells that a view
        # covers share it), and only where something writes
        with np.errstate(over="ignore"):
            h = np.add.reduceat(weights[2 * who + wr], starts)
        written = np.maximum.reduceat(wr.astype(np.int8), starts) > 0
        ends = np.r_[starts[1:], cells.size]
        _, first = np.unique(np.where(written, h, 0), return_index=True)
        for i in first:
            if not written[i]:
                continue
            s, e = starts[i], ends[i]
            sig = sorted(set(zip(who[s:e].tolist(), wr[s:e].tolist())))
            for (a, wa), (b, wb) in itertools.combinations(sig, 2):
                if a != b and (wa or wb) and not (before[b] >> a) & 1 \
                        and not (before[a] >> b) & 1:
                    found.append(Race(inst.nodes[a].label, inst.nodes[b].label,
                                      names[key], int(cells[s])))
                    if len(found) >= limit:
                        return found
    return found
