"""CPU code: F ⊢ V; cexp -->c V'; cexp' (seed 002, 6.2, l.622-698), one clause per
rule, and the atoms' V; catm -->a v.

Conventions: F -> `defs` (the kernels and functions KERN-DEF and FUNC-DEF collected),
V = V1, .., Vm -> `stack` (a tuple of dicts, V1 first: lookup takes the leftmost
binding, CPU-LET-VAL binds in V1), a CPU value (v1, .., vn) -> a `CTuple` of literals
(`ast.is_value`).

Note (errata.md, L1): CPU-LET-EXP steps the right-hand side, V; rhs -->c V'; rhs', and
keeps V, so a `let` inside a right-hand side (a function body, after CPU-FUNC-APP)
binds into a V' that the next step has lost. `paper` does that; `fixed` evaluates the
right-hand side in its own environment (`Scoped`: a fresh V1 over the let's V), kept
from step to step and dropped when the value is bound: lexical scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import Bool, Value, show_value
from gpusem.calculus.span import Span
from gpusem.interpreter.lambdacu.gpu import prim_value
from gpusem.interpreter.lambdacu.kernel import run_kernel
from gpusem.interpreter.lambdacu.rules import Run, stuck

Stack = tuple[dict[str, Value], ...]


@dataclass(frozen=True)
class Defs:
    """F: the program's kernels and functions by name."""

    kernels: dict[str, ast.Kernel]
    functions: dict[str, ast.Function]


@dataclass(frozen=True)
class Scoped:
    """A let's right-hand side under evaluation with the environment its own steps
    made (`fixed` only, L1)."""

    stack: Stack
    exp: Expr


@dataclass(frozen=True)
class Let:
    """`let (x..) = rhs in body` once its right-hand side has stepped."""

    names: tuple[str, ...]
    rhs: Expr
    body: ast.CExp
    span: Span


Expr = Union[ast.CExp, Scoped, Let]


def lookup(stack: Stack, name: str) -> Value | None:
    for frame in stack:
        if name in frame:
            return frame[name]
    return None


def atom(run: Run, stack: Stack, a: ast.Atom, rule: str) -> Value:
    """V; catm -->a v."""
    if isinstance(a, ast.Lit):  # CPU-ATM-VAL
        run.fire("CPU-ATM-VAL", a.span)
        return a.value
    v = lookup(stack, a.name)  # CPU-ATM-VAR
    if v is None:
        raise stuck(rule, a.span, f"unbound variable {a.name}")
    run.fire("CPU-ATM-VAR", a.span)
    return v


def value_exp(values: tuple[Value, ...], span: Span) -> ast.CTuple:
    """(v1, .., vn) as an expression; a kernel's tuple results are flattened."""
    flat: list[Value] = []
    for v in values:
        flat.extend(v if isinstance(v, tuple) else (v,))
    return ast.CTuple(tuple(ast.Lit(v, span) for v in flat  # type: ignore[arg-type]
                            ), span)


def values_of(e: ast.CTuple) -> tuple[Value, ...]:
    return tuple(a.value for a in e.atoms if isinstance(a, ast.Lit))


def is_value(e: Expr) -> bool:
    return isinstance(e, ast.CTuple) and ast.is_value(e)


def step_c(run: Run, defs: Defs, stack: Stack, e: Expr) -> tuple[Stack, Expr]:
    """One step of -->c."""
    if isinstance(e, Scoped):
        inner, exp = step_c(run, defs, e.stack, e.exp)
        return stack, Scoped(inner, exp)
    if isinstance(e, (ast.CLet, Let)):
        return _let(run, defs, stack, e)
    args = tuple(atom(run, stack, a, _rule_of(e)) for a in _atoms_of(e))
    match e:
        case ast.CIf(_, then, else_):
            if args[0] == Bool(True):  # CPU-IF-TRUE
                run.fire("CPU-IF-TRUE", e.span)
                return stack, then
            if args[0] == Bool(False):  # CPU-IF-FALSE
                run.fire("CPU-IF-FALSE", e.span)
                return stack, else_
            raise stuck("CPU-IF-TRUE", e.span, "condition is not a bool")
        case ast.CCall(fn, _):  # CPU-FUNC-APP
            f = defs.functions.get(fn)
            if f is None or len(f.params) != len(args):
                raise stuck("CPU-FUNC-APP", e.span, f"no function {fn} of "
                            f"{len(args)} parameters")
            run.fire("CPU-FUNC-APP", e.span)
            return stack, subst(f.body, {p.name: v for p, v in zip(f.params, args)})
        case ast.CPrim(op, _):  # CPU-PRIM
            out = prim_value("CPU-PRIM", e, op, args, "the CPU")
            run.fire("CPU-PRIM", e.span)
            return stack, value_exp((out,), e.span)
        case ast.CTuple():  # CPU-TUPLE
            run.fire("CPU-TUPLE", e.span)
            return stack, value_exp(args, e.span)
        case ast.CRun(name, _):  # CPU-RUN
            k = defs.kernels.get(name)
            if k is None or len(k.params) != len(args):
                raise stuck("CPU-RUN", e.span, f"no kernel {name} of {len(args)} "
                            "parameters")
            results = run_kernel(run, k, args)
            run.fire("CPU-RUN", e.span)
            return (), value_exp(results, e.span)  # the rule's ∅
        case ast.CCmd(cmd, _):  # CPU-CMD (ours, L8)
            if not run.rules.cpu_cmd:
                raise stuck("CPU-CMD", e.span, f"no rule for the command {cmd} "
                            "(errata L8)")
            run.printed.append(" ".join(show_value(v) for v in args))
            run.fire("CPU-CMD", e.span)
            return stack, ast.CTuple((), e.span)
    raise AssertionError(f"no CPU rule for {type(e).__name__}")


