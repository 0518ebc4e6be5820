"""APPy abstract syntax: the loop- and tensor-oriented models of seed 003.

Sections encoded: 3 (loop-oriented model: `parallel for`, `simd`, `sequential for`,
`atomic`, data sharing), 4 (sliced index notation and `slice=>{properties}` pragmas),
Appendix B.1 (language rules: arrays are the names followed by `[`).

One frozen, slotted dataclass per construct; every node carries its `span`, which takes
no part in equality. The AST is the *annotated* program: directives hang on the loop or
statement they precede (Alg. 3 "link a pragma to the node following it").

Conventions (paper -> Python):
  worker (one parallel-for iteration)     -> one value of `For.var` under `ParallelFor`
  vector lane, chunk of <= MVL lanes      -> `Simd.width` (None: the compiler's default)
  `appy.MVL`                              -> `Mvl`
  `appy.vidx(i, step, bound=N)`           -> `Vidx`
  dimension variable `:M`                 -> `Slice(lower, upper)` with `upper` a `Name`
  `{slice}=>{props}` pragma               -> `TensorPragma(dims=(DimProps, ...))`
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from gpusem.calculus.span import NO_SPAN, Span

_SPAN = field(default=NO_SPAN, compare=False, repr=False)

# ---------------------------------------------------------------------- expressions

BIN_OPS = ("+", "-", "*", "/", "//", "%", "&", "|")
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")
# Elementwise functions of the abstract machine (Section 2: "basic mathematical unary and
# binary operations"), written `np.<f>` so that the sequential reading is plain NumPy.
UNARY_FUNS = ("exp", "log", "sqrt", "abs", "sin", "cos", "tanh")
BINARY_FUNS = ("maximum", "minimum")
# Reductions over a vector or tensor (Section 4.1: sum(A[:M, :N], axis=1), max(...)).
REDUCE_FUNS = ("sum", "max", "min")
# Products the tensor model writes as calls (Listing 7's gesummv: `mv(alpha * A[:M, :N],
# x[:N])`; appyc 0.2.0 reads `appy.mv` / `appy.dot` as `appy.sum(a * b)`).
PRODUCT_FUNS = ("mv", "dot")


@dataclass(frozen=True, slots=True)
class Const:
    value: int | float
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Name:
    id: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Mvl:
    """`appy.MVL`: the maximum vector length of the abstract machine."""

    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Slice:
    """`lower:upper` in sliced index notation; `upper` must be given (Section 4.1)."""

    lower: Expr | None
    upper: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class NewAxis:
    """`None` in an index tuple: broadcast a dimension (Section 4.1)."""

    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Subscript:
    """`A[e1, ..., en]`: an array access (scalar indices, slices or `None`)."""

    array: str
    indices: tuple[Expr, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class BinOp:
    op: str  # one of BIN_OPS
    left: Expr
    right: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Neg:
    operand: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Compare:
    op: str  # one of CMP_OPS
    left: Expr
    right: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Call:
    """`np.f(args)` for f in UNARY_FUNS / BINARY_FUNS, or a reduction in REDUCE_FUNS
    (`sum(x)`, `max(x)`, with an optional `axis`)."""

    func: str
    args: tuple[Expr, ...]
    axis: int | None = None
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Where:
    """`appy.where(cond, x, y)` (Section 2), or with `ternary` Python's conditional
    expression `x if cond else y` (kept as written: appyc reads it by its own pass)."""

    cond: Expr
    then: Expr
    orelse: Expr
    ternary: bool = False
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Vidx:
    """`appy.vidx(start, step, bound)`: lanes start .. min(start+step, bound)-1."""

    start: Expr
    step: Expr
    bound: Expr | None
    span: Span = _SPAN


Expr = (Const | Name | Mvl | Slice | NewAxis | Subscript | BinOp | Neg | Compare | Call
        | Where | Vidx)

# ----------------------------------------------------------------------- directives


@dataclass(frozen=True, slots=True)
class ParallelFor:
    """`#pragma parallel for [simd[(w)]] [reduction(+:x,...)] [to(A,..)] [from(A,..)]`:
    one worker per iteration (Section 3.1); with `simd`, each worker takes a chunk
    (Section 3.2). `to`/`from` are appyc's data clauses: host arrays copied to the
    device before the loop, and back (rebinding the name) after it; the sequential
    reading ignores them (errata: "data clauses")."""

    simd: bool = False
    width: int | None = None
    reduction: tuple[str, ...] = ()
    to: tuple[str, ...] = ()
    from_: tuple[str, ...] = ()
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Simd:
    """`#pragma simd[(w)]`: chunks of at most MVL (or w) lanes in lockstep (3.2)."""

    width: int | None = None
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class SequentialFor:
    """`#pragma sequential for`: one worker runs every iteration (Section 3.1)."""

    span: Span = _SPAN


LoopDirective = ParallelFor | Simd | SequentialFor


@dataclass(frozen=True, slots=True)
class DimProps:
    """`slice=>p1,p2`: properties of one dimension slice (Section 4.2)."""

    slice: Slice
    parallel: bool = False
    simd: bool = False
    reduce: str | None = None  # "sum" for reduce(sum) / reduction(sum:y)
    le: int | None = None
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class TensorPragma:
    dims: tuple[DimProps, ...]
    span: Span = _SPAN


# ----------------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class Assign:
    """`target = value` or, with `op`, `target op= value`; `atomic` marks
    `#pragma atomic` (Section 3.4); `pragma` a tensor pragma (Section 4.2)."""

    target: Name | Subscript
    value: Expr
    op: str | None = None
    atomic: bool = False
    pragma: TensorPragma | None = None
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class If:
    cond: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class For:
    """`for var in range(start, stop, step)` with an optional directive."""

    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    directive: LoopDirective | None = None
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Return:
    """`return [e]`: ends the function (host code only: Legal-Return)."""

    value: Expr | None = None
    span: Span = _SPAN


Stmt = Assign | If | For | Return

# -------------------------------------------------------------------------- program

DTYPES = ("float32", "float64", "int32", "int64")


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter: an array (known to be one because the body subscripts it,
    Appendix B.1) or a scalar size / value."""

    name: str
    is_array: bool
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    span: Span = _SPAN


