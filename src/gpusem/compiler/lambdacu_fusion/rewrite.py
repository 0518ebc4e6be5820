"""Fusion rewriting (seed 002, Sec 9): a plan's clusters become fused kernel
invocations, and inside a fused kernel the thunk combination ‡A of 9.2 inlines a MAP
into its consumer (MAP-MAP, MAP-PERMUTE, MAP-REDUCE).

A cluster becomes one kernel whose body is its members' SOAC applications in program
order (9.1: "two kernel invocations in sequence are indistinguishable from a single
kernel invocation that binds the same set of variables"): a member's parameters are
renamed to the region's variables it is passed (a literal argument becomes a parameter
of its own), its kernel-level names to the region's names it binds (the ones it
returns) or to fresh ones; the fused kernel takes the region variables its members
read and no member binds, and returns what a later cluster or the code after the
region reads. The fused invocations follow the plan's order.

Thunk combination, {i => e1 using xs} ‡A {i => e2 using ys} =
{i => let a = e1 in [A[i]/a]e2 using xs ∪ (ys \\ {A})}, replaces `A = MAP Λ1 n` and
its consumer by the consumer alone.
Note (errata.md, F3): the rules of 9.2 state no condition on A's other uses: as
printed (`paper`) the MAP is dropped and only A[i] in the consumer's first thunk is
rewritten, so a read of A at another index, by another SOAC or by the code after the
kernel is left dangling. `fixed` combines only when every use of A is A[i] in that one
thunk (its size aside) and A is not returned.

FILTER-FILTER and FILTER-REDUCE replace `A.. = FILTER Λ1 {w => p1} n` and a consumer
over #A. FILTER-REDUCE folds every one of the n rows, the dropped ones as the
operator's identity: b = REDUCE {i => let a = e1 in if [a/w]p then [A[i]/a]e2 else
idr} idr n. FILTER-FILTER keeps the producer's rows and conjoins the predicates.
Note (errata.md, F4): FILTER-REDUCE as printed needs, beyond F3's conditions, that
the consumer read no array at its index but A (its i now counts all n rows, not the
kept ones) and that idr be an identity of the operator on every value: int and bool
operators, not the float ones (+0.0 + -0.0 is +0.0; fmaxf(-inf, NaN) is -inf), and
no `id` (no identity at all). Note (F5): FILTER-FILTER as printed combines Λ1 with
itself (`Λ1 ‡A Λ1`), drops the consumer's element thunk, and writes the conjoined
predicate as an index thunk `{i => let a = body(Λ1) in p1 && [A[i]/a]p2}` whose
p1 and p2 still read their own parameters v and w, unbound. `fixed` fuses two
FILTERs only when the consumer's rows are the producer's (its element thunk returns
A[i]..: a pack, as Sec 7's PACK writes it), as FILTER Λ1 {v => p1 && [v/w]p2} n.
Each rewrite applied is counted by its rule's name (`combine`'s `fired`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import assert_never

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.signatures import ROP_TYPES
from gpusem.calculus.lambdacu.values import F32, Bool, Type
from gpusem.compiler.lambdacu_fusion.graph import Invocation
from gpusem.typing_rules.lambdacu.wellformed import free_g

Lets = list[tuple[tuple[str, ...], ast.SoacApp]]


def rename_atom(a: ast.Atom, m: dict[str, str]) -> ast.Atom:
    return ast.Var(m.get(a.name, a.name), a.span) if isinstance(a, ast.Var) else a


def rename_g(g: ast.GExp, m: dict[str, str]) -> ast.GExp:
    """The free variables of g renamed by m (binders stop it)."""
    if not m:
        return g
    match g:
        case ast.GLet(names, rhs, body, span):
            inner = {k: v for k, v in m.items() if k not in names}
            return ast.GLet(names, rename_g(rhs, m), rename_g(body, inner), span)
        case ast.GIf(cond, then, else_, span):
            return ast.GIf(rename_atom(cond, m), rename_g(then, m),
                           rename_g(else_, m), span)
        case ast.GRet(atoms, span):
            return ast.GRet(tuple(rename_atom(a, m) for a in atoms), span)
        case ast.GPrim(op, args, span):
            return ast.GPrim(op, tuple(rename_atom(a, m) for a in args), span)
        case ast.GSub(array, index, span):
            return ast.GSub(m.get(array, array), rename_atom(index, m), span)
        case ast.GAtom(atom, span):
            return ast.GAtom(rename_atom(atom, m), span)
        case _:
            assert_never(g)


def rename_thunk(t: ast.Thunk, m: dict[str, str]) -> ast.Thunk:
    inner = {k: v for k, v in m.items() if k not in t.params}
    return ast.Thunk(t.params, rename_g(t.body, inner),
                     tuple(dict.fromkeys(inner.get(x, x) for x in t.using)), t.span)


def rename_app(app: ast.SoacApp, m: dict[str, str]) -> ast.SoacApp:
    args = tuple(rename_thunk(a, m) if isinstance(a, ast.Thunk) else a
                 for a in app.args)
    size = app.size
    if isinstance(size, ast.Len):
        size = ast.Len(m.get(size.name, size.name), size.span)
    elif isinstance(size, ast.Var):
        size = ast.Var(m.get(size.name, size.name), size.span)
    return ast.SoacApp(app.soac, args, size, app.span)


def member_lets(inv: Invocation, tag: str,
                params: dict[str, tuple[ast.Atom, Type]]) -> Lets:
    """The member's SOAC lets in the region's names; `params` collects the fused
    kernel's parameters (name -> the argument the call passes, its type)."""
    m: dict[str, str] = {}
    for k, (p, a) in enumerate(zip(inv.kernel.params, inv.args)):
        name = a.name if isinstance(a, ast.Var) else f"{tag}_lit{k}"
        m[p.name] = name
        params.setdefault(name, (a, p.type))
    e: ast.KExp = inv.kernel.body
    lets: Lets = []
    while isinstance(e, ast.KLet):
        lets.append((e.names, e.app))
        e = e.body
    returned = dict(zip(e.names, inv.defs))
    for names, _ in lets:
        for x in names:
            m[x] = returned.get(x, f"{tag}_{x}")
    out: Lets = []
    for names, app in lets:
        out.append((tuple(m[x] for x in names), rename_app(app, m)))
    return out


