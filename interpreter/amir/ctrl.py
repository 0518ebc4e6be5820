"""Control, boolean and window expressions of AMIR compiled to Python closures:
Figure 6 of Exo-GPU (C-Int, C-Read, C-Aff, B-Const, B-Log, B-Rel, W-Point, W-Range,
W-Tuple, E#-Acc), and the thread mappings f_{s#} of Section 4.

Each expression is translated once into the source of a Python lambda over the control
environment σ (a dict) and `eval`-ed: the machine then evaluates an index with one call
instead of a tree walk, which is most of its per-statement cost.

Conventions: σ -> `env` (dict name -> int). Division and remainder truncate toward
zero, as in C (the project's exactness rule); division by zero is BadInput.
Note: windows `lo:hi` are half-open (the GPU IR concrete syntax; Figure 6's W-Range
writes the inclusive set of an already-decremented bound).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, assert_never

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


_GLOBALS = {"_div": _div, "_mod": _mod, "__builtins__": {}}
_REL = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def c_source(c: G.CExpr, bound: frozenset[str], span: Span = NO_SPAN) -> str:
    """Python source of a control expression (C-Int, C-Read, C-Aff)."""
    match c:
        case G.CInt(value=v):
            return repr(v)
        case G.CVar(name=n):
            if n not in bound:
                where = c.span if c.span is not NO_SPAN else span
                raise BadInput(f"unbound control variable: {n} at {where}", span=where)
            return f"e[{n!r}]"
        case G.CBin(op=op, lhs=l, rhs=r):
            a, b = c_source(l, bound, span), c_source(r, bound, span)
            if op == "/":
                return f"_div({a}, {b})"
            if op == "%":
                return f"_mod({a}, {b})"
            return f"({a} {op} {b})"
        case _:
            assert_never(c)


def b_source(b: G.BExpr, bound: frozenset[str], span: Span = NO_SPAN) -> str:
    """Python source of a boolean expression (B-Const, B-Log, B-Rel)."""
    match b:
        case G.BConst(value=v):
            return repr(bool(v))
        case G.BRel(op=op, lhs=l, rhs=r):
            return f"({c_source(l, bound, span)} {_REL[op]} {c_source(r, bound, span)})"
        case G.BLog(op=op, lhs=l, rhs=r):
            return f"({b_source(l, bound, span)} {op} {b_source(r, bound, span)})"
        case G.BNot(arg=a):
            return f"(not {b_source(a, bound, span)})"
        case _:
            assert_never(b)


# Compiled closures are pure functions of σ (and a shape): one per source text, shared
# by every statement that has it (a kernel repeats its windows and bounds many times).
_COMPILED: dict[str, Callable[[Env], Any]] = {}
_WINDOWS: dict[str, Window] = {}


def _compile(src: str) -> Callable[[Env], Any]:
    fn = _COMPILED.get(src)
    if fn is None:
        # generated from an AST
        fn = _COMPILED[src] = eval(f"lambda e: {src}", _GLOBALS)  # noqa: S307
    return fn


def compile_c(c: G.CExpr, bound: frozenset[str], span: Span = NO_SPAN) -> CFn:
    return _compile(c_source(c, bound, span))


def compile_b(b: G.BExpr, bound: frozenset[str], span: Span = NO_SPAN) -> BFn:
    return _compile(b_source(b, bound, span))


def compile_window(acc: A.Access, bound: frozenset[str], span: Span) -> Window:
    """E#-Acc with W-Point / W-Range / W-Tuple: a function (env, shape) -> a tuple of
    ints (every coordinate a point: `.points`) or, for a box, the pair (index of ints
    and slices, key: a (lo, hi) pair per dimension); None when the window leaves
    [0, shape) (the caller then grows or traps, using `.raw`, which returns the index
    unchecked). `None` interval bounds (`x[:, 0]`) read the variable's shape."""
    parts, keys, tests, points = [], [], [], True
    for d, w in enumerate(acc.coords):
        match w:
            case G.WPoint(index=c):
                parts.append(f"(_{d} := {c_source(c, bound, span)})")
                keys.append(f"(_{d}, _{d} + 1)")
                tests.append(f"0 <= _{d} < s[{d}]")
            case G.WInterval(lo=lo, hi=hi):
                points = False
                lo_s = "0" if lo is None else c_source(lo, bound, span)
                hi_s = f"s[{d}]" if hi is None else c_source(hi, bound, span)
                parts.append(f"slice((_{d} := {lo_s}), (_h{d} := {hi_s}))")
                keys.append(f"(_{d}, _h{d})")
                tests.append(f"0 <= _{d} and _h{d} <= s[{d}]")
            case _:
                assert_never(w)
    tup = "(" + "".join(p + ", " for p in parts) + ")"
    key = "(" + "".join(k + ", " for k in keys) + ")"
    test = " and ".join(tests) or "True"
    out = "_t" if points else f"(_t, {key})"
    src = (f"lambda e, s: ({out} if ({test}) else None) "
           f"if ((_t := {tup}) or True) else 0")
    cached = _WINDOWS.get(src)
    if cached is not None:
        return cached
    env = {**_GLOBALS, "slice": slice}
    fn: Window = eval(src, env)  # noqa: S307 - generated from an AST
    fn.raw = eval(f"lambda e, s: {tup}", env)  # noqa: S307
    fn.points = points
    fn.ndim = len(acc.coords)
    _WINDOWS[src] = fn
    return fn


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
