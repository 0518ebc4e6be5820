"""Legality of the logical description (seed 001, Sec. 3.2, l.178-198): one function
per rule, named after it, each citing its line.

- Variant-Signature (l.180): "Each variant of a task must have the same function
  signature" (parameter names, and rank and element type of each tensor).
- Privilege-Names (l.184): privileges name tensor parameters of the variant.
- Inner-Body (l.180): inner variants perform "only scalar computations, partitioning
  tensors ... and launching sub-tasks" and "may not access the data within tensors or
  invoke external functions".
- Leaf-Body (l.180): leaf variants "may not launch sub-tasks" (nor prange, which only
  launches).
- Leaf-Privilege (l.184): "Tasks must respect the declared privilege when accessing a
  tensor": a leaf operation writes only what the variant may write, reads only what it
  may read.
- Names-Bound: every name is bound before use (the reading would trap).

Conventions: `origin` maps a variant's names to the tensor parameter they were cut
from (a partition or piece of C has origin C), or None for locals and scalars.
"""

from __future__ import annotations

from gpusem.calculus.cypress import ast as A
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.span import Span

# Which operands of a leaf operation it reads (the rest it only writes).
LEAF_READS = {"clear": (), "copy": (0,), "mma": (0, 1, 2), "mma_nt": (0, 1, 2),
              "mma_fma": (0, 1, 2),
              "add": (1, 2), "sub": (1, 2), "mul": (1, 2), "div": (1, 2),
              "maximum": (1, 2), "exp": (1,), "rowmax": (1,), "rowsum": (1,)}


def _err(rule: str, span: Span, message: str) -> IllTyped:
    return IllTyped(message, rule=rule, span=span)


def check_variants(program: A.Program) -> list[IllTyped]:
    errors: list[IllTyped] = []
    errors += variant_signature(program)
    for v in program.variants:
        errors += privilege_names(v)
        errors += body_rules(v)
    names = [v.name for v in program.variants]
    for v in program.variants:
        if names.count(v.name) > 1 and program.variant(v.name) is not v:
            errors.append(_err("Variant-Signature", v.span,
                               f"variant signature: variant {v.name} defined twice"))
    return errors


def _signature(v: A.Variant) -> tuple[tuple[str, int, str], ...]:
    return tuple((p.name, p.type.rank, p.type.dtype) if p.type else (p.name, 0, "int")
                 for p in v.params)


def variant_signature(program: A.Program) -> list[IllTyped]:
    """Variant-Signature (l.180)."""
    first: dict[str, A.Variant] = {}
    errors = []
    for v in program.variants:
        ref = first.setdefault(v.task, v)
        if _signature(v) != _signature(ref):
            errors.append(_err("Variant-Signature", v.span,
                               f"variant signature: {v.name} and {ref.name} implement "
                               f"task {v.task!r} with different signatures (l.180)"))
    return errors


def privilege_names(v: A.Variant) -> list[IllTyped]:
    """Privilege-Names (l.184)."""
    tensors = {p.name for p in v.tensor_params}
    return [_err("Privilege-Names", v.span,
                 f"privilege names: {v.name} declares a privilege on {n!r}, not one of "
                 f"its tensor parameters (l.184)")
            for n in v.reads + v.writes if n not in tensors]


def origins(v: A.Variant) -> dict[str, str | None]:
    """The tensor parameter each name of `v` derives from (flow-insensitive: a task
    body has one flat scope)."""
    out: dict[str, str | None] = {p.name: (p.name if p.type else None)
                                  for p in v.params}

    def visit(stmts: tuple[A.Stmt, ...]) -> None:
        for s in stmts:
            if isinstance(s, A.Assign):
                for t, e in zip(s.targets, s.values):
                    if isinstance(e, A.PartitionBlocks | A.PartitionMma):
                        out[t] = out.get(e.tensor)
                    else:
                        out[t] = None
            elif isinstance(s, A.Range):
                out.update({n: None for n in s.vars})
                visit(s.body)

    visit(v.body)
    return out


