"""seq(program, mapping): the sequential reading of a Cypress program (seed 001).

The semantics is one sentence of the paper: "all tasks appear to execute in sequential
program order" (l.163), and a mapping "can only affect performance, not correctness"
(l.163). So the reading walks the task tree the mapping instantiates (l.393): from the
entrypoint instance, each `launch` goes to the one instance among the caller's `calls`
whose variant implements the launched task; `prange` runs as `srange` (l.182: "the
effects of execution are the same as if srange was used"); views keep compacted
coordinates (l.194); leaves run the leaf library. Memories play no part: where a
tensor lives changes nothing a program computes.

Three dynamic rules watch the reading (static halves in typing_rules/cypress):
**None-Materialisation** (l.395; `_check_none` below), and
**Prange-NonInterference** (l.182, "tasks launched with prange must not perform
aliasing writes"): within one prange, no element one iteration's launches write is
written or read by another iteration's (Note: the paper names writes only; a read of
another iteration's write also makes prange differ from srange on the machine, so the
fixed rule forbids both; proofs_notes/errata.md). **Seq-CallExternal**: `call_external`
has no reference meaning (l.180: an arbitrary C++ function), so a reading that reaches
one stops with that named error instead of guessing.

Conventions: `frame.env` maps a variant's names to ints, processors, views,
partitions and instructions; `Reading` holds what one run shares (budget, counts, the
tree being recorded).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress.machine import DTYPE_BYTES, FLOAT_DTYPES, Memory, Processor
from gpusem.calculus.errors import BudgetExhausted, IllTyped, Trap
from gpusem.calculus.span import NO_SPAN, Span
from gpusem.interpreter.cypress import leaf
from gpusem.interpreter.cypress.views import (
    Partition,
    View,
    partition_by_blocks,
    partition_by_mma,
    points,
    root_view,
)

Value = int | Processor | View | Partition | A.Instr


class NoReferenceMeaning(Trap):
    """`call_external`: an external function has no meaning the reference can give."""


@dataclass
class TreeNode:
    """One node of the instantiated task tree: an instance at its launch site."""

    site: str
    instance: A.TaskMapping
    variant: A.Variant
    args: tuple[tuple[str, str], ...]
    children: list[TreeNode] = field(default_factory=list)
    # For the Shared-Bound rule: the bytes of the arguments this launch brings into
    # shared memory (SHARED here, not in the caller), the prange points its launch
    # site spans (`units`), and whether the site is in an srange its caller pipelines.
    shared_bytes: int = 0
    units: int = 1
    piped: bool = False


@dataclass
class Footprints:
    """What each iteration of one prange writes and reads, per root tensor."""

    span: Span
    point: int = 0
    writes: dict[int, list[tuple[np.ndarray, int]]] = field(default_factory=dict)
    reads: dict[int, list[tuple[np.ndarray, int]]] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    # The storages recorded, kept alive: a key is an id(), unique only while it lives
    # (a task's make_tensor per iteration is private to that iteration).
    bases: list[np.ndarray] = field(default_factory=list)


@dataclass
class Reading:
    program: A.Program
    max_launches: int
    tree_only: bool
    launches: int = 0
    leaf_ops: int = 0
    root: TreeNode | None = None
    open_pranges: list[Footprints] = field(default_factory=list)
    # The leaf accesses of tensors their caller maps to NONE: (view, owning unit).
    none_cells: dict[int, list[tuple[View, tuple[tuple[str, int], ...]]]] = field(
        default_factory=dict)


@dataclass
class Frame:
    instance: A.TaskMapping
    variant: A.Variant
    env: dict[str, Value]
    node: TreeNode
    loops: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    mems: dict[str, Memory | None] = field(default_factory=dict)
    # The units of the block this task runs on: (level, prange point) from the block
    # down (None-Materialisation), and the current point of each open prange.
    owner: tuple[tuple[str, int], ...] = ()
    at: list[int] = field(default_factory=list)


def entrypoint(program: A.Program) -> A.TaskMapping:
    found = [m for m in program.mappings if m.entrypoint]
    if len(found) != 1:
        raise IllTyped(f"entrypoint: the mapping has {len(found)} entrypoint "
                       "instances, needs exactly one", rule="Mapping-Entrypoint",
                       span=program.span)
    return found[0]


def resolve(program: A.Program, caller: A.TaskMapping, task: str,
            span: Span) -> A.TaskMapping:
    """The instance among the caller's `calls` whose variant implements `task`
    (l.393: "the task-mapping instance to dispatch each launched child task to")."""
    found = []
    for name in caller.calls:
        inst = program.instance(name)
        var = program.variant(inst.variant) if inst is not None else None
        if inst is not None and var is not None and var.task == task:
            found.append(inst)
    if len(found) != 1:
        raise IllTyped(f"launch: instance {caller.instance} calls {len(found)} "
                       f"instances of task {task!r} (needs exactly one)",
                       rule="Mapping-Calls", span=span)
    return found[0]


def seq(program: A.Program, arrays: dict[str, np.ndarray], scalars: dict[str, int],
        *, max_launches: int = 1_000_000,
        tree_only: bool = False) -> tuple[dict[str, np.ndarray], Reading]:
    """Run the entrypoint on the inputs; the final value of each tensor argument.
    With `tree_only`, only the first point of every range runs and no leaf computes:
    the instantiated task tree, recorded in `Reading.root`."""
    r = Reading(program, max_launches, tree_only)
    inst = entrypoint(program)
    var = program.variant(inst.variant)
    if var is None:
        raise IllTyped(f"unknown variant: {inst.variant}", rule="Mapping-Variant",
                       span=inst.span)
    env: dict[str, Value] = {}
    for p in var.params:
        if p.type is None:
            if p.name not in scalars:
                raise Trap(f"no input: {p.name} (int)", rule="Seq-Inputs", span=p.span)
            env[p.name] = scalars[p.name]
            continue
        if p.name not in arrays:
            raise Trap(f"no input: {p.name} (tensor)", rule="Seq-Inputs", span=p.span)
        data = arrays[p.name]
        want = "float32" if p.type.dtype in FLOAT_DTYPES else "int32"
        if data.ndim != p.type.rank or str(data.dtype) != want:
            raise Trap(f"bad input: {p.name} is {data.dtype}{list(data.shape)}, the "
                       f"entrypoint wants rank {p.type.rank} {want}", rule="Seq-Inputs",
                       span=p.span)
        env[p.name] = root_view(p.name, data)
    node = TreeNode("entrypoint", inst, var, _describe(var, inst, env))
    r.root = node
    _run_task(r, Frame(inst, var, env, node, mems=_mems(var, inst)))
    if not tree_only:
        _check_none(r)
    out = {}
    for p in var.tensor_params:
        v = env[p.name]
        assert isinstance(v, View)
        out[p.name] = v.base.reshape(v.shape).copy()
    return out, r


def _describe(var: A.Variant, inst: A.TaskMapping,
              env: dict[str, Value]) -> tuple[tuple[str, str], ...]:
    out = []
    mems = iter(inst.mems)
    for p in var.params:
        v = env.get(p.name)
        if isinstance(v, View):
            mem = next(mems, None)
            out.append((p.name, f"{list(v.shape)}@{mem.name if mem else '?'}"))
        else:
            out.append((p.name, str(v)))
    return tuple(out)


def _run_task(r: Reading, f: Frame) -> None:
    for stmt in f.variant.body:
        _stmt(r, f, stmt)


def _stmt(r: Reading, f: Frame, s: A.Stmt) -> None:
    match s:
        case A.Assign(targets, values, declared, _):
            for name, value in zip(targets, values):
                f.env[name] = _assigned(f, name, value, declared)
                if isinstance(value, A.PartitionBlocks | A.PartitionMma):
                    f.mems[name] = f.mems.get(value.tensor)
        case A.Range(kind, names, extents, body, span):
            grid = tuple(_int(f, e) for e in extents)
            if any(n < 0 for n in grid):
                raise Trap(f"bad range: negative extent {grid}", rule="Seq-Range",
                           span=span)
            todo = points(grid)[:1] if r.tree_only else points(grid)
            f.loops.append((kind, grid))
            f.at.append(0)
            with _watching(r, kind == "prange" and not r.tree_only, span) as fp:
                for i, point in enumerate(todo):
                    f.at[-1] = i
                    if fp is not None:
                        fp.point = i
                    f.env.update(zip(names, point))
                    for inner in body:
                        _stmt(r, f, inner)
            f.loops.pop()
            f.at.pop()
            if kind == "prange" and fp is not None:
                _check_disjoint(fp)
        case A.Launch(task, args, span):
            _launch(r, f, task, args, span, s)
        case A.LeafOp(op, args, span):
            views = tuple(_view(f, a) for a in args)
            r.leaf_ops += 1
            if not r.tree_only:
                leaf.apply(op, views, span)
        case A.CallExternal(function, _, span):
            if r.tree_only:
                return  # instantiating the tree computes nothing
            raise NoReferenceMeaning(
                f"no reference meaning: call_external({function!r}) runs an arbitrary "
                "C++ function (l.180); the sequential reading cannot give it a meaning",
                rule="Seq-CallExternal", span=span)


def _assigned(f: Frame, name: str, e: A.Expr,
              declared: A.TensorType | None) -> Value:
    if isinstance(e, A.Tunable):
        for key, value in f.instance.tunables:
            if key == name:
                if isinstance(value, Processor) != (e.kind == "processor"):
                    raise IllTyped(f"tunable kind: {name} is a tunable({e.kind}), "
                                   f"instance {f.instance.instance} gives {value}",
                                   rule="Mapping-Tunables", span=e.span)
                return value
        raise IllTyped(f"missing tunable: instance {f.instance.instance} gives no "
                       f"value for {name}", rule="Mapping-Tunables", span=e.span)
    if isinstance(e, A.MakeTensor):
        dims = tuple(_int(f, d) for d in e.dims)
        if any(d < 0 for d in dims) or int(np.prod(dims)) > 1 << 24:
            raise Trap(f"bad tensor: make_tensor{dims}", rule="Seq-MakeTensor",
                       span=e.span)
        floats = declared is None or declared.dtype in FLOAT_DTYPES
        # Undefined contents: NaN (int32: its minimum), so a missing clear shows.
        fill = np.full(dims, np.nan if floats else np.iinfo(np.int32).min,
                       np.float32 if floats else np.int32)
        return root_view(f"{f.variant.name}.{name}", fill)
    return _eval(f, e)


def _eval(f: Frame, e: A.Expr) -> Value:
    match e:
        case A.Num(value, _):
            return value
        case A.ProcLit(proc, _):
            return proc
        case A.Var(name, span):
            if name not in f.env:
                raise Trap(f"unbound name: {name}", rule="Seq-Var", span=span)
            return f.env[name]
        case A.BinOp(op, left, right, span):
            a, b = _int(f, left), _int(f, right)
            if op in ("/", "//", "%") and b == 0:
                raise Trap(f"division by zero: {a} {op} 0", rule="Seq-Arith", span=span)
            if op == "/" and a % b:
                raise Trap(f"inexact division: {a} / {b} (`/` divides exactly; use // "
                           "or cdiv)", rule="Seq-Arith", span=span)
            return {"+": a + b, "-": a - b, "*": a * b, "/": a // b, "//": a // b,
                    "%": a % b}[op]
        case A.Builtin(name, args, span):
            a, b = (_int(f, x) for x in args)
            if name == "cdiv":
                if b <= 0:
                    raise Trap(f"division by zero: cdiv({a}, {b})", rule="Seq-Arith",
                               span=span)
                return -(-a // b)
            return min(a, b) if name == "min" else max(a, b)
        case A.ShapeOf(tensor, dim, span):
            v = f.env.get(tensor)
            if not isinstance(v, View) or not 0 <= dim < len(v.shape):
                raise Trap(f"bad shape: {tensor}.shape[{dim}]", rule="Seq-Shape",
                           span=span)
            return v.shape[dim]
        case A.Instr():
            return e
        case A.PartitionBlocks(tensor, blocks, span):
            sizes = tuple(None if b is None else _int(f, b) for b in blocks)
            return partition_by_blocks(_named_view(f, tensor, span), sizes, span)
        case A.PartitionMma(tensor, instr, proc_e, operand, span):
            level = _eval(f, proc_e)
            if not isinstance(level, Processor):
                raise Trap("bad partition: the third argument is a processor",
                           rule="Seq-Mma", span=span)
            return partition_by_mma(_named_view(f, tensor, span), instr.m, level,
                                    operand, span)
        case A.Piece(name, index, span):
            p = f.env.get(name)
            if not isinstance(p, Partition):
                raise Trap(f"not a partition: {name}", rule="Seq-Piece", span=span)
            return p.piece(tuple(_int(f, i) for i in index), span)
        case A.Tunable(_, span) | A.MakeTensor(_, span):
            raise Trap("bad expression: tunable(..) and make_tensor(..) are assigned "
                       "to a name", rule="Seq-Assign", span=span)


def _int(f: Frame, e: A.Expr) -> int:
    v = _eval(f, e)
    if not isinstance(v, int):
        raise Trap("not an integer: expected a scalar expression", rule="Seq-Scalar",
                   span=e.span)
    return v


def _named_view(f: Frame, name: str, span: Span) -> View:
    v = f.env.get(name)
    if not isinstance(v, View):
        raise Trap(f"not a tensor: {name}", rule="Seq-Tensor", span=span)
    return v


def _view(f: Frame, e: A.Expr) -> View:
    v = _eval(f, e)
    if not isinstance(v, View):
        raise Trap("not a tensor: expected a tensor or a piece of a partition",
                   rule="Seq-Tensor", span=e.span)
    return v


def _launch(r: Reading, f: Frame, task: str, args: tuple[A.Expr, ...], span: Span,
            stmt: A.Launch) -> None:
    r.launches += 1
    if r.launches > r.max_launches:
        raise BudgetExhausted(f"step budget: more than {r.max_launches} task launches",
                              rule="Seq-Launch", span=span)
    inst = resolve(r.program, f.instance, task, span)
    var = r.program.variant(inst.variant)
    assert var is not None  # resolve found it
    if len(args) != len(var.params):
        raise IllTyped(f"launch signature: {var.name} takes {len(var.params)} "
                       f"arguments, launch gives {len(args)}", rule="Launch-Signature",
                       span=span)
    env: dict[str, Value] = {}
    for p, a in zip(var.params, args):
        value = _eval(f, a)
        if p.type is None:
            if not isinstance(value, int):
                raise Trap(f"launch signature: {p.name} is an int",
                           rule="Launch-Signature", span=a.span)
        else:
            want = "f" if p.type.dtype in FLOAT_DTYPES else "i"
            if (not isinstance(value, View) or len(value.shape) != p.type.rank
                    or value.base.dtype.kind != want):
                got = (f"rank {len(value.shape)} {value.base.dtype}"
                       if isinstance(value, View) else "a scalar")
                raise Trap(f"launch signature: {p.name} is tensor[{p.type.rank}, "
                           f"{p.type.dtype}], the launch passes {got}",
                           rule="Launch-Signature", span=a.span)
            if r.open_pranges:
                flat = value.idx.reshape(-1)   # once for every open prange
                writes, reads = p.name in var.writes, p.name in var.reads
                for fp in r.open_pranges:
                    _record(fp, value, flat, writes, reads)
        env[p.name] = value
    node = TreeNode(f"launch {task!r} (line {span.line})", inst, var,
                    _describe(var, inst, env))
    # math.prod, not np.prod: the same int (1 for none), without NumPy's per-call
    # overhead on a list of a few ints (a 256 GEMM's reading launches ~21,000 times)
    node.units = math.prod(n for k, g in f.loops if k == "prange" for n in g)
    node.piped = any(k == "srange" for k, _ in f.loops) and f.instance.pipeline > 1
    for p, a, mem in zip(var.tensor_params, (a for p, a in zip(var.params, args)
                                             if p.type is not None), inst.mems):
        held = f.mems.get(a.name if isinstance(a, A.Var) else
                          a.partition if isinstance(a, A.Piece) else "")
        value = env[p.name]
        if mem is Memory.SHARED and held is not Memory.SHARED and p.type is not None \
                and isinstance(value, View):
            node.shared_bytes += int(np.prod(value.shape)) * DTYPE_BYTES[p.type.dtype]
    f.node.children.append(node)
    points_here = tuple((inst.proc.name, at) for (kind, _), at in zip(f.loops, f.at)
                        if kind == "prange")
    owner = () if inst.proc.value <= Processor.BLOCK.value else f.owner + points_here
    if var.kind == "Leaf" and not r.tree_only:
        for p, a in zip(var.params, args):
            held = f.mems.get(a.name if isinstance(a, A.Var) else
                              a.partition if isinstance(a, A.Piece) else "")
            value = env[p.name]
            if held is Memory.NONE and isinstance(value, View):
                r.none_cells.setdefault(id(value.base), []).append((value, owner))
    _run_task(r, Frame(inst, var, env, node, mems=_mems(var, inst), owner=owner))


def _mems(var: A.Variant, inst: A.TaskMapping) -> dict[str, Memory | None]:
    return {p.name: m for p, m in zip(var.tensor_params, inst.mems)}


@contextmanager
def _watching(r: Reading, on: bool, span: Span) -> Iterator[Footprints | None]:
    if not on:
        yield None
        return
    fp = Footprints(span)
    r.open_pranges.append(fp)
    try:
        yield fp
    finally:
        r.open_pranges.remove(fp)


def _record(fp: Footprints, v: View, flat: np.ndarray, writes: bool,
            reads: bool) -> None:
    """`flat`: v's cells (v.idx flattened)."""
    key = id(v.base)
    if key not in fp.names:
        fp.bases.append(v.base)
    fp.names[key] = v.root
    if writes:
        fp.writes.setdefault(key, []).append((flat, fp.point))
    if reads:
        fp.reads.setdefault(key, []).append((flat, fp.point))


