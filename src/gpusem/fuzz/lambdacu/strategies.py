"""Hypothesis strategies of well-formed lambda-cu programs, valid by construction
(issue 29 step 6): every program passes the checker (typing_rules/lambdacu) and runs
under `fixed` to a value, without a trap.

How validity is kept (STYLE 17: draws follow the rules, filters beside their draw):
  - every array of one kernel has a *length class*: the kernel's array parameters share
    class 0 (length n >= 1, the same n for every kernel of a program); MAP, SCAN,
    PERMUTE and REDUCE's `id` keep the class of their size `#a`; each FILTER and
    PARTITION output opens a new class. A thunk subscripts with its index only arrays
    of its SOAC's class, so every subscript is in bounds (ONCE reads element 0 of a
    class-0 array);
  - divisors are literals 1..7 and shift counts literals 0..31 (no C undefined
    behaviour), `f2i` and `chr` are not drawn;
  - PERMUTE's index thunk is a rotation or the reversal of 0..len-1: 1:1;
  - `using` lists are computed from the body (`free_g`), so they are complete.
Choices are sampled from short lists and sizes drawn small, so hypothesis shrinks a
program by dropping SOACs, kernels and sub-expressions towards atoms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import (
    Bool,
    F32,
    I32,
)
from gpusem.typing_rules.lambdacu.wellformed import free_g
from hypothesis import strategies as st

BASES = ("int", "float", "bool")
ROPS = {"int": ("iadd", "imul", "imax", "imin", "iand", "ior", "ixor", "id"),
        "float": ("fadd", "fmul", "fmax", "fmin", "id"),
        "bool": ("band", "bor", "bxor", "id")}
# result type -> (op, argument types); divisions and shifts take a literal second
BIN = {"int": [("add", "int"), ("sub", "int"), ("mul", "int"), ("min", "int"),
               ("max", "int"), ("and", "int"), ("or", "int"), ("xor", "int"),
               ("div", "lit"), ("mod", "lit"), ("shr", "shift"), ("shl", "shift")],
       "float": [("add", "float"), ("sub", "float"), ("mul", "float"),
                 ("div", "float"), ("min", "float"), ("max", "float")],
       "bool": [("lt", "int"), ("le", "int"), ("eq", "int"), ("gt", "float"),
                ("ne", "float"), ("and", "bool"), ("or", "bool"), ("xor", "bool")]}
UN = {"int": [("neg", "int"), ("abs", "int"), ("not", "int")],
      "float": [("neg", "float"), ("abs", "float"), ("sqrt", "float"),
                ("i2f", "int")],
      "bool": [("not", "bool")]}


@dataclass
class Scope:
    """What a thunk body may read: scalars by type, arrays with their class."""

    scalars: dict[str, str]
    arrays: dict[str, tuple[str, int]]
    index: ast.Atom | None  # the index to subscript with (None: no subscripts)
    cls: int  # the length class the index ranges over
    counter: list[int] = field(default_factory=lambda: [0])

    def fresh(self, stem: str) -> str:
        self.counter[0] += 1
        return f"{stem}{self.counter[0]}"

    def with_scalars(self, more: dict[str, str]) -> Scope:
        return Scope({**self.scalars, **more}, self.arrays, self.index, self.cls,
                     self.counter)


def literal(draw: st.DrawFn, ty: str) -> ast.Lit:
    if ty == "int":
        return ast.Lit(I32(draw(st.integers(-9, 9))))
    if ty == "float":
        return ast.Lit(F32(draw(st.integers(-32, 32)) / 4))
    return ast.Lit(Bool(draw(st.booleans())))


def atom(draw: st.DrawFn, ty: str, sc: Scope) -> ast.Atom:
    names = sorted(x for x, t in sc.scalars.items() if t == ty)
    if names:
        use: bool = draw(st.booleans())
        if use:
            return ast.Var(draw(st.sampled_from(names)))
    return literal(draw, ty)


def gexp(draw: st.DrawFn, ty: str, sc: Scope, depth: int) -> ast.GExp:
    arrays = sorted(a for a, (e, c) in sc.arrays.items() if e == ty and c == sc.cls)
    kinds = ["atom"] + (["sub"] if arrays and sc.index is not None else [])
    if depth > 0:
        kinds += ["un", "bin", "bin", "if", "pair"]
    kind = draw(st.sampled_from(kinds))
    if kind == "atom":
        return ast.GAtom(atom(draw, ty, sc))
    if kind == "sub":
        assert sc.index is not None
        return ast.GSub(draw(st.sampled_from(arrays)), sc.index)
    if kind == "un":
        op, arg = draw(st.sampled_from(UN[ty]))
        return _operands(draw, op, (arg,), sc, depth)
    if kind == "bin":
        op, arg = draw(st.sampled_from(BIN[ty]))
        if arg in ("lit", "shift"):
            lo, hi = (1, 7) if arg == "lit" else (0, 31)
            x = _operands(draw, op, ("int",), sc, depth)
            assert isinstance(x, (ast.GPrim, ast.GLet))
            return _append_literal(x, ast.Lit(I32(draw(st.integers(lo, hi)))))
        return _operands(draw, op, (arg, arg), sc, depth)
    if kind == "if":
        c = sc.fresh("c")
        return ast.GLet((c,), gexp(draw, "bool", sc, depth - 1),
                        ast.GIf(ast.Var(c), gexp(draw, ty, sc, depth - 1),
                                gexp(draw, ty, sc, depth - 1)))
    a, b = sc.fresh("p"), sc.fresh("q")  # pair: GPU-LET of two values at once
    other = draw(st.sampled_from(BASES))
    rhs = ast.GRet((atom(draw, ty, sc), atom(draw, other, sc)))
    return ast.GLet((a, b), rhs, gexp(draw, ty, sc.with_scalars({a: ty, b: other}),
                                      depth - 1))


def _operands(draw: st.DrawFn, op: str, args: tuple[str, ...], sc: Scope,
              depth: int) -> ast.GExp:
    """`prim x1 .. xn`, each operand an atom or a let-bound sub-expression."""
    atoms: list[ast.Atom] = []
    binds: list[tuple[str, ast.GExp]] = []
    for ty in args:
        if draw(st.booleans()):
            atoms.append(atom(draw, ty, sc))
        else:
            x = sc.fresh("t")
            binds.append((x, gexp(draw, ty, sc, depth - 1)))
            atoms.append(ast.Var(x))
    body: ast.GExp = ast.GPrim(op, tuple(atoms))
    for x, rhs in reversed(binds):
        body = ast.GLet((x,), rhs, body)
    return body


def _append_literal(e: ast.GExp, lit: ast.Lit) -> ast.GExp:
    if isinstance(e, ast.GLet):
        return ast.GLet(e.names, e.rhs, _append_literal(e.body, lit))
    assert isinstance(e, ast.GPrim)
    return ast.GPrim(e.op, e.args + (lit,))


def thunk(params: tuple[str, ...], body: ast.GExp) -> ast.Thunk:
    return ast.Thunk(params, body, tuple(sorted(free_g(body) - set(params))))


def components(draw: st.DrawFn, sc: Scope, tys: tuple[str, ...]) -> ast.GExp:
    """A thread expression returning one value per type of `tys`."""
    if len(tys) == 1:
        return gexp(draw, tys[0], sc, draw(st.integers(0, 3)))
    names = [sc.fresh("v") for _ in tys]
    body: ast.GExp = ast.GRet(tuple(ast.Var(x) for x in names))
    for x, ty in reversed(list(zip(names, tys))):
        body = ast.GLet((x,), gexp(draw, ty, sc, draw(st.integers(0, 2))), body)
    return body