def origin_of(e: A.Expr, origin: dict[str, str | None]) -> str | None:
    if isinstance(e, A.Var):
        return origin.get(e.name)
    if isinstance(e, A.Piece):
        return origin.get(e.partition)
    return None


def body_rules(v: A.Variant) -> list[IllTyped]:
    """Inner-Body, Leaf-Body, Leaf-Privilege (l.180, l.184) and Names-Bound."""
    errors: list[IllTyped] = []
    origin = origins(v)
    bound = {p.name for p in v.params}

    def names_in(e: A.Expr) -> list[tuple[str, Span]]:
        match e:
            case A.Var(name, span):
                return [(name, span)]
            case A.BinOp(_, left, right, _):
                return names_in(left) + names_in(right)
            case A.Builtin(_, args, _) | A.MakeTensor(args, _):
                return [n for a in args for n in names_in(a)]
            case A.ShapeOf(tensor, _, span):
                return [(tensor, span)]
            case A.PartitionBlocks(tensor, blocks, span):
                return [(tensor, span)] + [n for b in blocks if b is not None
                                           for n in names_in(b)]
            case A.PartitionMma(tensor, _, proc, _, span):
                return [(tensor, span)] + names_in(proc)
            case A.Piece(part, index, span):
                return [(part, span)] + [n for i in index for n in names_in(i)]
            case _:
                return []

    def need_bound(exprs: tuple[A.Expr, ...]) -> None:
        for e in exprs:
            for name, span in names_in(e):
                if name not in bound:
                    errors.append(_err("Names-Bound", span,
                                       f"unbound name: {name} in {v.name}"))

    def visit(stmts: tuple[A.Stmt, ...]) -> None:
        for s in stmts:
            match s:
                case A.Assign(targets, values, _, _):
                    need_bound(values)
                    bound.update(targets)
                case A.Range(kind, names, extents, body, span):
                    need_bound(extents)
                    if v.kind == "Leaf" and kind == "prange":
                        errors.append(_err(
                            "Leaf-Body", span, f"leaf body: {v.name} is a leaf "
                            "variant; prange launches tasks (l.180)"))
                    bound.update(names)
                    visit(body)
                case A.Launch(task, args, span):
                    need_bound(args)
                    if v.kind == "Leaf":
                        errors.append(_err(
                            "Leaf-Body", span, f"leaf body: leaf variant {v.name} "
                            f"launches {task!r}; leaf variants may not launch "
                            "sub-tasks (l.180)"))
                case A.LeafOp(op, args, span):
                    need_bound(args)
                    if v.kind == "Inner":
                        errors.append(_err(
                            "Inner-Body", span, f"inner body: inner variant {v.name} "
                            f"calls {op}; inner variants may not access tensor data "
                            "(l.180)"))
                    else:
                        errors.extend(_leaf_privilege(v, op, args, origin, span))
                case A.CallExternal(function, args, span):
                    need_bound(args)
                    if v.kind == "Inner":
                        errors.append(_err(
                            "Inner-Body", span, f"inner body: inner variant {v.name} "
                            f"calls external {function!r}; inner variants may not "
                            "invoke external functions (l.180)"))

    visit(v.body)
    return errors


def _leaf_privilege(v: A.Variant, op: str, args: tuple[A.Expr, ...],
                    origin: dict[str, str | None], span: Span) -> list[IllTyped]:
    """Leaf-Privilege (l.184)."""
    errors = []
    writes = A.LEAF_OPS[op][1]
    for i, a in enumerate(args):
        root = origin_of(a, origin)
        if root is None:
            continue  # a tensor of the variant's own (make_tensor)
        if i in writes and root not in v.writes:
            errors.append(_err("Leaf-Privilege", a.span, f"privilege: {op} writes "
                               f"{root}, which {v.name} does not declare in writes "
                               "(l.184)"))
        if i in LEAF_READS[op] and root not in v.reads:
            errors.append(_err("Leaf-Privilege", a.span, f"privilege: {op} reads "
                               f"{root}, which {v.name} does not declare in reads "
                               "(l.184)"))
    return errors
