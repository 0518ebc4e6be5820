"""⊢ prog ok: the well-formedness lambda-cu's rules presuppose (seed 002, Sections
5-6), which the paper states in words or leaves to its examples; one named rule each.

| rule             | what it requires                                    | from       |
|------------------|-----------------------------------------------------|------------|
| WF-Main          | a function main() without parameters                | EVAL-MAIN  |
| WF-Scope         | every name bound where it is read; kernels closed   | 6.2 (V(x)) |
| WF-SoacArity     | the thunks / operator tuple / size each SOAC takes  | 5.3, 6.2   |
| WF-SoacArgKind   | a thunk where a thunk goes, operators where they go | 5.3        |
| WF-Size          | the size is an int (ONCE has none)                  | 6.2        |
| WF-ThunkParams   | index thunks take one index (ONCE: none or one);    | IDX-THUNK  |
|                  | a predicate takes one parameter per component       |            |
| WF-ThunkResult   | a thunk returns base values (no arrays)             | 5.4, 6.1 τ |
| WF-Using         | `using` lists every variable the body reads; each   | 5.4, 9.2   |
|                  | is bound in the kernel                              |            |
| WF-PermuteIndex  | PERMUTE's second thunk returns one int              | SOAC-PERM. |
| WF-Predicate     | FILTER's / PARTITION's predicate returns one bool   | SOAC-FILT. |
| WF-RopCount      | one reduction operator per component                | SOAC-RED.  |
| WF-RopType       | each operator folds its component's type; `id`     | 5.3        |
|                  | (no monoid) only in REDUCE and SCAN, which are the  |            |
|                  | SOACs that take operators                           |            |
| WF-NoCallInKernel| kernels neither run kernels nor call functions      | 5.2        |
| WF-Prim          | a known primitive, on the types it takes            | *-PRIM     |
| WF-GpuAtom       | thread code has no array literals (gatm ::= x | b)  | 5.4        |
| WF-If            | a bool condition, both branches of one type         | *-IF-*     |
| WF-LetArity      | a let binds as many names as values                 | *-LET-*    |
| WF-Subscript     | xs[x]: an array and an int                          | GPU-SUBSC. |
| WF-Call          | a defined function / kernel, arguments of its types | *-FUNC-APP |
| WF-Ret           | a definition returns its declared type              | KERN-RET   |

`check_program` returns `Checked` (the element types of every SOAC application, which
the interpreter needs for an empty array) or raises the first `IllTyped`;
`all_errors` lists every definition's first error (STYLE 12).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from gpusem.calculus.errors import IllTyped
from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.signatures import (
    ARRAY_PRIMS,
    PRIMS,
    ROP_TYPES,
    prim_result,
)
from gpusem.calculus.lambdacu.values import (
    BOOL,
    INT,
    UNIT,
    Arr,
    ArrayT,
    Base,
    Type,
    show_type,
    tuple_type,
    type_items,
    type_of,
)
from gpusem.calculus.span import Span

TEnv = dict[str, Type]
Bases = tuple[Base, ...]


@dataclass(frozen=True)
class Checked:
    program: ast.Program
    elems: dict[int, tuple[str, ...]]  # id(SoacApp) -> its thunk's component types


def fail(rule: str, span: Span, message: str) -> IllTyped:
    return IllTyped(message, rule=rule, span=span)


def check_program(p: ast.Program) -> Checked:
    """⊢ prog ok, or the first IllTyped."""
    errors, checked = all_errors(p)
    if errors:
        raise errors[0]
    return checked


def all_errors(p: ast.Program) -> tuple[list[IllTyped], Checked]:
    """Every definition's first error (empty: well-formed)."""
    cx = _Cx(p)
    errors: list[IllTyped] = []
    for k in p.kernels:
        try:
            cx.kernel(k)
        except IllTyped as e:
            errors.append(e)
    for f in p.functions:
        try:
            cx.function(f)
        except IllTyped as e:
            errors.append(e)
    main = p.function("main")
    if main is None or main.params:
        errors.append(fail("WF-Main", main.span if main else p.span,
                           "no main: a program needs function main() (EVAL-MAIN)"))
    return errors, Checked(p, cx.elems)