def _atoms_of(e: Expr) -> tuple[ast.Atom, ...]:
    if isinstance(e, ast.CIf):
        return (e.cond,)
    if isinstance(e, (ast.CCall, ast.CPrim, ast.CRun, ast.CCmd)):
        return e.args
    if isinstance(e, ast.CTuple):
        return e.atoms
    return ()


def _rule_of(e: Expr) -> str:
    names = {ast.CIf: "CPU-IF-TRUE", ast.CCall: "CPU-FUNC-APP", ast.CPrim: "CPU-PRIM",
             ast.CTuple: "CPU-TUPLE", ast.CRun: "CPU-RUN", ast.CCmd: "CPU-CMD"}
    return names.get(type(e), "CPU-TUPLE")


def _let(run: Run, defs: Defs, stack: Stack, e: ast.CLet | Let) -> tuple[Stack, Expr]:
    """CPU-LET-VAL when the right-hand side steps to a value, else CPU-LET-EXP."""
    rhs: Expr = e.rhs
    if run.rules.let_exp_keeps_rhs_env:
        inner = rhs.stack if isinstance(rhs, Scoped) else ({},) + stack
        rhs = rhs.exp if isinstance(rhs, Scoped) else rhs
    else:
        inner = stack
    after, rhs2 = step_c(run, defs, inner, rhs)
    if isinstance(rhs2, ast.CTuple) and ast.is_value(rhs2):  # CPU-LET-VAL
        values = values_of(rhs2)
        if len(values) != len(e.names):
            raise stuck("CPU-LET-VAL", e.span, f"let binds {len(e.names)} names, the "
                        f"right-hand side is a tuple of {len(values)}")
        run.fire("CPU-LET-VAL", e.span)
        first = {**(stack[0] if stack else {}), **dict(zip(e.names, values))}
        return (first,) + stack[1:], e.body
    run.fire("CPU-LET-EXP", e.span)  # CPU-LET-EXP: V' is dropped as printed (L1)
    kept: Expr = Scoped(after, rhs2) if run.rules.let_exp_keeps_rhs_env else rhs2
    return stack, Let(e.names, kept, e.body, e.span)


def subst(e: ast.CExp, env: dict[str, Value]) -> ast.CExp:
    """[x1, .., xn := v1, .., vn]cexp (CPU-FUNC-APP), stopping under a let that
    rebinds a name."""
    if not env:
        return e

    def a(x: ast.Atom) -> ast.Atom:
        if isinstance(x, ast.Var) and x.name in env:
            v = env[x.name]
            assert not isinstance(v, tuple)  # CPU atoms bind scalars and arrays
            return ast.Lit(v, x.span)
        return x

    def s(xs: tuple[ast.Atom, ...]) -> tuple[ast.Atom, ...]:
        return tuple(a(x) for x in xs)

    match e:
        case ast.CLet(names, rhs, body, span):
            inner = {k: v for k, v in env.items() if k not in names}
            return ast.CLet(names, subst(rhs, env), subst(body, inner), span)
        case ast.CIf(cond, then, else_, span):
            return ast.CIf(a(cond), subst(then, env), subst(else_, env), span)
        case ast.CCall(fn, args, span):
            return ast.CCall(fn, s(args), span)
        case ast.CPrim(op, args, span):
            return ast.CPrim(op, s(args), span)
        case ast.CTuple(atoms, span):
            return ast.CTuple(s(atoms), span)
        case ast.CRun(k, args, span):
            return ast.CRun(k, s(args), span)
        case ast.CCmd(c, args, span):
            return ast.CCmd(c, s(args), span)
    raise AssertionError(type(e).__name__)
