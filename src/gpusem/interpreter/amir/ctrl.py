"""Control, boolean and window expressions of AMIR compiled to Python closures:
Figure 6 of Exo-GPU (C-Int, C-Read, C-Aff, B-Const, B-Log, B-Rel, W-Point, W-Range,
W-Tuple, E#-Acc), and the thread mappings f_{s#} of Section 4.

Each expression is translated once, by a walk over its AST, into a tree of closures
over the control environment σ (a dict): the machine then evaluates an index with one
call instead of a tree walk and a `match` per node, which is most of its per-statement
cost. The common leaves (a literal, a variable) are folded into their parent's
closure, so `k * 32 + 8` is two calls, not five.

Note: this used to generate Python source and `eval` it; an expression of ~250 terms
overflowed Python's own parser ("too many nested parentheses", issue 15). Closures
have no such limit: their depth is the expression's, which the parser bounds (the
`nesting` budget, calculus/budgets.py).

Conventions: σ -> `env` (dict name -> int). Division and remainder truncate toward
zero, as in C (the project's exactness rule); division by zero is BadInput.
Note: windows `lo:hi` are half-open (the GPU IR concrete syntax; Figure 6's W-Range
writes the inclusive set of an already-decremented bound).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, assert_never

from gpusem.calculus.amir import ast as A
from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir import ast as G
from gpusem.calculus.span import NO_SPAN, Span


def _div(a: int, b: int) -> int:
    if a >= 0 and b > 0:
        return a // b
    if b == 0:
        raise BadInput("division by zero: in a control expression")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _mod(a: int, b: int) -> int:
    if a >= 0 and b > 0:
        return a % b
    return a - b * _div(a, b)


Env = dict[str, int]                       # σ: control variable -> value
CFn = Callable[[Env], int]                 # a compiled control expression
BFn = Callable[[Env], bool]                # a compiled boolean expression
ThreadsFn = Callable[[Env], int | None]    # f_{s#}: thread mask, None for 𝔾
Shape = tuple[int, ...]
Index = tuple[int | slice, ...]            # a NumPy index of a window: ints, slices
Box = tuple[tuple[int, int], ...]          # a window's key: (lo, hi) per dimension


class Window(Protocol):
    """A compiled window W_{e#} (see `compile_window`)."""

    points: bool                           # every coordinate a point
    ndim: int
    raw: Callable[[Env, Shape], Index]     # the index, unchecked

    def __call__(self, e: Env, s: Shape, /) -> tuple[int, ...] | tuple[Index, Box] \
            | None: ...


_REL: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge}


@dataclass
class _Affine:
    """A control expression as const + Σ coef·var + Σ coef·term, where each term is a
    closure of a non-affine part (`/`, `%`, a product of two non-constants). Exact:
    AMIR's control values are unbounded integers, so reassociating is sound."""

    const: int = 0
    coefs: dict[str, int] = field(default_factory=dict)
    terms: list[tuple[int, CFn]] = field(default_factory=list)

    def scaled(self, k: int) -> _Affine:
        return _Affine(self.const * k, {v: c * k for v, c in self.coefs.items()},
                       [(c * k, f) for c, f in self.terms])

    def plus(self, other: _Affine) -> _Affine:
        coefs = dict(self.coefs)
        for v, c in other.coefs.items():
            coefs[v] = coefs.get(v, 0) + c
        return _Affine(self.const + other.const,
                       {v: c for v, c in coefs.items() if c},
                       self.terms + other.terms)

    @property
    def constant(self) -> bool:
        return not self.coefs and not self.terms


def _affine(c: G.CExpr, bound: frozenset[str], span: Span) -> _Affine:
    match c:
        case G.CInt(value=v):  # C-Int
            return _Affine(v)
        case G.CVar(name=n):  # C-Read
            if n not in bound:
                where = c.span if c.span is not NO_SPAN else span
                raise BadInput(f"unbound control variable: {n} at {where}", span=where)
            return _Affine(0, {n: 1})
        case G.CBin(op="+", lhs=l, rhs=r):  # C-Aff
            return _affine(l, bound, span).plus(_affine(r, bound, span))
        case G.CBin(op="-", lhs=l, rhs=r):
            return _affine(l, bound, span).plus(_affine(r, bound, span).scaled(-1))
        case G.CBin(op="*", lhs=l, rhs=r):
            a, b = _affine(l, bound, span), _affine(r, bound, span)
            if a.constant:
                return b.scaled(a.const)
            if b.constant:
                return a.scaled(b.const)
            f, g = _closure(a), _closure(b)
            return _Affine(0, {}, [(1, lambda e: f(e) * g(e))])
        case G.CBin(op=op, lhs=l, rhs=r):  # / and %, truncating as in C
            return _Affine(0, {}, [(1, _quotient(op, _affine(l, bound, span),
                                                 _affine(r, bound, span)))])
        case _:
            assert_never(c)