def _subst_sub(g: ast.GExp, arr: str, i: str, a: str) -> ast.GExp:
    """[A[i]/a]g: every A[i] (i the thunk's index) becomes a."""
    match g:
        case ast.GSub(array, ast.Var(idx), span) if array == arr and idx == i:
            return ast.GAtom(ast.Var(a, span), span)
        case ast.GLet(names, rhs, body, span):
            rhs2 = _subst_sub(rhs, arr, i, a)
            if arr in names or i in names:
                return ast.GLet(names, rhs2, body, span)
            return ast.GLet(names, rhs2, _subst_sub(body, arr, i, a), span)
        case ast.GIf(cond, then, else_, span):
            return ast.GIf(cond, _subst_sub(then, arr, i, a),
                           _subst_sub(else_, arr, i, a), span)
        case _:
            return g


def _only_indexed(g: ast.GExp, arr: str, i: str) -> bool:
    """Every read of A in g is A[i], i the thunk's index, neither rebound."""
    match g:
        case ast.GSub(array, ast.Var(idx)) if array == arr:
            return idx == i
        case ast.GLet(names, rhs, body):
            if not _only_indexed(rhs, arr, i):
                return False
            if arr in names:
                return True
            if i in names:
                return arr not in free_g(body)
            return _only_indexed(body, arr, i)
        case ast.GIf(cond, then, else_):
            return (not (isinstance(cond, ast.Var) and cond.name == arr)
                    and _only_indexed(then, arr, i) and _only_indexed(else_, arr, i))
        case _:
            return arr not in free_g(g)


def _reads(app: ast.SoacApp) -> set[str]:
    out: set[str] = set()
    for t in app.args:
        if isinstance(t, ast.Thunk):
            out |= set(t.using) | (free_g(t.body) - set(t.params))
    if isinstance(app.size, (ast.Len, ast.Var)):
        out.add(app.size.name)
    return out


def _same_size(producer: ast.SoacApp, consumer: ast.SoacApp, arr: str) -> bool:
    """The n of the rules: the consumer iterates over A itself, or the same size."""
    return consumer.size == producer.size or consumer.size == ast.Len(arr)


def combine(lets: Lets, keep: set[str], rules: str, fresh: list[int],
            fired: Counter[str] | None = None) -> Lets:
    """Apply MAP-MAP, MAP-PERMUTE, MAP-REDUCE, FILTER-FILTER and FILTER-REDUCE until
    none applies; `fired` counts each by its rule's name."""
    while True:
        step = _combine_once(lets, keep, rules, fresh)
        if step is None:
            return lets
        lets, rule = step
        if fired is not None:
            fired[rule] += 1


