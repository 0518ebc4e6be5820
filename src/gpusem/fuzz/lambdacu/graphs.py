"""Hypothesis strategies of kernel-invocation graphs (issue 29, fusion): programs whose
kernels each apply one SOAC (8.5: "prior to fusion, all kernel declarations contain
only a single SOAC application") and whose `main` is one control region of 2-6
invocations wired by dataflow: each reads arrays of one length class from the inputs
or from earlier invocations (so producer-consumer chains, siblings and independent
invocations all occur), and main returns some of the results, so that some arrays are
intermediates fusion may remove.

Length classes are kept at the CPU level as programs.py keeps them in a kernel: the
inputs are class 0 (length n >= 1), MAP, SCAN, PERMUTE and REDUCE's `id` keep the
class they ran over, FILTER and PARTITION open new ones (maybe empty: ONCE, which
reads element 0, only runs over class 0).

`packs=True` (the fusion campaign, scripts/lambdacu_fusion.py) also draws packs:
`FILTER {i => a[i]} {e => p} #a`, whose rows are its input's (Sec 7's PACK), the only
consumer FILTER-FILTER fuses (errata F5), and over a FILTER's output a pack or a
REDUCE half as often as anything else, so that FILTER-FILTER and FILTER-REDUCE are
met, and over class 0 (whose length n it knows) permutes `PERMUTE {i => a[i]} idx
#a` of a one-output MAP's result, which nothing else then reads, whose index thunk
may use n as a literal rather than `len a` (a thunk reading `len A` keeps A alive:
errata F3), so that MAP-PERMUTE is met; off by default, so that the `lambdacu`
target's seeds draw the programs they drew before.
"""

from __future__ import annotations

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import Arr, ArrayT, Base, Type, tuple_type
from gpusem.fuzz.lambdacu.programs import SOACS, Kernel, index_thunk, soac_let
from gpusem.fuzz.lambdacu.strategies import BASES, Scope, gexp, literal, thunk
from hypothesis import strategies as st


def _pack(draw: st.DrawFn, k: Kernel, a: str) -> tuple[tuple[str, ...],
                                                       ast.SoacApp]:
    """`r = FILTER {i => a[i]} {e => p} #a`: the rows are a's."""
    ty = k.arrays[a][0]
    i, e, r = k.fresh("i"), k.fresh("e"), k.fresh("r")
    psc = Scope({**k.scalars, e: ty}, {}, None, -1, k.counter)
    pred = thunk((e,), gexp(draw, "bool", psc, draw(st.integers(0, 2))))
    k.bind(r, ty, k.new_class())
    return (r,), ast.SoacApp("FILTER", (thunk((i,), ast.GSub(a, ast.Var(i))), pred),
                             ast.Len(a))


def _permute(draw: st.DrawFn, k: Kernel, a: str) -> tuple[tuple[str, ...],
                                                          ast.SoacApp]:
    """`r = PERMUTE {i => a[i]} idx #a` (Sec 7's PERMUTE), a of class 0 and idx one of
    _index_thunk's: the consumer MAP-PERMUTE fuses when a is a MAP's output."""
    ty = k.arrays[a][0]
    i, r = k.fresh("i"), k.fresh("r")
    k.bind(r, ty, 0)
    return (r,), ast.SoacApp("PERMUTE", (thunk((i,), ast.GSub(a, ast.Var(i))),
                                         index_thunk(draw, k, a, 0)), ast.Len(a))