def _quotient(op: str, a: _Affine, b: _Affine) -> CFn:
    f = _closure(a)
    if b.constant and b.const > 0:  # the common case: a positive constant divisor
        d = b.const
        if op == "/":
            return lambda e: x // d if (x := f(e)) >= 0 else -(-x // d)
        return lambda e: x % d if (x := f(e)) >= 0 else -(-x % d)
    g, h = _closure(b), (_div if op == "/" else _mod)
    return lambda e: h(f(e), g(e))


def _closure(a: _Affine) -> CFn:
    """One closure for an affine form, unrolled for up to two variables and one
    non-affine term (almost every index)."""
    k0, terms = a.const, a.terms
    coefs = sorted(a.coefs.items())
    if len(terms) > 1 or len(coefs) > 2:
        vs = tuple(coefs)
        return lambda e: (k0 + sum([e[v] * k for v, k in vs])
                          + sum([k * t(e) for k, t in terms]))
    lin = _linear(k0, coefs)
    if not terms:
        return lin
    ((kt, t),) = terms
    if not coefs and k0 == 0:
        return t if kt == 1 else (lambda e: kt * t(e))
    return lambda e: lin(e) + kt * t(e)


def _linear(k0: int, coefs: list[tuple[str, int]]) -> CFn:
    match coefs:
        case []:
            return lambda e: k0
        case [(v, 1)] if k0 == 0:
            return operator.itemgetter(v)
        case [(v, 1)]:
            return lambda e: e[v] + k0
        case [(v, k)]:
            return lambda e: e[v] * k + k0
        case [(v, 1), (w, 1)]:
            return lambda e: e[v] + e[w] + k0
        case [(v, k), (w, j)]:
            return lambda e: e[v] * k + e[w] * j + k0
    raise AssertionError(coefs)


# Compiled closures are pure functions of σ (and a shape): one per expression (its
# structure, without spans), shared by every statement that has it (a kernel repeats
# its windows and bounds many times). Whether the names are bound is checked first.
_COMPILED: dict[tuple[object, ...], Any] = {}


def _key(c: G.CExpr) -> tuple[object, ...]:
    match c:
        case G.CInt(value=v):
            return ("i", v)
        case G.CVar(name=n):
            return ("v", n)
        case G.CBin(op=op, lhs=l, rhs=r):
            return (op, _key(l), _key(r))
        case _:
            assert_never(c)


def _b_key(b: G.BExpr) -> tuple[object, ...]:
    match b:
        case G.BConst(value=v):
            return ("b", bool(v))
        case G.BRel(op=op, lhs=l, rhs=r):
            return ("rel", op, _key(l), _key(r))
        case G.BLog(op=op, lhs=l, rhs=r):
            return ("log", op, _b_key(l), _b_key(r))
        case G.BNot(arg=a):
            return ("not", _b_key(a))
        case _:
            assert_never(b)


def _require_bound(c: object, bound: frozenset[str], span: Span) -> None:
    """BadInput at the first control variable of `c` that `bound` lacks (C-Read)."""
    stack = [c]
    while stack:
        node = stack.pop()
        if isinstance(node, G.CVar) and node.name not in bound:
            where = node.span if node.span is not NO_SPAN else span
            raise BadInput(f"unbound control variable: {node.name} at {where}",
                           span=where)
        for child in ("lhs", "rhs", "arg", "index", "lo", "hi"):
            sub = getattr(node, child, None)
            if sub is not None:
                stack.append(sub)