def walk_stmts(body: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement of `body`, depth first, outer before inner."""
    for stmt in body:
        yield stmt
        match stmt:
            case For(body=inner):
                yield from walk_stmts(inner)
            case If(body=then, orelse=orelse):
                yield from walk_stmts(then)
                yield from walk_stmts(orelse)
            case Assign() | Return():
                pass


def walk_expr(e: Expr) -> Iterator[Expr]:
    """`e` and every sub-expression."""
    yield e
    match e:
        case Subscript(indices=ix):
            for i in ix:
                yield from walk_expr(i)
        case Slice(lower=lo, upper=hi):
            if lo is not None:
                yield from walk_expr(lo)
            yield from walk_expr(hi)
        case BinOp(left=a, right=b) | Compare(left=a, right=b):
            yield from walk_expr(a)
            yield from walk_expr(b)
        case Neg(operand=a):
            yield from walk_expr(a)
        case Call(args=args):
            for a in args:
                yield from walk_expr(a)
        case Where(cond=c, then=t, orelse=o):
            for a in (c, t, o):
                yield from walk_expr(a)
        case Vidx(start=s, step=st, bound=b):
            for a in (s, st) + ((b,) if b is not None else ()):
                yield from walk_expr(a)
        case Const() | Name() | Mvl() | NewAxis():
            pass


def stmt_count(body: tuple[Stmt, ...]) -> int:
    """Size of a program for shrinking reports: statements, loops included."""
    return sum(1 for _ in walk_stmts(body))


def stmt_exprs(s: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement holds itself (not those of nested statements)."""
    match s:
        case Assign(target=t, value=v):
            return (t, v)
        case If(cond=c):
            return (c,)
        case For(start=a, stop=b, step=c):
            return (a, b, c)
        case Return(value=v):
            return () if v is None else (v,)