def _combine_once(lets: Lets, keep: set[str], rules: str,
                  fresh: list[int]) -> tuple[Lets, str] | None:
    for pi, (pnames, papp) in enumerate(lets):
        if papp.soac == "FILTER":
            step = _filter_pair(lets, pi, keep, rules, fresh)
            if step is not None:
                return step
            continue
        if papp.soac != "MAP" or len(pnames) != 1:
            continue
        arr = pnames[0]
        users = [ci for ci in range(pi + 1, len(lets)) if arr in _reads(lets[ci][1])]
        if not users:
            continue
        cnames, capp = lets[users[0]]
        t1, t2 = papp.args[0], capp.args[0]
        if (capp.soac not in ("MAP", "PERMUTE", "REDUCE")
                or not isinstance(t1, ast.Thunk) or not isinstance(t2, ast.Thunk)
                or len(t1.params) != 1 or len(t2.params) != 1
                or not _same_size(papp, capp, arr)):
            continue
        i = t2.params[0]
        if rules == "fixed":
            others = capp.args[1:]
            if (arr in keep or len(users) > 1 or not _only_indexed(t2.body, arr, i)
                    or any(isinstance(t, ast.Thunk) and arr in free_g(t.body)
                           for t in others)):
                continue
        fresh[0] += 1
        a = f"fz{fresh[0]}"
        body = ast.GLet((a,), rename_g(t1.body, {t1.params[0]: i}),
                        _subst_sub(t2.body, arr, i, a))
        if rules == "fixed":
            using = tuple(sorted(free_g(body) - {i}))
        else:  # xs ∪ (ys \ {A}), as printed
            using = tuple(dict.fromkeys([*t1.using, *(x for x in t2.using
                                                      if x != arr)]))
        thunk = ast.Thunk((i,), body, using, t2.span)
        fused = replace(capp, args=(thunk,) + capp.args[1:], size=papp.size)
        ci = users[0]
        return (lets[:pi] + lets[pi + 1:ci] + [(cnames, fused)] + lets[ci + 1:],
                f"MAP-{capp.soac}")
    return None


def _fresh(fresh: list[int]) -> str:
    fresh[0] += 1
    return f"fz{fresh[0]}"


def _bind(names: tuple[str, ...], values: tuple[str, ...], body: ast.GExp) -> ast.GExp:
    """let names = ret values in body (through fresh names: no capture when the two
    lists share a name)."""
    return ast.GLet(names, ast.GRet(tuple(ast.Var(v) for v in values)), body)


def _filter_pair(lets: Lets, pi: int, keep: set[str], rules: str,
                 fresh: list[int]) -> tuple[Lets, str] | None:
    """FILTER-FILTER and FILTER-REDUCE on the FILTER at `pi` and its first reader."""
    pnames, papp = lets[pi]
    users = [ci for ci in range(pi + 1, len(lets))
             if set(pnames) & _reads(lets[ci][1])]
    if not users:
        return None
    ci = users[0]
    cnames, capp = lets[ci]
    t1, pred = (a for a in papp.args if isinstance(a, ast.Thunk))
    t2 = capp.args[0]
    if (capp.soac not in ("FILTER", "REDUCE") or not isinstance(t2, ast.Thunk)
            or len(t1.params) != 1 or len(t2.params) != 1
            or len(pred.params) != len(pnames)
            or capp.size not in tuple(ast.Len(a) for a in pnames)):
        return None
    if rules == "fixed" and (set(pnames) & keep or len(users) > 1):
        return None
    i = t2.params[0]
    a = tuple(_fresh(fresh) for _ in pnames)
    e2 = t2.body
    for arr, x in zip(pnames, a):
        e2 = _subst_sub(e2, arr, i, x)
    others = [t for t in capp.args[1:] if isinstance(t, ast.Thunk)]
    if rules == "fixed" and (set(pnames) & free_g(e2) or any(
            set(pnames) & free_g(t.body) for t in others)):
        return None  # A read at another index than i, or by another thunk
    if capp.soac == "REDUCE":
        fused = _filter_reduce(papp, capp, (t1, pred, t2), pnames, e2, a, rules,
                               fresh)
    else:
        fused = _filter_filter(papp, capp, (t1, pred), pnames, e2, a, rules, fresh)
    if fused is None:
        return None
    return (lets[:pi] + lets[pi + 1:ci] + [(cnames, fused)] + lets[ci + 1:],
            f"FILTER-{capp.soac}")


