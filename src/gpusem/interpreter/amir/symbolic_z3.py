"""The arithmetic side conditions of the all-sizes proof (proofs_notes/symbolic_sizes.md,
issue 27 part 1), as z3 queries over the symbolic sizes and the loop variables that
enclose an access: the AMIR control expressions read into z3 integers, each access's
context (its enclosing loops' ranges, its enclosing guards), and the two judgments the
proof needs from them: every window of a procedure argument is in bounds for every
size, and two tasks never touch a cell one of them writes.

Soundness direction: a query answers "proved" only on `unsat` of its negation; `sat`
or `unknown` (the resource budget spent, non-linear arithmetic) is "not proved",
never a refutation.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import z3
from gpusem.calculus.amir import ast as A
from gpusem.calculus.gpuir import ast as G

# z3 resource units per query (a count of the solver's own steps), not wall-clock
# time: a proof's verdict must not depend on the machine's load (the race analysis's
# reason, typing_rules/bundl/race.py). ~5 s of an idle core; the queries of every
# example take a few thousand units.
RLIMIT_QUERY = 5_000_000
Ctx = tuple[tuple[A.Loop | A.Guard, ...], A.AStmt]   # enclosing loops/guards, stmt


def cz3(c: G.CExpr, env: Mapping[str, Any]) -> Any:
    """A control expression as a z3 integer term; `/` and `%` of GPU IR are floor
    division and its remainder on the non-negative values the front end admits, which
    z3's `/` and `%` are for a positive constant divisor. A variable not in `env`
    raises KeyError (the caller names it)."""
    match c:
        case G.CInt(value=v):
            return z3.IntVal(v)
        case G.CVar(name=n):
            return env[n]
        case G.CBin(op=op, lhs=lhs, rhs=rhs):
            a, b = cz3(lhs, env), cz3(rhs, env)
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            if op == "/":
                return a / b
            if op == "%":
                return a % b
    raise ValueError(f"unsupported control expression: {c!r}")


_REL = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def bz3(b: G.BExpr, env: Mapping[str, Any]) -> Any:
    match b:
        case G.BConst(value=v):
            return z3.BoolVal(v)
        case G.BRel(op=op, lhs=lhs, rhs=rhs) if op in _REL:
            return _REL[op](cz3(lhs, env), cz3(rhs, env))
        case G.BLog(op=op, lhs=lhs, rhs=rhs):
            return (z3.And if op == "and" else z3.Or)(bz3(lhs, env), bz3(rhs, env))
        case G.BNot(arg=arg):
            return z3.Not(bz3(arg, env))
    raise ValueError(f"unsupported condition: {b!r}")


def contexts(body: tuple[A.AStmt, ...],
             outer: tuple[A.Loop | A.Guard, ...] = ()) -> Iterator[Ctx]:
    """Every statement with the loops and guards around it (outermost first)."""
    for s in body:
        yield outer, s
        if isinstance(s, (A.Loop, A.Guard)):
            yield from contexts(s.body, (*outer, s))


def access_of(s: A.AStmt) -> A.Access | None:
    acc = getattr(s, "access", None)
    return acc if isinstance(acc, A.Access) else None


@dataclass
class Space:
    """The symbolic sizes and their preconditions, and fresh copies of loop variables
    (one copy per side of a two-access query)."""

    sizes: dict[str, Any]
    pre: list[Any]

    def frame(self, outer: Sequence[A.Loop | A.Guard],
              tag: str) -> tuple[dict[str, Any], list[Any]]:
        """z3 variables for the loops of `outer` (named `var#tag`) and the facts that
        hold where a statement under them runs: lo <= v < hi, every guard true."""
        env: dict[str, Any] = dict(self.sizes)
        facts: list[Any] = []
        for o in outer:
            if isinstance(o, A.Loop):
                v = z3.Int(f"{o.var}#{tag}")
                facts += [cz3(o.lo, env) <= v, v < cz3(o.hi, env)]
                env[o.var] = v
            else:
                facts.append(bz3(o.cond, env))
        return env, facts

    def valid(self, facts: Sequence[Any], goal: Any) -> bool:
        """Does `goal` follow from the preconditions and `facts`? (unsat of the
        negation; unknown is no.)"""
        s = z3.Solver()
        s.set("rlimit", RLIMIT_QUERY)
        s.add(*self.pre, *facts, z3.Not(goal))
        return bool(s.check() == z3.unsat)


def coords_z3(acc: A.Access, env: Mapping[str, Any],
              extents: Sequence[Any]) -> list[tuple[Any, Any]]:
    """Each coordinate of a window as a half-open interval [lo, hi) of z3 terms."""
    out = []
    for c, n in zip(acc.coords, extents):
        if isinstance(c, G.WPoint):
            i = cz3(c.index, env)
            out.append((i, i + 1))
        else:
            assert isinstance(c, G.WInterval)
            lo = z3.IntVal(0) if c.lo is None else cz3(c.lo, env)
            hi = n if c.hi is None else cz3(c.hi, env)
            out.append((lo, hi))
    return out


def in_bounds(space: Space, outer: Sequence[A.Loop | A.Guard], acc: A.Access,
              shape: Sequence[G.CExpr]) -> bool:
    """For every size and every value of the enclosing loops, the window lies in
    [0, extent) in each dimension. As the machine's bounds check (amir/state.py
    check_bounds), an empty interval still traps when its start is negative or past
    the extent, so there is no exemption for empty windows."""
    env, facts = space.frame(outer, "a")
    extents = [cz3(n, space.sizes) for n in shape]
    if len(acc.coords) != len(extents):
        return False
    box = coords_z3(acc, env, extents)
    inside = z3.And(*[z3.And(0 <= lo, z3.If(hi > lo, hi, lo) <= n)
                      for (lo, hi), n in zip(box, extents)])
    return space.valid(facts, inside)


def tasks_disjoint(space: Space, tvars: Sequence[str],
                   a: tuple[Sequence[A.Loop | A.Guard], A.Access],
                   b: tuple[Sequence[A.Loop | A.Guard], A.Access],
                   shape: Sequence[G.CExpr]) -> bool:
    """Two different tasks never meet on a cell through accesses a and b (precondition
    (P4) of proofs_notes/fast_checker.md for every size at once)."""
    env1, f1 = space.frame(a[0], "1")
    env2, f2 = space.frame(b[0], "2")
    extents = [cz3(n, space.sizes) for n in shape]
    box1 = coords_z3(a[1], env1, extents)
    box2 = coords_z3(b[1], env2, extents)
    differ = z3.Or(*[env1[t] != env2[t] for t in tvars])
    meet = z3.And(*[z3.And(l1 < h1, l2 < h2, l1 < h2, l2 < h1)
                    for (l1, h1), (l2, h2) in zip(box1, box2)])
    return space.valid([*f1, *f2, differ], z3.Not(meet))


def constant_on(space: Space, outer: Sequence[A.Loop | A.Guard], var: str,
                cond: G.BExpr) -> bool | None:
    """Is the guard `cond` the same for every value of the loop variable `var` (its
    innermost enclosing loop in `outer`) at fixed values of everything else? Returns
    its constant truth value, or None when it is not provably constant."""
    del var                   # constant everywhere under `outer`: a stronger claim
    env, facts = space.frame(outer, "a")
    if space.valid(facts, bz3(cond, env)):
        return True
    if space.valid(facts, z3.Not(bz3(cond, env))):
        return False
    return None


def mentions(x: object) -> set[str]:
    """The control variables anywhere under an AMIR/GPU IR node (spans skipped)."""
    out: set[str] = set()
    stack = [x]
    while stack:
        y = stack.pop()
        if isinstance(y, G.CVar):
            out.add(y.name)
        elif isinstance(y, (tuple, list)):
            stack.extend(y)
        elif hasattr(y, "__dataclass_fields__") and not isinstance(y, type):
            stack.extend(getattr(y, f) for f in y.__dataclass_fields__
                         if f not in ("span", "origin"))
    return out
