"""lambda-cu fusion, whole programs (seed 002, Sections 8-9): each control region's
ILP (`ilp.solve`), its clusters rewritten into fused kernel invocations and thunk
combination inside them (`rewrite`). `fuse_program(p, rules)` returns the fused
program and what was done; `rules` ("paper" | "fixed") picks the printed or the
corrected VFUSE-CLUSTER (F1) and thunk combination (F3).

The property (tests/lambdacu/test_fusion.py): the fused program is well-formed and
means what the unfused one means.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import assert_never

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import Type, tuple_type, type_items
from gpusem.compiler.lambdacu_fusion.graph import Invocation, Region
from gpusem.compiler.lambdacu_fusion.ilp import Plan, solve
from gpusem.compiler.lambdacu_fusion.rewrite import Lets, combine, member_lets


@dataclass
class Fusion:
    ilp_rules: str      # VFUSE-CLUSTER: paper | fixed (F1)
    combine_rules: str  # thunk combination's conditions: paper | fixed (F3)
    kernels: list[ast.Kernel] = field(default_factory=list)
    plans: list[Plan] = field(default_factory=list)
    fresh: list[int] = field(default_factory=lambda: [0])  # fz<k> names: one per ‡A
    # each Sec 9.2 rewrite applied, by its rule's name (MAP-MAP, ..., FILTER-REDUCE)
    rewrites: Counter[str] = field(default_factory=Counter)


def free_c(e: ast.CExp) -> set[str]:
    def atoms(xs: tuple[ast.Atom, ...]) -> set[str]:
        return {a.name for a in xs if isinstance(a, ast.Var)}

    match e:
        case ast.CLet(names, rhs, body):
            return free_c(rhs) | (free_c(body) - set(names))
        case ast.CIf(cond, then, else_):
            return atoms((cond,)) | free_c(then) | free_c(else_)
        case ast.CCall(_, xs) | ast.CPrim(_, xs) | ast.CRun(_, xs) | ast.CCmd(_, xs):
            return atoms(xs)
        case ast.CTuple(xs):
            return atoms(xs)
        case _:
            assert_never(e)


def fuse_program(p: ast.Program, rules: str = "fixed", *, ilp: str | None = None,
                 combine_rules: str | None = None) -> tuple[ast.Program, Fusion]:
    """`rules` for both erratum points, or `ilp` / `combine_rules` apart."""
    fz = Fusion(ilp or rules, combine_rules or rules)
    kernels = {k.name: k for k in p.kernels}
    functions = tuple(ast.Function(f.name, f.params, f.ret,
                                   _cexp(f.body, kernels, fz), f.span)
                      for f in p.functions)
    used = {k.name for k in fz.kernels}
    kept = tuple(k for k in p.kernels) + tuple(k for k in fz.kernels if k.name in used)
    return ast.Program(kept, functions, p.span), fz


def _cexp(e: ast.CExp, kernels: dict[str, ast.Kernel], fz: Fusion) -> ast.CExp:
    if isinstance(e, ast.CLet) and isinstance(e.rhs, ast.CRun):
        chain: list[ast.CLet] = []
        while isinstance(e, ast.CLet) and isinstance(e.rhs, ast.CRun):
            chain.append(e)
            e = e.body
        return _region(chain, _cexp(e, kernels, fz), kernels, fz)
    match e:
        case ast.CLet(names, rhs, body, span):
            return ast.CLet(names, _cexp(rhs, kernels, fz), _cexp(body, kernels, fz),
                            span)
        case ast.CIf(cond, then, else_, span):
            return ast.CIf(cond, _cexp(then, kernels, fz), _cexp(else_, kernels, fz),
                           span)
    return e


def _region(chain: list[ast.CLet], rest: ast.CExp, kernels: dict[str, ast.Kernel],
            fz: Fusion) -> ast.CExp:
    invs = []
    for i, let in enumerate(chain):
        assert isinstance(let.rhs, ast.CRun)
        invs.append(Invocation(i, kernels[let.rhs.kernel], let.rhs.args, let.names))
    region = Region(tuple(invs))
    plan = solve(region, fz.ilp_rules) if len(invs) > 1 else Plan(((0,),), 0)
    fz.plans.append(plan)
    types: dict[str, Type] = {}
    for inv in invs:
        types.update(zip(inv.defs, type_items(inv.kernel.ret)))
    body = rest
    lets: list[tuple[tuple[str, ...], ast.CRun]] = []
    for cluster in plan.clusters:
        if len(cluster) == 1:
            let = chain[cluster[0]]
            assert isinstance(let.rhs, ast.CRun)
            lets.append((let.names, let.rhs))
            continue
        outside = free_c(rest).union(*(invs[j].uses for j in range(len(invs))
                                       if j not in cluster))
        lets.append(_fused(cluster, invs, outside, types, fz))
    for names, run in reversed(lets):
        body = ast.CLet(names, run, body, run.span)
    return body


def _fused(cluster: tuple[int, ...], invs: list[Invocation], outside: set[str],
           types: dict[str, Type], fz: Fusion) -> tuple[tuple[str, ...], ast.CRun]:
    fz.fresh[0] += 1
    name = f"fused{fz.fresh[0]}"
    params: dict[str, tuple[ast.Atom, Type]] = {}
    lets: Lets = []
    for j in cluster:
        lets += member_lets(invs[j], f"{name}m{j}", params)
    defined = {x for names, _ in lets for x in names}
    params = {k: v for k, v in params.items() if k not in defined}
    # what later clusters or the code after the region read; a dead cluster still
    # returns one name (`ret` takes at least one)
    outs = tuple(x for j in cluster for x in invs[j].defs if x in outside) or \
        invs[cluster[0]].defs[:1]
    lets = combine(lets, set(outs), fz.combine_rules, fz.fresh, fz.rewrites)
    body: ast.KExp = ast.KRet(outs)
    for names, app in reversed(lets):
        body = ast.KLet(names, app, body)
    kernel = ast.Kernel(name, tuple(ast.Param(k, t) for k, (_, t) in params.items()),
                        tuple_type(tuple(types[x] for x in outs)), body)
    fz.kernels.append(kernel)
    return outs, ast.CRun(name, tuple(a for a, _ in params.values()))
