"""Hypothesis strategies of whole lambda-cu programs: kernels of SOAC applications
over the thread expressions of `strategies.py`, and a `main` that runs them on literal
inputs (issue 29 step 6). `programs()` is the strategy; strategies.py says how
validity is kept."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import (
    I32,
    Arr,
    ArrayT,
    Base,
    Type,
    tuple_type,
    type_items,
)
from gpusem.fuzz.lambdacu.strategies import (
    BASES,
    ROPS,
    Scope,
    components,
    gexp,
    literal,
    thunk,
)
from hypothesis import strategies as st

SOACS = ("ONCE", "MAP", "PERMUTE", "REDUCE", "SCAN", "FILTER", "PARTITION")


@dataclass
class Kernel:
    """A kernel under construction: what its SOACs have bound so far."""

    scalars: dict[str, str]
    arrays: dict[str, tuple[str, int]]
    counter: list[int]
    classes: list[int] = field(default_factory=lambda: [0])
    bound: list[tuple[str, Type]] = field(default_factory=list)
    # class -> its length, where the generator knows it (graphs.py with packs): a
    # PERMUTE over it may then compute its indices from constants (F3, below)
    lengths: dict[int, int] = field(default_factory=dict)

    def fresh(self, stem: str) -> str:
        self.counter[0] += 1
        return f"{stem}{self.counter[0]}"

    def new_class(self) -> int:
        self.classes[0] += 1
        return self.classes[0]

    def bind(self, name: str, ty: str, cls: int | None) -> None:
        if cls is None:
            self.scalars[name] = ty
            self.bound.append((name, Base(ty)))
        else:
            self.arrays[name] = (ty, cls)
            self.bound.append((name, ArrayT(ty)))


def index_thunk(draw: st.DrawFn, k: Kernel, a: str, cls: int) -> ast.Thunk:
    """A 1:1 map of 0..len(a)-1: a rotation or the reversal. Its length is `len a`,
    or where the class's length N is known, maybe the literal N: an index thunk that
    reads no array, which MAP-PERMUTE may fuse under errata F3's conditions (a thunk
    reading `len A` keeps A alive, so the MAP producing A is never combined)."""
    j, n, t = k.fresh("j"), k.fresh("l"), k.fresh("t")
    known = k.lengths.get(cls)
    length: ast.Atom = ast.Var(n)
    if known is not None and draw(st.booleans()):
        length = ast.Lit(I32(known))
    body: ast.GExp
    if draw(st.booleans()):
        shift = ast.Lit(I32(draw(st.integers(0, 5))))
        body = ast.GLet((t,), ast.GPrim("add", (ast.Var(j), shift)),
                        ast.GPrim("mod", (ast.Var(t), length)))
    elif isinstance(length, ast.Lit):
        assert known is not None
        body = ast.GPrim("sub", (ast.Lit(I32(known - 1)), ast.Var(j)))
    else:
        body = ast.GLet((t,), ast.GPrim("sub", (ast.Var(n), ast.Lit(I32(1)))),
                        ast.GPrim("sub", (ast.Var(t), ast.Var(j))))
    if isinstance(length, ast.Lit):
        return thunk((j,), body)
    return thunk((j,), ast.GLet((n,), ast.GPrim("len", (ast.Var(a),)), body))


@st.composite
def soac_let(draw: st.DrawFn, k: Kernel, soacs: tuple[str, ...] = SOACS
             ) -> tuple[tuple[str, ...], ast.SoacApp]:
    """One `let x.. = SOAC ..` of a random SOAC over arrays of one length class."""
    soac = draw(st.sampled_from(soacs))
    classes = sorted({c for _, c in k.arrays.values()})
    cls = draw(st.sampled_from(classes)) if soac != "ONCE" else 0
    of_class = sorted(a for a, (_, c) in k.arrays.items() if c == cls)
    size = ast.Len(draw(st.sampled_from(of_class)))
    tys = tuple(draw(st.sampled_from(BASES)) for _ in range(draw(st.integers(1, 2))))
    i = k.fresh("i")
    index: ast.Atom = ast.Lit(I32(0)) if soac == "ONCE" else ast.Var(i)
    params = (i,) if soac != "ONCE" or draw(st.booleans()) else ()
    sc = Scope(dict(k.scalars), dict(k.arrays), index, cls, k.counter)
    sc = sc.with_scalars({x: "int" for x in params})
    values = thunk(params, components(draw, sc, tys))
    names = tuple(k.fresh("r") for _ in tys)
    if soac == "ONCE":
        for x, ty in zip(names, tys):
            k.bind(x, ty, None)
        return names, ast.SoacApp(soac, (values,), None)
    args: tuple[ast.Arg, ...] = (values,)
    if soac in ("REDUCE", "SCAN"):
        ops = tuple(draw(st.sampled_from(ROPS[ty])) for ty in tys)
        args += (ast.Rops(ops),)
        for x, ty, op in zip(names, tys, ops):
            k.bind(x, ty, cls if soac == "SCAN" or op == "id" else None)
    elif soac == "PERMUTE":
        args += (index_thunk(draw, k, size.name, cls),)
        for x, ty in zip(names, tys):
            k.bind(x, ty, cls)
    elif soac == "MAP":
        for x, ty in zip(names, tys):
            k.bind(x, ty, cls)
    else:  # FILTER, PARTITION: a predicate on the components
        ps = tuple(k.fresh("e") for _ in tys)
        psc = Scope({**k.scalars, **dict(zip(ps, tys))}, {}, None, -1, k.counter)
        args += (thunk(ps, gexp(draw, "bool", psc, draw(st.integers(0, 2)))),)
        sides = 2 if soac == "PARTITION" else 1
        names = tuple(k.fresh("r") for _ in range(len(tys) * sides))
        for side in range(sides):
            c = k.new_class()
            for x, ty in zip(names[side * len(tys):], tys):
                k.bind(x, ty, c)
    return names, ast.SoacApp(soac, args, size)


@st.composite
def kernels(draw: st.DrawFn, name: str, counter: list[int]) -> ast.Kernel:
    arrays = [(f"a{j}", draw(st.sampled_from(BASES)))
              for j in range(draw(st.integers(1, 3)))]
    scalars = [(f"s{j}", ty) for j, ty in enumerate(
        draw(st.lists(st.sampled_from(BASES), max_size=2)))]
    k = Kernel(dict(scalars), {a: (ty, 0) for a, ty in arrays}, counter)
    lets = [draw(soac_let(k)) for _ in range(draw(st.integers(1, 4)))]
    outs = draw(st.lists(st.sampled_from(k.bound), min_size=1, max_size=3,
                         unique=True))
    body: ast.KExp = ast.KRet(tuple(x for x, _ in outs))
    for names, app in reversed(lets):
        body = ast.KLet(names, app, body)
    params = tuple(ast.Param(a, ArrayT(ty)) for a, ty in arrays) + tuple(
        ast.Param(s, Base(ty)) for s, ty in scalars)
    return ast.Kernel(name, params, tuple_type(tuple(t for _, t in outs)), body)


def _input(draw: st.DrawFn, p: ast.Param, n: int) -> ast.Lit:
    if isinstance(p.type, ArrayT):
        items = tuple(literal(draw, p.type.elem).value for _ in range(n))
        return ast.Lit(Arr(p.type.elem, tuple(x for x in items
                                              if not isinstance(x, Arr))))
    assert isinstance(p.type, Base)
    return literal(draw, p.type.name)


# function bump(x: int) -> int { let (y) = add x 1 in y }: CPU-FUNC-APP, and a let
# in a right-hand side (CPU-LET-EXP, errata L1)
HELPER = ast.Function("bump", (ast.Param("x", Base("int")),), Base("int"), ast.CLet(
    ("y",), ast.CPrim("add", (ast.Var("x"), ast.Lit(I32(1)))),
    ast.CTuple((ast.Var("y"),))))


@st.composite
def programs(draw: st.DrawFn) -> ast.Program:
    """A well-formed program: 1-3 kernels, a helper function, and main."""
    counter = [0]
    n = draw(st.integers(1, 5))
    ks = [draw(kernels(f"k{j}", counter)) for j in range(draw(st.integers(1, 3)))]
    results: list[tuple[str, Type]] = []
    steps: list[tuple[tuple[str, ...], ast.CExp]] = []
    for k in ks:
        args: list[ast.Atom] = []
        for p in k.params:
            lit = _input(draw, p, n)
            if draw(st.booleans()):
                x = f"in{len(steps)}"
                steps.append(((x,), ast.CTuple((lit,))))
                args.append(ast.Var(x))
            else:
                args.append(lit)
        outs = tuple(f"o{len(results) + j}" for j in range(len(_items(k.ret))))
        results += list(zip(outs, _items(k.ret)))
        steps.append((outs, ast.CRun(k.name, tuple(args))))
    steps.append((("h",), ast.CCall("bump", (ast.Lit(I32(draw(st.integers(0, 9)))),))))
    steps.append(((), ast.CCmd("print", (ast.Var("h"),))))
    c = draw(st.sampled_from(["lt", "gt"]))
    steps.append((("c",), ast.CPrim(c, (ast.Var("h"), ast.Lit(I32(5))))))
    tail = ast.CTuple(tuple(ast.Var(x) for x, _ in results) + (ast.Var("h"),))
    body: ast.CExp = ast.CIf(ast.Var("c"), tail, tail)
    for names, rhs in reversed(steps):
        body = ast.CLet(names, rhs, body)
    ret = tuple_type(tuple(t for _, t in results) + (Base("int"),))
    main = ast.Function("main", (), ret, body)
    return ast.Program(tuple(ks), (HELPER, main))


def _items(t: Type) -> tuple[Type, ...]:
    return type_items(t)


__all__ = ["programs"]
