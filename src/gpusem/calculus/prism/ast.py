"""Prism's surface language: abstract syntax (seed 004, Sections 3.1-3.7, Appendix B).

One frozen, slotted dataclass per surface construct, each with the span of its surface
text (the span survives elaboration into Bundl, `calculus.prism.elaborate`). Levels
keep their surface spelling (`warp[n]` is `thread[32n]`, Sec 3.1-3.2; `Persp.threads`
says so), so errors can quote what the programmer wrote.

Conventions (paper -> Python): level[n] -> `Persp`; a perspective bound
`@requires(...)` -> `Requires`; `x : τ @ π = e` -> `Decl`; `match split(level)` ->
`Split`; `with partition(x, dimension=π, offset=e) as y` -> `Partition`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusem.calculus.span import NO_SPAN, Span

_SPAN = field(default=NO_SPAN, compare=False, repr=False)

LEVELS = ("grid", "block", "warp", "warpgroup", "thread")


@dataclass(frozen=True, slots=True)
class Persp:
    """level[n]; `warp[n]` and `warpgroup[n]` are thread[32n] / thread[128n]."""

    level: str
    n: int
    span: Span = _SPAN

    @property
    def base_level(self) -> str:
        return "thread" if self.level in ("warp", "warpgroup") else self.level

    @property
    def base_n(self) -> int:
        scale = {"warp": 32, "warpgroup": 128}.get(self.level, 1)
        return self.n * scale

    def __str__(self) -> str:
        return f"{self.level}[{self.n}]"


@dataclass(frozen=True, slots=True)
class SType:
    """A surface type: `base` (int, float, bool, uint32_t, float4, ...), `const`,
    `ptr(...)` (`pointer`), a local array `base[d1][d2]` (`dims`), `shared(...)`."""

    base: str
    const: bool = False
    pointer: bool = False
    dims: tuple[int, ...] = ()
    shared: bool = False
    constexpr: bool = False
    span: Span = _SPAN


# ---------------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class Name:
    id: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Num:
    value: int | float
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class BoolConst:
    value: bool
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Bin:
    """e1 op e2; `and`/`or` are `&&`/`||`, comparisons are binary (no chains)."""

    op: str
    left: Expr
    right: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Un:
    op: str
    operand: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Subscript:
    """x[i] or x[i, j] (a 2-D index, or the two-argument index function of Fig. 5)."""

    base: Expr
    indices: tuple[Expr, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Attr:
    """e.x / e.y / e.z / e.w of a float4."""

    base: Expr
    field: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Id:
    """id(): the index of the declared perspective's unit inside the code's (Sec 3.5)."""

    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class CallExpr:
    """f(args): a function with a result (B.3), a cast (`float4_cast`), an intrinsic."""

    fn: str
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...] = ()
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Ternary:
    """a if c else b."""

    cond: Expr
    then: Expr
    orelse: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Lambda:
    """lambda x, ...: e, the index function of a partition (Fig. 5, Fig. 6)."""

    params: tuple[str, ...]
    body: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class ListInit:
    """`{ 0 }` (a set display in Python): every element of a local array is `value`."""

    value: Expr
    span: Span = _SPAN


Expr = (Name | Num | BoolConst | Bin | Un | Subscript | Attr | Id | CallExpr | Ternary
        | Lambda | ListInit)

# ----------------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class Decl:
    """x : τ @ π (= e)?  (Sec 3.4.1; the perspective defaults to the code's)."""

    name: str
    type: SType
    persp: Persp | None
    init: Expr | None
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Assign:
    """target = e, or target op= e when `op` is set."""

    target: Expr
    value: Expr
    op: str | None = None
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class ExprStmt:
    """A call statement: a device function, an intrinsic, `unsafe("...")`."""

    call: CallExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class If:
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class While:
    cond: Expr
    body: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class For:
    """for v in range(start, stop, step): body."""

    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Break:
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Continue:
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Return:
    value: Expr | None
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Pass:
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Group:
    """with group(level[n]): body (Sec 3.3)."""

    persp: Persp
    body: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Case:
    n: int
    body: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Split:
    """match split(level): case n1: ... case n2: ...  (n-ary, Sec 3.3, Fig. 8)."""

    level: str
    cases: tuple[Case, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Partition:
    """with partition(x, dimension=π, offset=e) as y  or  partition(x, p=π, f=λ) as y
    (Sec 3.4.2): y is x seen by each unit of π at its offset `offset`, or through the
    index function `index` (y[i] = x[f(i)])."""

    source: str
    target: str
    dim: Persp
    offset: Expr | None
    index: Lambda | None
    body: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Claim:
    """with claim(x, scope=π, offset=e) as y (Sec 3.4.2)."""

    source: str
    target: str
    scope: Persp
    offset: Expr
    body: tuple[Stmt, ...]
    span: Span = _SPAN


Stmt = (Decl | Assign | ExprStmt | If | While | For | Break | Continue | Return | Pass
        | Group | Split | Partition | Claim)

# ------------------------------------------------------------------------ functions


@dataclass(frozen=True, slots=True)
class Param:
    """x : τ @ π in a perspective signature (Sec 3.6)."""

    name: str
    type: SType
    persp: Persp
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Requires:
    """@requires(level[n], ..., smem=m): the top-level perspective bound."""

    bound: tuple[Persp, ...]
    smem: int
    span: Span = _SPAN

    @property
    def top(self) -> Persp:
        return self.bound[0]


@dataclass(frozen=True, slots=True)
class Function:
    """@prism("global"|"device") @requires(...) [@template(...)] def f(params): body."""

    name: str
    kind: str
    requires: Requires
    template: tuple[str, ...]
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Arg:
    """`# arg NAME = ...` of the launch header: a scalar value or an array's contents."""

    name: str
    elem: str | None
    size: int
    values: tuple[int | float, ...] | None
    iota: bool
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Launch:
    """The `# launch:` header: which kernel, on how many blocks and threads, with which
    template values and arguments (what a host would pass; the paper leaves it out)."""

    kernel: str
    blocks: int
    threads: int
    template: tuple[tuple[str, int], ...]
    args: tuple[Arg, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Module:
    functions: tuple[Function, ...]
    launch: Launch | None
    span: Span = _SPAN

    def function(self, name: str) -> Function | None:
        return next((f for f in self.functions if f.name == name), None)


STMT_CLASSES = (Decl, Assign, ExprStmt, If, While, For, Break, Continue, Return, Pass,
                Group, Split, Partition, Claim)
EXPR_CLASSES = (Name, Num, BoolConst, Bin, Un, Subscript, Attr, Id, CallExpr, Ternary,
                Lambda, ListInit)