def _check_disjoint(fp: Footprints) -> None:
    """Prange-NonInterference (l.182), on the footprints of one prange.

    Note: each root's reads are tested in one NumPy pass (a 256 GEMM's reading
    records ~70,000 read footprints in ~1,000 pranges; a search per footprint was a
    quarter of the reading). The first clash of the concatenation is the first
    footprint's (in record order) first clashing element: the same report."""
    for key, written in fp.writes.items():
        idx = np.concatenate([w for w, _ in written])
        who = np.repeat(np.array([p for _, p in written]),
                        [w.size for w, _ in written])
        span_ = int(who.max()) + 1
        combined = np.unique(idx * span_ + who)  # one (cell, iteration) pair each
        pairs = np.stack([combined // span_, combined % span_])
        cells, counts = np.unique(pairs[0], return_counts=True)
        if (counts > 1).any():
            cell = int(cells[counts > 1][0])
            raise IllTyped(f"prange interference: two iterations write element {cell} "
                           f"of {fp.names[key]}", rule="Prange-NonInterference",
                           span=fp.span)
        cells_w, owners = pairs[0], pairs[1]  # sorted by cell
        read = fp.reads.get(key, [])
        if not read:
            continue
        r_idx = np.concatenate([r for r, _ in read])
        by = np.repeat(np.array([p for _, p in read]), [r.size for r, _ in read])
        at = np.clip(np.searchsorted(cells_w, r_idx), 0, cells_w.size - 1)
        clash = (cells_w[at] == r_idx) & (owners[at] != by)
        if clash.any():
            j = int(np.argmax(clash))
            cell, other, p = int(r_idx[j]), int(owners[at[j]]), int(by[j])
            raise IllTyped(f"prange interference: iteration {p} reads element "
                           f"{cell} of {fp.names[key]} that iteration {other} "
                           "writes", rule="Prange-NonInterference", span=fp.span)


def call_leaf(program: A.Program, variant: A.Variant, views: dict[str, View]) -> None:
    """Run one leaf variant on the given tensors (the event machine's `call`, Fig. 7):
    the reading of its body. Note: the event IR names a variant, not an instance, so
    a leaf's tunables have no value there; a leaf that reads one traps."""
    inst = A.TaskMapping(variant.name, variant.name, Processor.THREAD, (), (), False,
                         (), False, 1, variant.span)
    frame = Frame(inst, variant, dict(views), TreeNode("call", inst, variant, ()))
    _run_task(Reading(program, 1, False), frame)


def _check_none(r: Reading) -> None:
    """None-Materialisation (l.395): a tensor mapped to NONE is "never materialized"
    at that level but lives in the memories of the tasks below, so every element of it
    that leaves reach through a NONE mapping is held by one unit of the block (one
    thread, warp, warpgroup): two units touching it would need it materialised in a
    memory both see, which the compiler reports. Note: errata "Cypress NONE"."""
    for accesses in r.none_cells.values():
        owners: dict[tuple[tuple[str, int], ...], int] = {}
        cells = np.concatenate([v.idx.reshape(-1) for v, _ in accesses])
        who = np.concatenate([np.full(v.idx.size, owners.setdefault(o, len(owners)))
                              for v, o in accesses])
        pairs = np.unique(cells * max(len(owners), 1) + who)
        cell_of = pairs // max(len(owners), 1)
        twice = np.flatnonzero(cell_of[1:] == cell_of[:-1])
        if twice.size:
            cell = int(cell_of[twice[0]])
            names = {v: k for k, v in owners.items()}
            a, b = (names[int(x) % max(len(owners), 1)]
                    for x in pairs[twice[0]:twice[0] + 2])
            view = accesses[0][0]
            raise IllTyped(
                f"none memory: element {cell} of {view.root} is reached through a "
                f"NONE mapping by {_unit(a)} and by {_unit(b)}; NONE tensors are "
                "never materialised (l.395), so one unit must hold each element",
                rule="None-Materialisation", span=NO_SPAN)


def _unit(owner: tuple[tuple[str, int], ...]) -> str:
    return " ".join(f"{level.lower()} {at}" for level, at in owner) or "the block"