def compile_c(c: G.CExpr, bound: frozenset[str], span: Span = NO_SPAN) -> CFn:
    """A control expression (C-Int, C-Read, C-Aff) as a closure env -> int."""
    key = ("c", _key(c))
    _require_bound(c, bound, span)
    fn = _COMPILED.get(key)
    if fn is None:
        fn = _COMPILED[key] = _closure(_affine(c, bound, span))
    return fn


def _relation(op: str, a: _Affine, b: _Affine) -> BFn:
    """c1 op c2 as (c1 - c2) op 0: one closure, no call for the right-hand side."""
    f, rel = _closure(a.plus(b.scaled(-1))), _REL[op]
    match op:
        case "<":
            return lambda e: f(e) < 0
        case "<=":
            return lambda e: f(e) <= 0
        case "==":
            return lambda e: f(e) == 0
    return lambda e: rel(f(e), 0)


def compile_b(b: G.BExpr, bound: frozenset[str], span: Span = NO_SPAN) -> BFn:
    """A boolean expression (B-Const, B-Log, B-Rel) as a closure env -> bool."""
    key = ("b", _b_key(b))
    _require_bound(b, bound, span)
    fn = _COMPILED.get(key)
    if fn is None:
        fn = _COMPILED[key] = _compile_b(b, bound, span)
    return fn


def _compile_b(b: G.BExpr, bound: frozenset[str], span: Span) -> BFn:
    match b:
        case G.BConst(value=v):  # B-Const
            const = bool(v)
            return lambda e: const
        case G.BRel(op=op, lhs=l, rhs=r):  # B-Rel
            return _relation(op, _affine(l, bound, span), _affine(r, bound, span))
        case G.BLog(op=op, lhs=l, rhs=r):  # B-Log, short-circuit as in C
            f, g = _compile_b(l, bound, span), _compile_b(r, bound, span)
            if op == "and":
                return lambda e: f(e) and g(e)
            return lambda e: f(e) or g(e)
        case G.BNot(arg=a):
            f = _compile_b(a, bound, span)
            return lambda e: not f(e)
        case _:
            assert_never(b)


def compile_window(acc: A.Access, bound: frozenset[str], span: Span) -> Window:
    """E#-Acc with W-Point / W-Range / W-Tuple: a function (env, shape) -> a tuple of
    ints (every coordinate a point: `.points`) or, for a box, the pair (index of ints
    and slices, key: a (lo, hi) pair per dimension); None when the window leaves
    [0, shape) (the caller then grows or traps, using `.raw`, which returns the index
    unchecked). `None` interval bounds (`x[:, 0]`) read the variable's shape."""
    key = ("w", tuple(("p", _key(w.index)) if isinstance(w, G.WPoint) else
                      ("r", None if w.lo is None else _key(w.lo),
                       None if w.hi is None else _key(w.hi)) for w in acc.coords))
    for w in acc.coords:
        _require_bound(w, bound, span)
    cached = _COMPILED.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    coords: list[_Coord] = []
    for d, w in enumerate(acc.coords):
        match w:
            case G.WPoint(index=c):  # W-Point
                coords.append((d, _POINT, compile_c(c, bound, span), None))
            case G.WInterval(lo=lo, hi=hi):  # W-Range
                coords.append(_interval(d, lo, hi, bound, span))
            case _:
                assert_never(w)
    points = all(kind == _POINT for _, kind, _, _ in coords)
    fn = _point_window([f for _, _, f, _ in coords]) if points else _box_window(coords)
    fn.points = points
    fn.ndim = len(coords)
    _COMPILED[key] = fn
    return fn


# One coordinate of a window: (dimension, kind, f, g). _POINT: f is the index;
# _WIDTH: the interval f : f + g with g a constant int (`k*32 : k*32 + 32`, one call
# instead of two); _RANGE: the interval f : g, where a None bound is 0 or the extent.
_POINT, _WIDTH, _RANGE = 0, 1, 2
_Coord = tuple[int, int, Any, Any]


def _interval(d: int, lo: G.CExpr | None, hi: G.CExpr | None, bound: frozenset[str],
              span: Span) -> _Coord:
    if lo is not None and hi is not None:
        width = _affine(hi, bound, span).plus(_affine(lo, bound, span).scaled(-1))
        if width.constant:
            return (d, _WIDTH, compile_c(lo, bound, span), width.const)
    return (d, _RANGE, None if lo is None else compile_c(lo, bound, span),
            None if hi is None else compile_c(hi, bound, span))


