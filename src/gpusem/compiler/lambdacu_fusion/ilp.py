"""The fusion ILP of one control region (seed 002, Sec 8.2-8.5), solved with z3's
Optimize: o_i (the fused order of invocation i; i and j fused iff o_i = o_j),
f_ij = [o_i != o_j], c_a (array a is allocated), the objective of 8.4 and the
constraints VFUSE-COMPAT, VFUSE-CLUSTER, HFUSE-COMPAT, HFUSE-PREDS and the allocation
constraint of 8.3.

Note (errata.md, F1): VFUSE-CLUSTER prints o(I1) <= o(I2) + f(I1, I2), which for an
unfused edge (f = 1) lets the producer run one step *after* its consumer, and lets a
fused pair straddle an invocation between them. `fixed` reads it o(I1) + f(I1, I2) <=
o(I2): an unfused producer runs strictly before its consumer, a fused pair at once.
Note (F2): 8.4 says allocation, then memory traffic, then invocations, "in descending
order", but weights the invocations n^2 and the allocations 1; we solve the formula as
printed in both rule sets (it changes which fusions are chosen, never their meaning).
"""

from __future__ import annotations

from dataclasses import dataclass

import z3
from gpusem.compiler.lambdacu_fusion.graph import (
    Region,
    compatible_h,
    compatible_v,
    shared_reads,
)


@dataclass(frozen=True)
class Plan:
    """The clusters of a region in their fused order, each in program order."""

    clusters: tuple[tuple[int, ...], ...]
    objective: int


def solve(r: Region, rules: str = "fixed", timeout_ms: int = 10_000) -> Plan:
    """The optimal plan; among plans of equal cost, the one whose fused orders
    (o_0, o_1, ...) are lexicographically least: z3's first find among ties depended
    on what the process had solved before (a golden of emitted CUDA changed with the
    tests run before it), so ties are broken by the objectives after the cost."""
    opt, o, cost = instance(r, rules)
    opt.set("timeout", timeout_ms)
    opt.set(priority="lex")
    handle = opt.minimize(cost)
    for oi in o:  # lower priority than the cost, in order
        opt.minimize(oi)
    if opt.check() != z3.sat:
        return Plan(tuple((i,) for i in range(len(o))), -1)
    model = opt.model()
    order = {i: model.eval(o[i]).as_long() for i in range(len(o))}
    clusters: dict[int, list[int]] = {}
    for i in range(len(o)):
        clusters.setdefault(order[i], []).append(i)
    value = model.eval(handle.value()).as_long()
    return Plan(tuple(tuple(clusters[k]) for k in sorted(clusters)), value)


def admits(r: Region, rules: str, order: dict[int, int]) -> bool:
    """Do the constraints allow this fused order (o_i = order[i])?"""
    opt, o, _ = instance(r, rules)
    for i, k in order.items():
        opt.add(o[i] == k)
    return bool(opt.check() == z3.sat)


def instance(r: Region, rules: str) -> tuple[z3.Optimize, list[z3.ArithRef],
                                             z3.ArithRef]:
    """The ILP of 8.3-8.5: the solver with its constraints, o, and the objective."""
    inv = r.invocations
    n_inv = len(inv)
    opt = z3.Optimize()
    o = [z3.Int(f"o{i}") for i in range(n_inv)]
    for x in o:
        opt.add(x >= 0, x < n_inv)
    pairs = [(i, j) for i in range(n_inv) for j in range(i + 1, n_inv)]
    f = {p: z3.Int(f"f{p[0]}_{p[1]}") for p in pairs}
    for (i, j), fij in f.items():
        opt.add(fij == z3.If(o[i] == o[j], 0, 1))
    for i, j in sorted(r.into):
        a, b = inv[i].soac, inv[j].soac
        if not compatible_v(a, b):  # VFUSE-COMPAT
            opt.add(f[(i, j)] == 1)
        if rules == "paper":  # VFUSE-CLUSTER as printed
            opt.add(o[i] <= o[j] + f[(i, j)])
        else:
            opt.add(o[i] + f[(i, j)] <= o[j])
    for i, j in pairs:
        if not r.indep(i, j):
            continue
        if not compatible_h(inv[i].soac, inv[j].soac):  # HFUSE-COMPAT
            opt.add(f[(i, j)] == 1)
        elif not r.siblings(i, j):  # HFUSE-PREDS
            p1, p2 = r.preds(i), r.preds(j)
            unfused = [f[(min(a, b), max(a, b))] for a in p1 for b in p2 if a != b]
            all_pairs = len(p1) * len(p2)
            # a common parent is one pair that is always fused (f(I, I) = 0)
            opt.add(1 - f[(i, j)] <= all_pairs - z3.Sum(unfused + [z3.IntVal(0)]))
    alloc = []
    for i, producer in enumerate(inv):
        for a in producer.defs:
            c = z3.Int(f"c_{a}")
            opt.add(c >= 0, c <= 1)
            for j in range(i + 1, n_inv):
                if a in inv[j].uses:  # I_i def a, unfused with a user: allocate a
                    opt.add(c >= f[(i, j)])
            alloc.append(c)
    big = len(pairs) * (1 + n_inv) + len(alloc) + 1
    sr = [shared_reads(r, i, j) * f[(i, j)] for i, j in pairs]
    cost = (big * big * z3.Sum(list(f.values()) + [z3.IntVal(0)])
            + big * z3.Sum(sr + [z3.IntVal(0)]) + z3.Sum(alloc + [z3.IntVal(0)]))
    return opt, o, cost
