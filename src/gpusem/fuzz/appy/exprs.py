"""The pieces every APPy kernel family draws from: the generation context (sizes, fresh
names, the dtype) and element expressions and conditions over a kernel's reads
(`strategies.py` assembles programs; `kernels.py`, `kernels_more.py` are the families)."""

from __future__ import annotations

from gpusem.calculus.appy import ast as A
from hypothesis import strategies as st


class Ctx:
    """What a kernel generator needs: sizes, fresh names, the element dtype."""

    def __init__(self, dtype: str, sizes: dict[str, int]):
        self.dtype = dtype
        self.sizes = sizes
        self.arrays: dict[str, tuple[str, tuple[str, ...]]] = {}  # name -> dtype, dims
        self.gens: dict[str, str] = {}
        self.params: dict[str, int | float] = {}  # scalar parameters beyond sizes
        self.count = 0

    @property
    def is_float(self) -> bool:
        return self.dtype.startswith("float")

    def new_array(self, dims: tuple[str, ...], prefix: str) -> str:
        name = f"{prefix}{self.count}"
        self.count += 1
        self.arrays[name] = (self.dtype, dims)
        return name

    def index_array(self, dims: tuple[str, ...], gen: str, prefix: str = "I") -> str:
        """An int32 array of in-range indices ("idx:n") or CSR row starts ("csr:r")."""
        name = f"{prefix}{self.count}"
        self.count += 1
        self.arrays[name] = ("int32", dims)
        self.gens[name] = gen
        return name

    def param(self, value: float) -> A.Name:
        """A scalar parameter (alpha, beta) of the element type."""
        name = f"alpha{self.count}"
        self.count += 1
        self.params[name] = float(value) if self.is_float else int(value)
        return A.Name(name)

    def fresh(self, prefix: str) -> str:
        """A scalar name no other kernel uses (private scalars stay private)."""
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, v: float) -> A.Const:
        return A.Const(float(v) if self.is_float else int(v))


def n_(x: str) -> A.Name:
    return A.Name(x)


def c_(v: int) -> A.Const:
    return A.Const(v)


def add(a: A.Expr, k: int) -> A.Expr:
    if k == 0:
        return a
    return A.BinOp("+" if k > 0 else "-", a, c_(abs(k)))


@st.composite
def cond(draw, ctx: Ctx, leaves: list[A.Expr], depth: int = 1,
         vector: bool = False) -> A.Expr:
    """A condition: a comparison with 0, or two joined by `&` / `|`."""
    one = A.Compare(draw(st.sampled_from(("<", ">", "<=", ">=", "==", "!="))),
                    draw(expr(ctx, leaves, depth, vector)), ctx.const(0))
    if draw(st.integers(0, 3)) > 0:
        return one
    two = A.Compare(draw(st.sampled_from(("<", ">"))), draw(expr(ctx, leaves, 0, vector)),
                    ctx.const(draw(st.sampled_from((1, -1)))))
    return A.BinOp(draw(st.sampled_from(("&", "|"))), one, two)


@st.composite
def expr(draw, ctx: Ctx, leaves: list[A.Expr], depth: int = 2,
         vector: bool = False) -> A.Expr:
    """An element expression over `leaves` (reads, private scalars, the loop index);
    `vector`: the leaves are vectors (slices, vidx), where Python's `x if c else y`
    has no meaning (an array has no truth value) and `appy.where` is drawn instead."""
    kinds = ["leaf", "const"] + (["bin", "bin", "call", "where", "ternary", "intop",
                                  "param"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "leaf":
        return draw(st.sampled_from(leaves))
    if kind == "const":
        return ctx.const(draw(st.sampled_from((1, 2, 3, -1, 0))) / (
            2 if ctx.is_float else 1))
    sub = expr(ctx, leaves, depth - 1, vector)
    if kind == "param":
        return A.BinOp("*", ctx.param(draw(st.sampled_from((1.5, 2, -0.5)))), draw(sub))
    if kind == "intop" and not ctx.is_float:  # Python's floor // and % (positive divisor)
        return A.BinOp(draw(st.sampled_from(("//", "%"))), draw(sub),
                       c_(draw(st.sampled_from((2, 3, 4)))))
    if kind in ("bin", "intop"):
        op = draw(st.sampled_from(("+", "-", "*") + (("/",) if ctx.is_float else ())))
        a, b = draw(sub), draw(sub)
        if op == "/":  # keep denominators away from zero: |b| + 1
            b = A.BinOp("+", A.Call("abs", (b,)), ctx.const(1))
        return A.BinOp(op, a, b)
    if kind == "call":
        funcs = ("abs", "maximum", "minimum") + (
            ("exp", "sqrt", "tanh", "log", "sin", "cos") if ctx.is_float else ())
        f = draw(st.sampled_from(funcs))
        if f in A.BINARY_FUNS:
            return A.Call(f, (draw(sub), draw(sub)))
        a = draw(sub)
        if f == "sqrt":
            a = A.Call("abs", (a,))
        if f == "log":  # log(|x| + 1) >= 0
            a = A.BinOp("+", A.Call("abs", (a,)), ctx.const(1))
        if f == "exp":  # bounded argument: exp(min(x, 4)) stays far from inf
            a = A.Call("minimum", (a, ctx.const(4)))
        return A.Call(f, (a,))
    c = draw(cond(ctx, leaves, depth - 1, vector))
    return A.Where(c, draw(sub), draw(sub), ternary=kind == "ternary" and not vector)
