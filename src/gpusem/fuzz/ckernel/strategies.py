"""Hypothesis strategies of well-formed CKernel programs, valid by construction, in the
manner of Csmith: each statement is drawn from a template that holds one idiom NVVM
and ptxas optimise (issue 23, item 5), typed as the rules of typing_rules/ckernel
require, so no program is rejected afterwards (the target checks that anyway: a
rejection is a finding of the generator).

Draws are local: the body is a list of templates, each built at once against the
context the earlier ones left (locals in scope, shared slots written), so hypothesis's
shrinking deletes templates and simplifies their choices without ever leaving the
well-formed programs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from gpusem.calculus.ckernel import ast as A

Draw = Callable[[Any], Any]

INTERESTING = {
    "i32": (0, 1, -1, 2, 3, 7, 100, -100, 2147483647, -2147483648, 65535, 1 << 16),
    "u32": (0, 1, 2, 3, 255, 65535, 4294967295, 2147483648),
    "i64": (0, 1, -1, 3, 1 << 32, -(1 << 40), 9223372036854775807),
    "u64": (0, 1, 3, 1 << 32, 18446744073709551615),
    "f32": (0.0, 1.0, -1.0, 0.5, 2.25, -3.75, 1024.0),
}
DIVISORS = {"i32": (2, 3, 4, 5, 7, 8, 10, 16, 1024, -2, -3, -4, -7, -8, 1, 3 * 7 * 11),
            "i64": (2, 3, 4, 7, 16, -3, -8, 1 << 33, 1000000007),
            "u32": (1, 2, 3, 4, 5, 7, 8, 10, 16, 255, 1 << 31),
            "u64": (2, 3, 8, 10, 1 << 32, 1000000007)}
INT_ARITH = ("i32", "u32", "i64", "u64")


@dataclass
class Ctx:
    """What the statements drawn so far leave in scope."""

    ro: dict[str, str]  # read-only parameters: name -> type
    written: dict[str, str]  # rw / rwr parameters
    shared: str | None
    atomics: dict[str, str]  # atomic parameter -> its one operation
    scopes: list[dict[str, str]] = field(default_factory=lambda: [{}])
    loop_vars: set[str] = field(default_factory=set)
    uniform: bool = True
    top: bool = True
    defined_slots: set[int] = field(default_factory=set)
    fresh: int = 0

    def name(self, prefix: str = "v") -> str:
        self.fresh += 1
        return f"{prefix}{self.fresh}"

    def locals_of(self, ty: str, assignable: bool = False) -> list[str]:
        return sorted(n for s in self.scopes for n, t in s.items() if t == ty
                      and not (assignable and n in self.loop_vars))

    def declare(self, name: str, ty: str) -> None:
        self.scopes[-1][name] = ty


def _lit(draw: Draw, ty: str) -> A.Lit:
    if ty == "f32":
        return A.Lit(ty, draw(st.sampled_from(INTERESTING["f32"])))
    if ty in ("i16", "u16"):
        return A.Lit(ty, draw(st.sampled_from((0, 1, 7, 255))))
    return A.Lit(ty, draw(st.sampled_from(INTERESTING[ty])))


def _ro_index(draw: Draw, ctx: Ctx) -> A.Own | A.Masked:
    if draw(st.booleans()):
        return A.Own(draw(st.integers(0, A.CELLS - 1)))
    return A.Masked(expr(draw, ctx, draw(st.sampled_from(("i32", "u32"))), 1))


def load(draw: Draw, ctx: Ctx, ty: str) -> A.Expr | None:
    """A load of type `ty` (or a cast of one) from a parameter or the shared array."""
    ro = [n for n, t in ctx.ro.items() if t == ty]
    wr = [n for n, t in ctx.written.items() if t == ty]
    choices = [("ro", n) for n in ro] + [("wr", n) for n in wr]
    if ctx.shared and ty == "i32" and ctx.defined_slots:
        choices.append(("sh", ctx.shared))
    if not choices:
        return None
    kind, buf = draw(st.sampled_from(choices))
    if kind == "ro":
        return A.Load(buf, _ro_index(draw, ctx), draw(st.booleans()), ty)
    if kind == "sh":
        return A.Load(buf, A.Own(draw(st.sampled_from(sorted(ctx.defined_slots)))),
                      False, ty)
    return A.Load(buf, A.Own(draw(st.integers(0, A.CELLS - 1))), False, ty)


def leaf(draw: Draw, ctx: Ctx, ty: str) -> A.Expr:
    # data over constants: a literal operand is what the compiler folds away
    options = ["lit", "var", "var", "builtin", "load", "load"]
    match draw(st.sampled_from(options)):
        case "var":
            names = ctx.locals_of(ty)
            if names:
                return A.Var(draw(st.sampled_from(names)), ty)
        case "builtin" if ty != "f32":
            b = A.Builtin(draw(st.sampled_from(A.BUILTINS)))
            return b if ty == "i32" else A.Cast(ty, b)
        case "load":
            got = load(draw, ctx, ty)
            if got is not None:
                return got
            narrow = [n for n, t in {**ctx.ro, **ctx.written}.items()
                      if t in ("i16", "u16") and ty not in ("i64", "u64", "f32")]
            if narrow:
                n = draw(st.sampled_from(narrow))
                src = ctx.ro.get(n) or ctx.written[n]
                idx = (_ro_index(draw, ctx) if n in ctx.ro
                       else A.Own(draw(st.integers(0, A.CELLS - 1))))
                return A.Cast(ty, A.Load(n, idx, False, src))  # the C promotion
    return _lit(draw, ty)


def expr(draw: Draw, ctx: Ctx, ty: str, depth: int = 2) -> A.Expr:
    """An expression of type `ty` (i32 u32 i64 u64 f32), at most `depth` deep."""
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        return leaf(draw, ctx, ty)
    sub = depth - 1
    kinds = ["arith", "arith", "compare", "select", "cast", "minmax"]
    if ty != "f32":
        kinds += ["div", "shift", "bits"]
    if ty in ("i32", "i64"):
        kinds.append("abs")
    if ctx.uniform:
        kinds.append("shfl")
    match draw(st.sampled_from(kinds)):
        case "arith":
            ops = ("+", "-", "*") if ty == "f32" else ("+", "-", "*", "&", "|", "^")
            return A.Binary(draw(st.sampled_from(ops)), expr(draw, ctx, ty, sub),
                            expr(draw, ctx, ty, sub), ty)
        case "minmax":
            return A.Binary(draw(st.sampled_from(("min", "max"))),
                            expr(draw, ctx, ty, sub), expr(draw, ctx, ty, sub), ty)
        case "compare" if ty == "i32":
            ot = draw(st.sampled_from(A.ARITH_TYPES))
            return A.Binary(draw(st.sampled_from(A.BIN_COMPARE)),
                            expr(draw, ctx, ot, sub), expr(draw, ctx, ot, sub), ty)
        case "select":  # C evaluates one arm only: no shuffle in either
            cond = expr(draw, ctx, "i32", sub)
            uniform, ctx.uniform = ctx.uniform, False
            a, b = expr(draw, ctx, ty, sub), expr(draw, ctx, ty, sub)
            ctx.uniform = uniform
            return A.Select(cond, a, b, ty)
        case "cast":
            src = draw(st.sampled_from(("i32", "u32", "i16", "u16") if ty == "f32"
                                       else ("i32", "u32", "i64", "u64", "i16", "u16")))
            if src in ("i16", "u16"):  # a narrowing, then C's promotion back
                inner: A.Expr = A.Cast(src, expr(draw, ctx, "i32", sub))
            else:
                inner = expr(draw, ctx, src, sub)
            return A.Cast(ty, inner)
        case "div":
            return A.DivC(draw(st.sampled_from(("/", "%"))), expr(draw, ctx, ty, sub),
                          draw(st.sampled_from(DIVISORS[_div_key(ty)])), ty)
        case "shift":
            amount = (A.Lit(ty, draw(st.integers(0, A.BITS[ty] - 1)))
                      if draw(st.booleans()) else expr(draw, ctx, ty, sub))
            return A.Binary(draw(st.sampled_from(("<<", ">>"))),
                            expr(draw, ctx, ty, sub), amount, ty)
        case "bits" if ty in ("i32", "u32"):
            op = draw(st.sampled_from(("popc", "clz", "brev", "not")))
            if op == "not":
                return A.Unary(op, expr(draw, ctx, ty, sub), ty)
            arg_ty = "i32" if op == "clz" else "u32"
            e: A.Expr = A.Unary(op, expr(draw, ctx, arg_ty, sub),
                                "u32" if op == "brev" else "i32")
            return e if e.ty == ty else A.Cast(ty, e)
        case "abs":
            shifted = A.Binary(">>", expr(draw, ctx, ty, sub),
                               A.Lit(ty, draw(st.integers(1, 4))), ty)
            return A.Unary("abs", shifted, ty)
        case "shfl":
            xor = draw(st.booleans())
            k = draw(st.sampled_from((1, 2, 4, 8, 16, 31) if xor else (0, 1, 5, 31)))
            return A.Shfl(xor, expr(draw, ctx, ty, sub), k, ty)
    return A.Binary("+" if ty != "f32" else "*", expr(draw, ctx, ty, sub),
                    leaf(draw, ctx, ty), ty)


def _div_key(ty: str) -> str:
    return ty if ty in DIVISORS else "i32"