@st.composite
def fusion_programs(draw: st.DrawFn, packs: bool = False) -> ast.Program:
    counter = [0]
    n = draw(st.integers(1, 5))
    arrays: dict[str, tuple[str, int]] = {}
    scalars: dict[str, str] = {}
    prelude: list[tuple[str, ast.Lit]] = []
    for j in range(draw(st.integers(1, 3))):
        ty = draw(st.sampled_from(BASES))
        items = tuple(literal(draw, ty).value for _ in range(n))
        prelude.append((f"in{j}", ast.Lit(Arr(ty, tuple(
            x for x in items if not isinstance(x, Arr))))))
        arrays[f"in{j}"] = (ty, 0)
    if draw(st.booleans()):
        ty = draw(st.sampled_from(BASES))
        prelude.append(("sc", literal(draw, ty)))
        scalars["sc"] = ty
    kernels: list[ast.Kernel] = []
    runs: list[tuple[tuple[str, ...], ast.CRun]] = []
    results: list[tuple[str, Type]] = []
    maps: set[str] = set()  # the outputs of one-output MAPs
    permuted: set[str] = set()  # MAP outputs a pack-like PERMUTE read: no other use
    for j in range(draw(st.integers(2, 6))):
        cls = draw(st.sampled_from(sorted({c for _, c in arrays.values()})))
        # MAP twice as likely: it is what most fusions start from (8.5)
        # over a FILTER's output (class > 0): a pack or a REDUCE, what FILTER-FILTER
        # and FILTER-REDUCE fuse; over class 0 (packs), 4 in 20 a permute of a
        # one-output MAP's result when there is one, which nothing else then reads
        # (what MAP-PERMUTE fuses), else a MAP
        pick = draw(st.integers(0, 3 if cls else 19)) if packs else 3
        pool = sorted(a for a, (_, c) in arrays.items()
                      if c == cls and a not in permuted)
        fed = sorted(maps & set(pool)) if pick >= 16 else []
        first = [draw(st.sampled_from(fed))] if fed else []
        rest = [a for a in pool if a not in first]
        args = first + (draw(st.lists(st.sampled_from(rest), max_size=2, unique=True))
                        if first and rest else [] if first else
                        draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3,
                                      unique=True)))
        permuted.update(first)
        sargs = draw(st.lists(st.sampled_from(sorted(scalars)), max_size=2,
                              unique=True)) if scalars else []
        k = Kernel({f"s{t}": scalars[x] for t, x in enumerate(sargs)},
                   {f"a{t}": (arrays[x][0], 0) for t, x in enumerate(args)}, counter,
                   lengths={0: n} if packs and cls == 0 else {})
        if pick <= 1:
            names, app = _pack(draw, k, "a0")
        elif pick >= 16 and first:
            names, app = _permute(draw, k, "a0")
        elif pick >= 16:  # no MAP result to permute yet: a MAP
            names, app = draw(soac_let(k, ("MAP",)))
        elif pick == 2:
            names, app = draw(soac_let(k, ("REDUCE",)))
        else:
            names, app = draw(soac_let(k, ("MAP",) + (SOACS if cls == 0
                                                      else SOACS[1:])))
        types = dict(k.bound)
        params = tuple(ast.Param(f"a{t}", ArrayT(arrays[x][0]))
                       for t, x in enumerate(args)) + tuple(
            ast.Param(f"s{t}", Base(scalars[x])) for t, x in enumerate(sargs))
        kname = f"k{j}"
        kernels.append(ast.Kernel(kname, params, tuple_type(tuple(types[x]
                                                                  for x in names)),
                                  ast.KLet(names, app, ast.KRet(names))))
        outs = tuple(f"x{j}_{t}" for t in range(len(names)))
        if app.soac == "MAP" and len(outs) == 1:
            maps.add(outs[0])
        fresh: dict[int, int] = {0: cls}
        for x, out in zip(names, outs):
            rty = types[x]
            results.append((out, rty))
            if isinstance(rty, ArrayT):
                kc = k.arrays[x][1]
                if kc not in fresh:  # a FILTER / PARTITION output: a new class
                    fresh[kc] = max(c for _, c in arrays.values()) + 1 + len(fresh)
                arrays[out] = (rty.elem, fresh[kc])
            else:
                assert isinstance(rty, Base)
                scalars[out] = rty.name
        runs.append((outs, ast.CRun(kname, tuple(ast.Var(a) for a in args)
                                    + tuple(ast.Var(s) for s in sargs))))
    shown = draw(st.lists(st.sampled_from([r for r in results
                                           if r[0] not in permuted]),
                          min_size=1, max_size=4, unique=True))
    body: ast.CExp = ast.CTuple(tuple(ast.Var(x) for x, _ in shown))
    for names, run in reversed(runs):
        body = ast.CLet(names, run, body)
    for x, lit in reversed(prelude):
        body = ast.CLet((x,), ast.CTuple((lit,)), body)
    main = ast.Function("main", (), tuple_type(tuple(t for _, t in shown)), body)
    return ast.Program(tuple(kernels), (main,))
