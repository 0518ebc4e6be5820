"""The generator's state (Γ, π, the machine) and well-typed Bundl expressions
(Appendix A.2.1: T-Var, T-Int, T-Float, T-Bool, T-Partition-Id, T-Arr-Access(-Shared),
T-Bop, T-Cmp and the spec's extensions), for `fuzz/bundl/strategies/programs`.

Conventions (paper -> Python): Γ -> `Env.vars` (minus `Env.hidden`), π -> `Env.persp`,
(B, T) -> `Gen.shape`, x :^π τ -> `VarInfo`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.ast import ArrayType, AsyncType, BaseType, MemKind
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    Level,
    MachineShape,
    Perspective,
    leq,
    lt,
    size,
)
from gpusem.fuzz.bundl.strategies.draws import BOOLS, composite, ints, pick
from hypothesis import strategies as st

INT, FLOAT, BOOL = BaseType.INT, BaseType.FLOAT, BaseType.BOOL
BASES = (INT, BOOL, FLOAT)

# ---------------------------------------------------------------------- the state


@dataclass(frozen=True, slots=True)
class VarInfo:
    """x :^π τ in Γ, plus what generation needs: an array's static length (its extent),
    and whether x may be assigned (loop counters may not)."""

    name: str
    persp: Perspective
    type: BaseType | ArrayType | AsyncType
    length: int = 0
    readonly: bool = False

    @property
    def array(self) -> ArrayType:
        """`type`, of an array (what `arrays` yields)."""
        assert isinstance(self.type, ArrayType), self
        return self.type


@dataclass(frozen=True, slots=True)
class FnInfo:
    fn: ast.FnDef
    lengths: tuple[int, ...]  # the least length each array parameter is indexed with
    # the array parameters (their positions among them) a copy by several threads in
    # the body touches: a call freezes its arguments for them (Gen.frozen)
    freezes: frozenset[int] = frozenset()
    globals_: frozenset[str] = frozenset()  # the global arrays the body names


@dataclass(frozen=True, slots=True)
class Env:
    """Γ and π at one program point (immutable: a binder extends a copy)."""

    persp: Perspective
    vars: tuple[VarInfo, ...] = ()
    hidden: frozenset[str] = frozenset()

    def bind(self, v: VarInfo) -> Env:
        return replace(self, vars=(*self.vars, v))

    def at(self, persp: Perspective) -> Env:
        return replace(self, persp=persp)

    def hide(self, name: str) -> Env:
        return replace(self, hidden=self.hidden | {name})

    def visible(self) -> list[VarInfo]:
        return [v for v in self.vars if v.name not in self.hidden]


@dataclass
class Gen:
    """Per-program generation parameters and the fresh-name counter."""

    shape: MachineShape
    max_depth: int = 3
    max_stmts: int = 4
    fns: list[FnInfo] = field(default_factory=list)
    counter: int = 0
    # arrays a copy by several threads read or wrote: never written after it (below)
    frozen: set[str] = field(default_factory=set)

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def leq(self, a: Perspective, b: Perspective) -> bool:
        return leq(a, b, "fixed", self.shape)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def narrower_or_equal(g: Gen, p: Perspective) -> list[Perspective]:
    """Every perspective π' ≤ π that fits the machine (π first, then narrower)."""
    out = [p]
    for level in Level:
        if level > p.level:
            continue
        unit = size(Perspective(level, 1), g.shape)
        out += [Perspective(level, n) for n in divisors(max(size(p, g.shape) // unit, 1))
                if size(p, g.shape) % (n * unit) == 0 and Perspective(level, n) != p]
    return out


def readable(g: Gen, env: Env, v: VarInfo) -> bool:
    """Read up (T-Var, T-Arr-Access): π ≤ π'; Shared data only at π ≤ block[1]."""
    if not g.leq(env.persp, v.persp):
        return False
    return not (isinstance(v.type, ArrayType) and v.type.mem is MemKind.SHARED
                and not g.leq(env.persp, BLOCK1))


def writable(g: Gen, env: Env, v: VarInfo) -> bool:
    """Write down (T-Assn, T-Arr-Assn): π' ≤ π; Shared only at π ≤ block[1]; never
    an array a copy by several threads has touched (`Gen.frozen`, programs.s_memcpy:
    a later write would race with another thread's copy, no barrier between)."""
    if v.readonly or v.name in g.frozen or not g.leq(v.persp, env.persp):
        return False
    return not (isinstance(v.type, ArrayType) and v.type.mem is MemKind.SHARED
                and not g.leq(env.persp, BLOCK1))


def arrays(env: Env, pred: Callable[[VarInfo], bool] = lambda v: True) -> list[VarInfo]:
    return [v for v in env.visible() if isinstance(v.type, ArrayType) and pred(v)]


# -------------------------------------------------------------------- expressions

SMALL_INTS = st.integers(-8, 8)
EDGE_INTS = st.sampled_from([2**31 - 1, -(2**31), 1000, -1000])
EXACT_FLOATS = st.sampled_from([0.0, 1.0, 0.5, -2.0, 1.25, 3.0, -0.75])
ANY_FLOATS = st.floats(width=32, allow_nan=False, allow_infinity=False)
INT_LITERALS = st.one_of(SMALL_INTS, EDGE_INTS)  # made once: one_of is not cached
FLOAT_LITERALS = st.one_of(EXACT_FLOATS, ANY_FLOATS)


def literal(draw, ty: BaseType) -> ast.IntLit | ast.FloatLit | ast.BoolLit:
    match ty:
        case BaseType.INT:
            return ast.IntLit(draw(INT_LITERALS))
        case BaseType.BOOL:
            return ast.BoolLit(draw(BOOLS))
        case BaseType.FLOAT:
            return ast.FloatLit(float(draw(FLOAT_LITERALS)))


def gen_expr(draw, g: Gen, env: Env, ty: BaseType, depth: int = 2,
             reads: bool = True) -> ast.Expr:
    """An expression e with Γ ⊢^π e : ty (T-Int .. T-Cmp, and the spec's extensions).

    `reads=False`: no array reads. Note: read up assumes data at π' is uniform over each
    π' unit, but Shared/Global cells written by racing threads are not uniform in time:
    a racy read feeding an `if` at block[1] lets only part of the block reach a barrier
    (a deadlock in a well-typed program; Bundl does not prevent races, Sec 3.4.2). So
    conditions, and scalars broader than one thread, are computed without array reads.
    See errata.md ("generator: racy reads and control flow").
    """
    kinds = ["lit"]
    names = [v for v in env.visible() if v.type == ty and readable(g, env, v)]
    if names:
        kinds.append("var")
    elems = arrays(env, lambda v: v.array.elem == ty and readable(g, env, v))
    if elems and depth > 0 and reads:
        kinds.append("index")
    if ty is INT and lt(env.persp, GRID1, "fixed", g.shape):
        kinds.append("pid")  # T-Partition-Id: π < (Grid, 1)
    if depth > 0:
        kinds += ["unop", "binop"] if ty is not BOOL else ["unop", "binop", "cmp"]
    match pick(draw, kinds):
        case "lit":
            return literal(draw, ty)
        case "var":
            return ast.Var(pick(draw, names).name)
        case "pid":
            return ast.PartitionId()
        case "index":
            a = pick(draw, elems)
            array, length = array_operand(draw, a)
            index = gen_index(draw, g, env, length, depth - 1, reads)
            return ast.Index(array, index)
        case "unop":
            operand = gen_expr(draw, g, env, ty, depth - 1, reads)
            return ast.UnOp("!" if ty is BOOL else "-", operand)
        case "binop":
            return gen_binop(draw, g, env, ty, depth - 1, reads)
        case "cmp":
            return gen_cmp(draw, g, env, depth - 1, reads)
    raise AssertionError("every kind drawn is a case above")


def gen_binop(draw, g: Gen, env: Env, ty: BaseType, depth: int,
              reads: bool = True) -> ast.Expr:
    ops = {INT: ["+", "-", "*", "/", "%"], FLOAT: ["+", "-", "*", "/"],
           BOOL: ["&&", "||"]}[ty]
    op = pick(draw, ops)
    left = gen_expr(draw, g, env, ty, depth, reads)
    if op in ("/", "%"):  # a positive literal divisor: no trap, no INT_MIN / -1
        d = draw(ints(1, 7))
        right: ast.Expr = ast.IntLit(d) if ty is INT else ast.FloatLit(float(d))
    else:
        right = gen_expr(draw, g, env, ty, depth, reads)
    if ty is FLOAT and op == "*" and draw(BOOLS):
        # the explicit fused multiply-add (extension, T-Fma): left * right + a third
        return ast.Fma(left, right, gen_expr(draw, g, env, ty, depth, reads))
    return ast.BinOp(op, left, right)


def gen_cmp(draw, g: Gen, env: Env, depth: int, reads: bool = True) -> ast.Expr:
    ty = pick(draw, BASES)
    ops = ["==", "!="] if ty is BOOL else ["<", "<=", ">", ">=", "==", "!="]
    op = pick(draw, ops)
    return ast.BinOp(op, gen_expr(draw, g, env, ty, depth, reads),
                     gen_expr(draw, g, env, ty, depth, reads))


def array_operand(draw, a: VarInfo) -> tuple[ast.Expr, int]:
    """`a`, or now and then a pointer offset `a + k` (T-Ptr-Offset, the form S-Partition
    substitutes), with the length left after it (E-Arr-Access's ⟨l + k, n - k⟩)."""
    if a.length > 1 and draw(ints(0, 5)) == 0:
        k = draw(ints(1, a.length - 1))
        return ast.BinOp("+", ast.Var(a.name), ast.IntLit(k)), a.length - k
    return ast.Var(a.name), a.length


def gen_index(draw, g: Gen, env: Env, length: int, depth: int,
              reads: bool = True) -> ast.Expr:
    """An int expression whose value lies in [0, length)."""
    if length <= 1 or draw(BOOLS):
        return ast.IntLit(draw(ints(0, max(length - 1, 0))))
    e = gen_expr(draw, g, env, INT, max(depth, 0), reads)
    n = ast.IntLit(length)
    # ((e % n) + n) % n: C's remainder has the dividend's sign; no overflow for n > 0
    return ast.BinOp("%", ast.BinOp("+", ast.BinOp("%", e, n), n), n)


@composite
def expressions(draw, ctx, ty: BaseType, shape: MachineShape | None = None,
                depth: int = 2, persp: Perspective | None = None) -> ast.Expr:
    """Expressions e with Γ ⊢^π e : ty.

    `ctx` is the generator's `Env` (Γ and π), or a typing context
    (`typing_rules/bundl/context.Context`: items `(name, Binding)`) together with the
    code perspective `persp`. Arrays from a typing context have no known length, so
    they are read only at index 0 (every array has at least one element).
    """
    env = ctx if isinstance(ctx, Env) else env_of_context(ctx, persp or GRID1)
    g = Gen(shape or MachineShape(1, 32))
    return gen_expr(draw, g, env, ty, depth)


def env_of_context(ctx, persp: Perspective) -> Env:
    """An `Env` from a typing context: base and array bindings; hidden ones hidden."""
    vars_, hidden = [], set()
    for name, b in ctx:
        if isinstance(b.type, (BaseType, ArrayType)):
            length = 1 if isinstance(b.type, ArrayType) else 0
            vars_.append(VarInfo(name, b.persp, b.type, length))
            if getattr(b, "hidden_by", None) is not None:
                hidden.add(name)
    return Env(persp, tuple(vars_), frozenset(hidden))
