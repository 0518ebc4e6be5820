"""Legality of a mapping specification against its program (seed 001, Sec. 3.3,
l.393-395, and the rules of Sec. 3.2 that need a launch's callee, which only the
mapping decides): one function per rule, named after it, each citing its line.

- Mapping-Entrypoint (l.548, Fig. 5b l.9): exactly one instance is the entrypoint.
- Mapping-Instance (l.393): "Each instance is identified with a name": names unique.
- Mapping-Variant (l.393 (1)): the instance's variant exists.
- Mapping-Mems (l.393 (3)): one memory per tensor argument.
- Mapping-Visible (l.172): each mapped memory is visible from the instance's processor.
- Mapping-None (l.395): a NONE tensor is "never materialized" at that level; a leaf
  accesses its tensors' data (l.180), so a leaf instance maps none to NONE, and the
  entrypoint's tensors are the program's inputs and outputs, in GLOBAL memory.
- Mapping-Tunables (l.180, l.393 (4)): exactly the variant's tunables, each of its kind.
- Mapping-Calls (l.393 (5)): every name in `calls` is an instance, and each launch of
  the variant goes to exactly one of them (the one whose variant implements the task).
- Mapping-Processor (l.168, l.182): a launched instance runs at the caller's level or
  below it; a prange's tasks, which run in parallel, on a strictly lower level.
- Launch-Signature (l.180): a launch passes one argument per parameter, tensors for
  tensors, scalars for scalars, of the parameter's rank where the rank is known.
- Launch-Privilege (l.184): "a task that requests the read privilege on a tensor may
  not launch a sub-task that requests write privileges on the same tensor" (and
  likewise a read through a tensor the caller may not read).
- Prange-NonInterference (l.182): "the tasks launched with prange must not perform
  aliasing writes": what a callee writes is a piece of a disjoint partition (blocks,
  or the C operand of an mma partition) indexed by every loop variable of the prange.
- WarpSpecialize-Block (l.695): warp specialisation splits the warps of a block.
- Pipeline-Loop (l.697, l.403): a pipeline depth is at least 1, and above 1 only for an
  instance whose variant has an srange loop to pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress.machine import VISIBLE, Memory, Processor
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.span import Span
from gpusem.typing_rules.cypress.variants import origin_of, origins


def _err(rule: str, span: Span, message: str) -> IllTyped:
    return IllTyped(message, rule=rule, span=span)


def check_mapping(program: A.Program) -> list[IllTyped]:
    errors = mapping_entrypoint(program)
    seen: set[str] = set()
    for m in program.mappings:
        if m.instance in seen:
            errors.append(_err("Mapping-Instance", m.span, f"instance name: "
                               f"{m.instance} is defined twice (l.393)"))
        seen.add(m.instance)
        errors += instance_rules(program, m)
    return errors


def mapping_entrypoint(program: A.Program) -> list[IllTyped]:
    """Mapping-Entrypoint (l.548)."""
    found = [m for m in program.mappings if m.entrypoint]
    if len(found) == 1:
        return []
    where = found[1].span if len(found) > 1 else program.span
    return [_err("Mapping-Entrypoint", where, f"entrypoint: the mapping has "
                 f"{len(found)} entrypoint instances, needs exactly one (l.548)")]


def instance_rules(program: A.Program, m: A.TaskMapping) -> list[IllTyped]:
    v = program.variant(m.variant)
    if v is None:
        return [_err("Mapping-Variant", m.span,
                     f"unknown variant: instance {m.instance} uses {m.variant!r}, "
                     "which no @task defines (l.393)")]
    errors = mems_rules(m, v)
    errors += tunables_rule(m, v)
    errors += schedule_rules(m, v)
    for name in m.calls:
        if program.instance(name) is None:
            errors.append(_err("Mapping-Calls", m.span, f"calls: instance {m.instance} "
                               f"calls {name!r}, which is no instance (l.393)"))
    for launch, loops in _launches(v.body, ()):
        errors += launch_rules(program, m, v, launch, loops)
    return errors


def mems_rules(m: A.TaskMapping, v: A.Variant) -> list[IllTyped]:
    """Mapping-Mems (l.393), Mapping-Visible (l.172), Mapping-None (l.395)."""
    tensors = v.tensor_params
    if len(m.mems) != len(tensors):
        return [_err("Mapping-Mems", m.span, f"mems: instance {m.instance} maps "
                     f"{len(m.mems)} memories, {v.name} has {len(tensors)} tensor "
                     "arguments (l.393)")]
    errors = []
    for p, mem in zip(tensors, m.mems):
        if m.proc not in VISIBLE[mem]:
            errors.append(_err("Mapping-Visible", m.span, f"visibility: {mem.name} "
                               f"memory is not visible from {m.proc.name} (instance "
                               f"{m.instance}, argument {p.name}; l.172)"))
        if mem is Memory.NONE and v.kind == "Leaf":
            errors.append(_err("Mapping-None", m.span, f"none memory: leaf instance "
                               f"{m.instance} accesses {p.name}, which NONE never "
                               "materialises (l.395)"))
        if m.entrypoint and mem is not Memory.GLOBAL:
            errors.append(_err("Mapping-None", m.span, f"none memory: the entrypoint's "
                               f"{p.name} is a kernel argument: GLOBAL, not {mem.name} "
                               "(l.395, l.172)"))
    return errors


def _tunables(stmts: tuple[A.Stmt, ...]) -> Iterator[tuple[str, A.Tunable]]:
    for s in stmts:
        if isinstance(s, A.Assign):
            for t, e in zip(s.targets, s.values):
                if isinstance(e, A.Tunable):
                    yield t, e
        elif isinstance(s, A.Range):
            yield from _tunables(s.body)


def tunables_rule(m: A.TaskMapping, v: A.Variant) -> list[IllTyped]:
    """Mapping-Tunables (l.180, l.393 (4))."""
    wanted = dict(_tunables(v.body))
    given = dict(m.tunables)
    errors = []
    for name, t in wanted.items():
        if name not in given:
            errors.append(_err("Mapping-Tunables", m.span, f"tunables: instance "
                               f"{m.instance} gives no value for {name} (l.393)"))
        elif isinstance(given[name], Processor) != (t.kind == "processor"):
            errors.append(_err("Mapping-Tunables", m.span, f"tunables: {name} is a "
                               f"tunable({t.kind}), instance {m.instance} gives "
                               f"{given[name]} (l.180)"))
    for name in given:
        if name not in wanted:
            errors.append(_err("Mapping-Tunables", m.span, f"tunables: {v.name} has no "
                               f"tunable {name} (instance {m.instance}; l.180)"))
    return errors


def _has_srange(stmts: tuple[A.Stmt, ...]) -> bool:
    return any(isinstance(s, A.Range) and (s.kind == "srange" or _has_srange(s.body))
               for s in stmts)


def schedule_rules(m: A.TaskMapping, v: A.Variant) -> list[IllTyped]:
    """WarpSpecialize-Block (l.695), Pipeline-Loop (l.697)."""
    errors = []
    if m.warpspecialize and m.proc is not Processor.BLOCK:
        errors.append(_err("WarpSpecialize-Block", m.span, f"warp specialization: "
                           f"instance {m.instance} runs on {m.proc.name}; warp "
                           "specialization splits the warps of a BLOCK (l.695)"))
    if m.pipeline < 1 or (m.pipeline > 1 and not _has_srange(v.body)):
        errors.append(_err("Pipeline-Loop", m.span,
                           f"pipeline: instance {m.instance} asks for depth "
                           f"{m.pipeline}; a depth is >= 1, and > 1 needs an srange "
                           f"loop in {v.name} (l.697)"))
    return errors


Loops = tuple[A.Range, ...]


def _launches(stmts: tuple[A.Stmt, ...],
              loops: Loops) -> Iterator[tuple[A.Launch, Loops]]:
    for s in stmts:
        if isinstance(s, A.Launch):
            yield s, loops
        elif isinstance(s, A.Range):
            yield from _launches(s.body, loops + (s,))


def _callee(program: A.Program, m: A.TaskMapping,
            task: str) -> list[tuple[A.TaskMapping, A.Variant]]:
    out = []
    for name in m.calls:
        inst = program.instance(name)
        var = program.variant(inst.variant) if inst is not None else None
        if inst is not None and var is not None and var.task == task:
            out.append((inst, var))
    return out


def launch_rules(program: A.Program, m: A.TaskMapping, v: A.Variant, launch: A.Launch,
                 loops: Loops) -> list[IllTyped]:
    found = _callee(program, m, launch.task)
    if len(found) != 1:
        return [_err("Mapping-Calls", launch.span,
                     f"calls: instance {m.instance} calls {len(found)} instances of "
                     f"task {launch.task!r} here, needs exactly one (l.393)")]
    inst, callee = found[0]
    errors = []
    parallel = any(r.kind == "prange" for r in loops)
    if inst.proc.value < m.proc.value or (parallel and inst.proc.value <= m.proc.value):
        errors.append(_err("Mapping-Processor", launch.span, f"processor: instance "
                           f"{m.instance} ({m.proc.name}) launches {inst.instance} on "
                           f"{inst.proc.name}; "
                           + ("a prange's tasks run on a lower level (l.182)"
                              if parallel else
                              "a task runs at its caller's level or below (l.168)")))
    if len(launch.args) != len(callee.params):
        errors.append(_err("Launch-Signature", launch.span, f"launch signature: "
                           f"{callee.name} takes {len(callee.params)} arguments, the "
                           f"launch passes {len(launch.args)} (l.180)"))
        return errors
    errors += _arguments(v, callee, launch, loops)
    return errors


def _rank(e: A.Expr, v: A.Variant) -> int | None:
    """The rank of a launch argument where the syntax decides it."""
    params = {p.name: p.type.rank for p in v.tensor_params if p.type}
    parts: dict[str, A.Expr] = {}
    tensors: dict[str, int] = {}

    def visit(stmts: tuple[A.Stmt, ...]) -> None:
        for s in stmts:
            if isinstance(s, A.Assign):
                for t, value in zip(s.targets, s.values):
                    if isinstance(value, A.PartitionBlocks | A.PartitionMma):
                        parts[t] = value
                    elif isinstance(value, A.MakeTensor):
                        tensors[t] = len(value.dims)
            elif isinstance(s, A.Range):
                visit(s.body)

    visit(v.body)
    if isinstance(e, A.Var):
        return params.get(e.name, tensors.get(e.name))
    if isinstance(e, A.Piece) and e.partition in parts:
        p = parts[e.partition]
        if isinstance(p, A.PartitionMma):
            return 2
        assert isinstance(p, A.PartitionBlocks)
        return len(p.blocks) - sum(b is None for b in p.blocks)
    return None


def _arguments(v: A.Variant, callee: A.Variant, launch: A.Launch,
               loops: Loops) -> list[IllTyped]:
    """Launch-Signature (l.180), Launch-Privilege (l.184), Prange-NonInterference."""
    errors = []
    origin = origins(v)
    scalar_like = (A.Num, A.BinOp, A.Builtin, A.ShapeOf)
    for p, a in zip(callee.params, launch.args):
        if p.type is None:
            if not isinstance(a, scalar_like + (A.Var,)) or origin_of(a, origin):
                errors.append(_err("Launch-Signature", a.span, f"launch signature: "
                                   f"{p.name} of {callee.name} is an int (l.180)"))
            continue
        rank = _rank(a, v)
        if isinstance(a, scalar_like) or (rank is not None and rank != p.type.rank):
            errors.append(_err("Launch-Signature", a.span, f"launch signature: "
                               f"{p.name} of {callee.name} is a tensor of rank "
                               f"{p.type.rank}; the launch passes "
                               + (f"rank {rank}" if rank else "a scalar") + " (l.180)"))
            continue
        root = origin_of(a, origin)
        if root is not None:
            if p.name in callee.writes and root not in v.writes:
                errors.append(_err("Launch-Privilege", a.span, f"privilege: "
                                   f"{callee.name} writes its {p.name}, which is "
                                   f"{v.name}'s {root}, not in its writes (l.184)"))
            if p.name in callee.reads and root not in v.reads:
                errors.append(_err("Launch-Privilege", a.span, f"privilege: "
                                   f"{callee.name} reads its {p.name}, which is "
                                   f"{v.name}'s {root}, not in its reads (l.184)"))
        if p.name in callee.writes:
            errors += _disjoint_write(v, a, loops)
    return errors


def _disjoint_write(v: A.Variant, a: A.Expr, loops: Loops) -> list[IllTyped]:
    """Prange-NonInterference (l.182), the static half."""
    pvars = [n for r in loops if r.kind == "prange" for n in r.vars]
    if not pvars:
        return []
    part = None
    for s in _assigns(v.body):
        for t, e in zip(s.targets, s.values):
            if isinstance(a, A.Piece) and t == a.partition:
                part = e
    disjoint = isinstance(part, A.PartitionBlocks) or (
        isinstance(part, A.PartitionMma) and part.operand == "C")
    indexed = isinstance(a, A.Piece) and {
        i.name for i in a.index if isinstance(i, A.Var)} >= set(pvars)
    if disjoint and indexed:
        return []
    return [_err("Prange-NonInterference", a.span, "prange interference: a task "
                 "launched by prange writes this argument, which is not a piece of a "
                 "disjoint partition indexed by every prange variable "
                 f"({', '.join(pvars)}) (l.182)")]


def _assigns(stmts: tuple[A.Stmt, ...]) -> Iterator[A.Assign]:
    for s in stmts:
        if isinstance(s, A.Assign):
            yield s
        elif isinstance(s, A.Range):
            yield from _assigns(s.body)