def _point_window(fs: list[CFn]) -> Window:
    """W-Tuple of W-Points: the cell's coordinates, or None outside [0, shape). One
    and two dimensions (almost every access) are unrolled."""
    if len(fs) == 1:
        (f0,) = fs

        def win1(e: Env, s: Shape) -> tuple[int, ...] | None:
            a = f0(e)
            return (a,) if 0 <= a < s[0] else None
        return _with_raw(win1, lambda e, s: (f0(e),))
    if len(fs) == 2:
        f0, f1 = fs

        def win2(e: Env, s: Shape) -> tuple[int, ...] | None:
            a, b = f0(e), f1(e)
            return (a, b) if 0 <= a < s[0] and 0 <= b < s[1] else None
        return _with_raw(win2, lambda e, s: (f0(e), f1(e)))

    def winn(e: Env, s: Shape) -> tuple[int, ...] | None:
        t = tuple([f(e) for f in fs])
        for x, n in zip(t, s):
            if not 0 <= x < n:
                return None
        return t
    return _with_raw(winn, lambda e, s: tuple([f(e) for f in fs]))


def _box_window(coords: list[_Coord]) -> Window:
    """W-Tuple with at least one W-Range: (index, key), or None outside [0, shape)
    (as soon as one coordinate leaves it: the caller then evaluates `raw`)."""
    def bounds(e: Env, s: Shape, d: int, kind: int, f: Any, g: Any) -> tuple[int, int]:
        if kind == _POINT:
            a = f(e)
            return a, a + 1
        if kind == _WIDTH:
            a = f(e)
            return a, a + g
        return (0 if f is None else f(e)), (s[d] if g is None else g(e))

    def raw(e: Env, s: Shape) -> Index:
        out: list[int | slice] = []
        for d, kind, f, g in coords:
            a, b = bounds(e, s, d, kind, f, g)
            out.append(a if kind == _POINT else slice(a, b))
        return tuple(out)

    def win(e: Env, s: Shape) -> tuple[Index, Box] | None:
        idx: list[int | slice] = []
        key: list[tuple[int, int]] = []
        for d, kind, f, g in coords:  # `bounds`, inlined: this is the machine's
            if kind == _POINT:        # hottest loop
                a = f(e)
                b = a + 1
                idx.append(a)
            else:
                if kind == _WIDTH:
                    a = f(e)
                    b = a + g
                else:
                    a = 0 if f is None else f(e)
                    b = s[d] if g is None else g(e)
                idx.append(slice(a, b))
            if a < 0 or b > s[d]:
                return None
            key.append((a, b))
        return tuple(idx), tuple(key)
    return _with_raw(win, raw)


def _with_raw(fn: Callable[[Env, Shape], object],
              raw: Callable[[Env, Shape], Index]) -> Window:
    fn.raw = raw  # type: ignore[attr-defined]
    return fn  # type: ignore[return-value]


def box_key(idx: Index) -> Box:
    """The (lo, hi) per dimension of an index of ints and slices."""
    return tuple((i, i + 1) if isinstance(i, int) else (i.start, i.stop) for i in idx)


def compile_threads(th: A.ThreadMap, bound: frozenset[str], span: Span) -> ThreadsFn:
    """f_{s#}: a function env -> mask of natural thread indices, or None for 𝔾
    (a CPU-scoped statement, Definition 5.2)."""
    if th.cpu:
        return lambda e: None
    starts = [compile_c(r.start, bound, span) for r in th.dims]
    if len(th.dims) == 1 and th.dims[0].stride == 1:
        start, width = starts[0], (1 << th.dims[0].count) - 1

        def one(e: Env) -> int:
            s = start(e)
            if s < 0:
                raise BadInput(f"thread mapping: negative thread index {s} at {span}")
            return width << s
        return one
    dims = [(f, r.count, r.stride) for f, r in zip(starts, th.dims)]

    def box(e: Env) -> int:
        idx = {0}
        for f, n, stride in dims:
            s = f(e)
            idx = {i + s + k * stride for i in idx for k in range(n)}
        if min(idx) < 0:
            raise BadInput(f"thread mapping: negative thread index at {span}")
        m = 0
        for i in idx:
            m |= 1 << i
        return m
    return box