def _identity(rop: str, rules: str) -> ast.Lit | None:
    """idr as a literal; F4: `fixed` only where it is an identity on every value."""
    base, ident = ROP_TYPES[rop]
    if rules == "fixed" and base.name == "float":
        return None
    if isinstance(ident, F32) and not abs(ident.value) < float("inf"):
        return None  # fmax/fmin's ±inf: no literal for it in Sec 5's grammar
    return ast.Lit(ident)


def _filter_reduce(papp: ast.SoacApp, capp: ast.SoacApp,
                   thunks: tuple[ast.Thunk, ast.Thunk, ast.Thunk],
                   pnames: tuple[str, ...], e2: ast.GExp, a: tuple[str, ...],
                   rules: str, fresh: list[int]) -> ast.SoacApp | None:
    """FILTER-REDUCE: b = REDUCE {i => let a = e1 in if [a/w]p then [A[i]/a]e2 else
    idr ..} idr Λ n."""
    t1, pred, t2 = thunks
    i = t2.params[0]
    rops = next(x for x in capp.args if isinstance(x, ast.Rops))
    ids = [_identity(op, rules) if op != "id" else None for op in rops.ops]
    if any(x is None for x in ids):
        return None
    if rules == "fixed" and i in free_g(e2):
        return None  # i counted the kept rows: another array read at i, or i itself
    c, ws = _fresh(fresh), tuple(_fresh(fresh) for _ in a)
    test = _bind(ws, a, _bind(pred.params, ws, pred.body))
    body = ast.GLet(a, rename_g(t1.body, {t1.params[0]: i}),
                    ast.GLet((c,), test, ast.GIf(ast.Var(c), e2, ast.GRet(
                        tuple(x for x in ids if x is not None)))))
    if rules == "fixed":
        using = tuple(sorted(free_g(body) - {i}))
    else:  # xs ∪ (ys ∪ zs) \ {A}, as printed
        using = tuple(dict.fromkeys(x for t in (t1, pred, t2) for x in t.using
                                    if x not in pnames))
    return replace(capp, args=(ast.Thunk((i,), body, using, t2.span), rops),
                   size=papp.size)


def _filter_filter(papp: ast.SoacApp, capp: ast.SoacApp,
                   producer: tuple[ast.Thunk, ast.Thunk], pnames: tuple[str, ...],
                   e2: ast.GExp, a: tuple[str, ...], rules: str,
                   fresh: list[int]) -> ast.SoacApp | None:
    """FILTER-FILTER: `fixed` B = FILTER Λ1 {v => p1 && [v/w]p2} n for a consumer
    whose rows are A's; `paper` as printed (F5)."""
    t1, pred = producer
    pred2 = capp.args[1]
    assert isinstance(pred2, ast.Thunk)
    c = _fresh(fresh)
    false = ast.GRet((ast.Lit(Bool(False)),))
    if rules == "paper":
        i = t1.params[0]
        p2 = pred2.body
        for arr, x in zip(pnames, a):
            p2 = _subst_sub(p2, arr, i, x)
        both = ast.GLet(a, t1.body, ast.GLet((c,), pred.body, ast.GIf(
            ast.Var(c), p2, false)))
        rows = ast.Thunk(t1.params, ast.GLet(a, t1.body, t1.body), t1.using, t1.span)
        using = tuple(dict.fromkeys([*pred.using, *(x for x in pred2.using
                                                    if x not in a)]))
        return replace(capp, args=(rows, ast.Thunk((i,), both, using, pred.span)),
                       size=papp.size)
    same = ast.GRet(tuple(ast.Var(x) for x in a))
    if not (e2 == same or (len(a) == 1 and e2 == ast.GAtom(ast.Var(a[0])))):
        return None  # the consumer's rows are not A's: no predicate on them
    if len(pred2.params) != len(pred.params):
        return None
    vs = tuple(_fresh(fresh) for _ in a)
    second = _bind(vs, pred.params, _bind(pred2.params, vs, pred2.body))
    body = ast.GLet((c,), pred.body, ast.GIf(ast.Var(c), second, false))
    using = tuple(sorted(free_g(body) - set(pred.params)))
    return replace(capp, args=(t1, ast.Thunk(pred.params, body, using, pred2.span)),
                   size=papp.size)