class _Cx:
    def __init__(self, p: ast.Program) -> None:
        self.p = p
        self.elems: dict[int, tuple[str, ...]] = {}

    # definitions -------------------------------------------------------------
    def kernel(self, k: ast.Kernel) -> None:
        env: TEnv = {x.name: x.type for x in k.params}
        got = self.kexp(env, k.body)
        if got != k.ret:
            where = k.body.span if isinstance(k.body, ast.KRet) else k.span
            raise fail("WF-Ret", where, f"return type mismatch: kernel {k.name} "
                       f"returns {show_type(got)}, declared {show_type(k.ret)}")

    def function(self, f: ast.Function) -> None:
        env: TEnv = {x.name: x.type for x in f.params}
        got = self.cexp(env, f.body)
        if got != f.ret:
            raise fail("WF-Ret", f.span, f"return type mismatch: function {f.name} "
                       f"returns {show_type(got)}, declared {show_type(f.ret)}")

    def kexp(self, env: TEnv, e: ast.KExp) -> Type:
        while isinstance(e, ast.KLet):
            outs = self.soac(env, e.app)
            if len(outs) != len(e.names):
                raise fail("WF-LetArity", e.span, f"let arity: {len(e.names)} names "
                           f"for the {len(outs)} results of {e.app.soac}")
            env = {**env, **dict(zip(e.names, outs))}
            e = e.body
        for x in e.names:
            if x not in env:
                raise fail("WF-Scope", e.span, f"unbound variable: {x}")
        return tuple_type(tuple(env[x] for x in e.names))

    # SOACs -------------------------------------------------------------------
    def soac(self, env: TEnv, app: ast.SoacApp) -> tuple[Type, ...]:
        shape = {"ONCE": "t", "MAP": "t", "PERMUTE": "tt", "REDUCE": "tr", "SCAN": "tr",
                 "FILTER": "tt", "PARTITION": "tt"}[app.soac]
        if len(app.args) != len(shape):
            raise fail("WF-SoacArity", app.span, f"soac arity: {app.soac} takes "
                       f"{_shape_words(shape)}, got {len(app.args)} arguments")
        for arg, want in zip(app.args, shape):
            if isinstance(arg, ast.Rops) != (want == "r"):
                what = "a tuple of reduction operators" if want == "r" else "a thunk"
                raise fail("WF-SoacArgKind", arg.span, f"argument kind: {app.soac} "
                           f"takes {what} here")
        self.size(env, app)
        t1 = app.args[0]
        assert isinstance(t1, ast.Thunk)
        rows = self.thunk(env, t1, (INT,), app.soac == "ONCE")
        self.elems[id(app)] = tuple(b.name for b in rows)
        if app.soac == "ONCE":
            return rows
        if app.soac in ("REDUCE", "SCAN"):
            rops = app.args[1]
            assert isinstance(rops, ast.Rops)
            return self.rops(app, rops, rows)
        if app.soac == "MAP":
            return tuple(ArrayT(b.name) for b in rows)
        t2 = app.args[1]
        assert isinstance(t2, ast.Thunk)
        if app.soac == "PERMUTE":
            if self.thunk(env, t2, (INT,), False) != (INT,):
                raise fail("WF-PermuteIndex", t2.span, "permute index: the second "
                           "thunk must return one int")
            return tuple(ArrayT(b.name) for b in rows)
        if self.thunk(env, t2, rows, False) != (BOOL,):
            raise fail("WF-Predicate", t2.span, f"predicate: {app.soac}'s second "
                       "thunk must return one bool")
        arrays = tuple(ArrayT(b.name) for b in rows)
        return arrays * (2 if app.soac == "PARTITION" else 1)

    def size(self, env: TEnv, app: ast.SoacApp) -> None:
        s = app.size
        if app.soac == "ONCE" or s is None:
            if (app.soac == "ONCE") != (s is None):
                raise fail("WF-Size", app.span, "size: ONCE takes no size, every other "
                           "SOAC one")
            return
        if isinstance(s, ast.Len):
            if not isinstance(env.get(s.name), ArrayT):
                raise fail("WF-Size", s.span, f"size: #{s.name} of a non-array")
            return
        if self.atom(env, s, cpu=False) != INT:
            raise fail("WF-Size", s.span, "size: the size must be an int")

    def rops(self, app: ast.SoacApp, rops: ast.Rops, rows: Bases) -> tuple[Type, ...]:
        if len(rops.ops) != len(rows):
            raise fail("WF-RopCount", rops.span, f"operator count: {len(rops.ops)} "
                       f"reduction operators for {len(rows)} components")
        out: list[Type] = []
        for op, row in zip(rops.ops, rows):
            if op == "id":
                out.append(ArrayT(row.name))
                continue
            if ROP_TYPES[op][0] != row:
                raise fail("WF-RopType", rops.span, f"operator type: {op} folds "
                           f"{ROP_TYPES[op][0].name}, the component is {row.name}")
            out.append(row if app.soac == "REDUCE" else ArrayT(row.name))
        return tuple(out)

    def thunk(self, env: TEnv, t: ast.Thunk, args: Bases, once: bool) -> Bases:
        ok = len(t.params) == len(args) or (once and not t.params)
        if not ok:
            raise fail("WF-ThunkParams", t.span, f"thunk parameters: {len(t.params)} "
                       f"for {len(args)} values")
        for x in t.using:
            if x not in env:
                raise fail("WF-Using", t.span, f"using: {x} is not bound in the "
                           "kernel")
        inner: TEnv = {x: env[x] for x in t.using}
        inner.update(zip(t.params, args))
        for x in sorted(free_g(t.body) - set(inner)):
            if x in env:
                raise fail("WF-Using", t.span, f"using: the thunk reads {x}, which its "
                           "using list does not capture")
            raise fail("WF-Scope", t.span, f"unbound variable: {x}")
        got = type_items(self.gexp(inner, t.body))
        if not all(isinstance(b, Base) for b in got):
            raise fail("WF-ThunkResult", t.span, "thunk result: a thunk returns base "
                       f"values, not {show_type(tuple_type(got))}")
        return tuple(b for b in got if isinstance(b, Base))

    # thread code -------------------------------------------------------------
    def gexp(self, env: TEnv, g: ast.GExp) -> Type:
        match g:
            case ast.GLet(names, rhs, body):
                got = type_items(self.gexp(env, rhs))
                if len(got) != len(names):
                    raise fail("WF-LetArity", g.span, f"let arity: {len(names)} names "
                               f"for {len(got)} values")
                return self.gexp({**env, **dict(zip(names, got))}, body)
            case ast.GIf(cond, then, else_):
                return self.if_(env, g.span, cond, self.gexp(env, then),
                                self.gexp(env, else_), cpu=False)
            case ast.GRet(atoms):
                return tuple_type(tuple(self.atom(env, a, cpu=False) for a in atoms))
            case ast.GPrim(op, args):
                return self.prim(env, g.span, op, args, cpu=False)
            case ast.GSub(array, index):
                arr = env.get(array)
                if not isinstance(arr, ArrayT):
                    raise fail("WF-Subscript", g.span, f"subscript: {array} is not an "
                               "array")
                if self.atom(env, index, cpu=False) != INT:
                    raise fail("WF-Subscript", g.span, "subscript: the index must be "
                               "an int")
                return Base(arr.elem)
            case ast.GAtom(atom):
                return self.atom(env, atom, cpu=False)
            case _:
                assert_never(g)

    def if_(self, env: TEnv, span: Span, cond: ast.Atom, then: Type, else_: Type,
            cpu: bool) -> Type:
        if self.atom(env, cond, cpu) != BOOL:
            raise fail("WF-If", span, "if: the condition must be a bool")
        if then != else_:
            raise fail("WF-If", span, f"if: the branches differ: {show_type(then)} "
                       f"and {show_type(else_)}")
        return then

    def prim(self, env: TEnv, span: Span, op: str, args: tuple[ast.Atom, ...],
             cpu: bool) -> Type:
        if not cpu and (self.p.kernel(op) or self.p.function(op)):
            raise fail("WF-NoCallInKernel", span, f"call in a kernel: {op} is a "
                       "kernel or function; kernel bodies cannot run kernels or call "
                       "CPU functions (5.2)")
        types = tuple(self.atom(env, a, cpu) for a in args)
        if op in ARRAY_PRIMS and len(types) == 1 and isinstance(types[0], ArrayT):
            return INT
        if op not in PRIMS and op not in ARRAY_PRIMS:
            raise fail("WF-Prim", span, f"unknown primitive: {op}")
        bases = tuple(t for t in types if isinstance(t, Base))
        result = prim_result(op, bases) if len(bases) == len(types) else None
        if result is None:
            shown = ", ".join(show_type(t) for t in types)
            raise fail("WF-Prim", span, f"primitive type: no {op} on ({shown})")
        return result

    def atom(self, env: TEnv, a: ast.Atom, cpu: bool) -> Type:
        if isinstance(a, ast.Lit):
            if isinstance(a.value, Arr) and not cpu:
                raise fail("WF-GpuAtom", a.span, "array literal in thread code "
                           "(gatm ::= x | b)")
            return type_of(a.value)
        if a.name not in env:
            raise fail("WF-Scope", a.span, f"unbound variable: {a.name}")
        return env[a.name]

    # CPU code ----------------------------------------------------------------
    def cexp(self, env: TEnv, e: ast.CExp) -> Type:
        match e:
            case ast.CLet(names, rhs, body):
                got = type_items(self.cexp(env, rhs))
                if len(got) != len(names):
                    raise fail("WF-LetArity", e.span, f"let arity: {len(names)} names "
                               f"for {len(got)} values")
                return self.cexp({**env, **dict(zip(names, got))}, body)
            case ast.CIf(cond, then, else_):
                return self.if_(env, e.span, cond, self.cexp(env, then),
                                self.cexp(env, else_), cpu=True)
            case ast.CCall(fn, args):
                f = self.p.function(fn)
                if f is None:
                    raise fail("WF-Call", e.span, f"unknown function: {fn}")
                self.args(env, e.span, fn, f.params, args)
                return f.ret
            case ast.CRun(name, args):
                k = self.p.kernel(name)
                if k is None:
                    raise fail("WF-Call", e.span, f"unknown kernel: {name}")
                self.args(env, e.span, name, k.params, args)
                return k.ret
            case ast.CPrim(op, args):
                return self.prim(env, e.span, op, args, cpu=True)
            case ast.CTuple(atoms):
                return tuple_type(tuple(self.atom(env, a, cpu=True) for a in atoms))
            case ast.CCmd(_, args):
                for a in args:
                    self.atom(env, a, cpu=True)
                return UNIT
            case _:
                assert_never(e)

    def args(self, env: TEnv, span: Span, name: str, params: tuple[ast.Param, ...],
             args: tuple[ast.Atom, ...]) -> None:
        if len(params) != len(args):
            raise fail("WF-Call", span, f"call arity: {name} takes {len(params)} "
                       f"arguments, got {len(args)}")
        for p, a in zip(params, args):
            got = self.atom(env, a, cpu=True)
            if got != p.type:
                raise fail("WF-Call", a.span, f"argument type: {name}'s {p.name} is "
                           f"{show_type(p.type)}, got {show_type(got)}")


def _shape_words(shape: str) -> str:
    words = {"t": "a thunk", "tt": "two thunks", "tr": "a thunk and a tuple of "
             "reduction operators"}
    return words[shape]


def free_g(g: ast.GExp) -> set[str]:
    """The variables a thread expression reads and does not bind."""
    def atoms(xs: tuple[ast.Atom, ...]) -> set[str]:
        return {a.name for a in xs if isinstance(a, ast.Var)}

    match g:
        case ast.GLet(names, rhs, body):
            return free_g(rhs) | (free_g(body) - set(names))
        case ast.GIf(cond, then, else_):
            return atoms((cond,)) | free_g(then) | free_g(else_)
        case ast.GRet(xs) | ast.GPrim(_, xs):
            return atoms(xs)
        case ast.GSub(array, index):
            return {array} | atoms((index,))
        case ast.GAtom(atom):
            return atoms((atom,))
        case _:
            assert_never(g)
