"""Bundl abstract syntax: Appendix A.1-A.3 of the Prism paper (seed 004).

One frozen, slotted dataclass per production of the surface grammar
(`shared/spec/bundl-syntax.md`) and per runtime form of A.3 (`init/dec/wait`, `free`,
pointer offsets produced by S-Partition). Every node carries its source `span`, which
takes no part in equality or hashing: two programs are equal when their trees are.

Conventions (paper -> Python):
  h ::= Grid | Block | Thread         -> `Level`
  π = (h, n)                          -> `Perspective` (calculus.bundl.perspective)
  l ::= Local | Shared | Global       -> `MemKind`
  b ::= bool | int | float            -> `BaseType`
  τ ::= b | b[]^l | Fun(Γ,π,m) | async τ -> `BaseType | ArrayType | FunType | AsyncType`
  ψ (sync label), φ (deferred label)  -> `str` labels; `None` until a fresh one is chosen

Sequencing. The paper writes `s1; s2` and `x : τ @ π = e in s`. Here `Seq` is n-ary and
`Decl` / `Alloc` carry their scope `body`. The smart constructor `seq(...)` keeps one
canonical shape, so that printing then parsing is the identity (the concrete syntax
cannot tell `(a; b); c` from `a; (b; c)`, nor where a `let`'s scope ends inside a block):
  - a `Seq` never contains a `Seq` (flattened), and has at least two statements;
  - only the last statement of a `Seq` may be a `Decl` or `Alloc`: statements after a
    binder are moved into its body (its scope extends to the end of the block); a
    binder whose body is `Skip` takes them as its whole body (`skip; s` would not
    survive printing then parsing, which reads `let x ...; s` as `... in s`).
See proofs_notes/errata.md ("sequencing and scope") for why this is sound.
The generic tree walkers (`child_stmts`, `child_exprs`, `is_canonical`,
`statement_count`) are in `calculus.bundl.walk`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Union

from gpusem.calculus.bundl.perspective import Perspective
from gpusem.calculus.span import NO_SPAN, Span

# ---------------------------------------------------------------------------- types


class MemKind(enum.Enum):
    LOCAL = "Local"
    SHARED = "Shared"
    GLOBAL = "Global"


class BaseType(enum.Enum):
    BOOL = "bool"
    INT = "int"
    FLOAT = "float"


@dataclass(frozen=True, slots=True)
class ArrayType:
    """τ[]^l: an array of `elem` living in memory `mem`."""

    elem: BaseType
    mem: MemKind


@dataclass(frozen=True, slots=True)
class AsyncType:
    """async τ: storage handed to an asynchronous copy (T-Async-Partition)."""

    inner: ArrayType


@dataclass(frozen=True, slots=True)
class FunType:
    """Fun(x_i : τ_i @ π_i, π, m): parameters, the perspective bound, memory `uses`."""

    params: tuple[Param, ...]
    persp: Perspective
    uses: int


Type = Union[BaseType, ArrayType, AsyncType, FunType]

# ---------------------------------------------------------------------- expressions

_SPAN = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class IntLit:
    value: int
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class FloatLit:
    """A float32 literal; `value` is already rounded to binary32."""

    value: float
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class BoolLit:
    value: bool
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Var:
    name: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Index:
    """e1[e2] (T-Arr-Access, T-Arr-Access-Shared)."""

    array: Expr
    index: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class PartitionId:
    """`partition_id` (T-Partition-Id, E-Partition-Id)."""

    span: Span = _SPAN


BINARY_OPS = ("||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%")
UNARY_OPS = ("-", "!")


@dataclass(frozen=True, slots=True)
class BinOp:
    """e1 op e2 (T-Bop, T-Cmp). `array + int` is the pointer offset that S-Partition's
    substitution `y + c·p` produces (a runtime form; see errata)."""

    op: str
    left: Expr
    right: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class UnOp:
    op: str
    operand: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Fma:
    """`fma(a, b, c)`: float a * b + c rounded ONCE (IEEE 754 fusedMultiplyAdd,
    round-to-nearest-even), as C's `fmaf` and CUDA's `__fmaf_rn`. An extension past the
    paper (errata: "Extension: explicit fma"): every other float op rounds, and nothing
    contracts a * b + c implicitly, so a fused product is only ever written."""

    a: Expr
    b: Expr
    c: Expr
    span: Span = _SPAN


Expr = Union[IntLit, FloatLit, BoolLit, Var, Index, PartitionId, BinOp, UnOp, Fma]

# ----------------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class Skip:
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Seq:
    """s1; s2; ...; sn (T-Seq; S-Seq-First, S-Seq-Done). Build with `seq(...)`."""

    stmts: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Decl:
    """x : τ @ π' = e in s (T-Decl, S-Decl)."""

    name: str
    type: BaseType
    persp: Perspective
    init: Expr
    body: Stmt
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Alloc:
    """x := alloc l τ n in s (T-Alloc, T-Alloc-Shared; S-Alloc-*). With `persp` (Local
    only): x := alloc Local τ n @ π' in s, a per-thread array declared at π' ≤ π as
    T-Decl declares a scalar (T-Alloc-Local-At, our extension for Prism's surface:
    errata "Extension: Local arrays at a declared perspective"). Last field, so
    positional patterns of the paper's form still match."""

    name: str
    elem: BaseType
    size: int
    mem: MemKind
    body: Stmt
    span: Span = _SPAN
    persp: Perspective | None = None


@dataclass(frozen=True, slots=True)
class Assign:
    """x = e (T-Assn, S-Assn)."""

    name: str
    value: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class ArrAssign:
    """e1[e2] = e3 (T-Arr-Assn, T-Arr-Assn-Shared, S-Arr-Assn)."""

    array: Expr
    index: Expr
    value: Expr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class If:
    cond: Expr
    then: Stmt
    orelse: Stmt
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class While:
    cond: Expr
    body: Stmt
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Split:
    """split(n1, n2) {s1} {s2} (T-Split; S-Split-Left/Right/None and -Done)."""

    n1: int
    n2: int
    left: Stmt
    right: Stmt
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Group:
    """group q s (T-Group; S-Group, S-Group-Done)."""

    q: int
    body: Stmt
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Destruct:
    """destruct in s (T-Destruct; S-Destruct-Block/Grid/Done)."""

    body: Stmt
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Partition:
    """partition_ψ x into y by c in s (T-Partition, S-Partition), or, with `offset`,
    partition_ψ x into y by c at e in s (T-Partition-Offset, S-Partition-Offset): our
    extension for Prism's `partition(x, dimension=π, offset=e)` (Sec 3.4.2, Appendix
    B), where each piece sees x from its own offset e instead of k·chunk (errata
    "Extension: partition at an offset"). Last field, so positional patterns of the
    paper's form still match."""

    label: str | None
    source: str
    target: str
    by: int
    body: Stmt
    span: Span = _SPAN
    offset: Expr | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """claim_ψ x into y at n' in s (T-Claim, S-Claim)."""

    label: str | None
    source: str
    target: str
    at: int
    body: Stmt
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Lower:
    """lower_ψ x into y in s (T-Lower, S-Lower)."""

    label: str | None
    source: str
    target: str
    body: Stmt
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class AsyncPartition:
    """async_partition_φ x into y in s (T-Async-Partition; S-Async-Partition-*)."""

    label: str | None
    source: str
    target: str
    body: Stmt
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class AsyncMemcpy:
    """async_memcpy(x, y) (T-Async-Memcpy, S-Async-Memcpy)."""

    dst: str
    src: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Memcpy:
    """memcpy(x, y) (T-Memcpy, S-Memcpy): x := y, element-wise."""

    dst: str
    src: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class SyncInit:
    """init_ψ (T-Sync-Init; S-Sync-Init-Zero/Nonzero). A runtime form."""

    label: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class SyncDec:
    """dec_ψ (T-Sync-Dec, S-Sync-Dec). A runtime form."""

    label: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class SyncWait:
    """wait_ψ (T-Sync-Wait; S-Sync-Wait-Done/Spin). A runtime form."""

    label: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Free:
    """free n (T-Free, S-Free): returns n units of the memory bound m. Runtime form."""

    amount: int
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Call:
    """f(e1, ..., en) (T-Function-Call, S-Function-Call)."""

    fn: str
    args: tuple[Expr, ...]
    span: Span = _SPAN


Stmt = Union[
    Skip, Seq, Decl, Alloc, Assign, ArrAssign, If, While, Split, Group, Destruct,
    Partition, Claim, Lower, AsyncPartition, AsyncMemcpy, Memcpy,
    SyncInit, SyncDec, SyncWait, Free, Call,
]

BINDERS = (Decl, Alloc)

# ------------------------------------------------------------------------- programs


@dataclass(frozen=True, slots=True)
class Machine:
    """The instantiation of the calculus: B blocks per grid, T threads per block."""

    blocks: int
    threads: int
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Iota:
    """`= iota`: element i holds i (converted to the element type)."""

    span: Span = _SPAN


GlobalInit = Union[None, Iota, tuple[Union[IntLit, FloatLit, BoolLit], ...]]


@dataclass(frozen=True, slots=True)
class GlobalDecl:
    """global x : τ[n] (= init)?; a kernel input/output living at (Grid, 1)."""

    name: str
    elem: BaseType
    size: int
    init: GlobalInit
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Param:
    """x : τ @ π in a function signature."""

    name: str
    type: BaseType | ArrayType
    persp: Perspective
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class FnDef:
    """fn f(params) at π uses m { body }: a value of type Fun(params, π, m)."""

    name: str
    params: tuple[Param, ...]
    persp: Perspective
    uses: int
    body: Stmt
    span: Span = _SPAN

    @property
    def type(self) -> FunType:
        return FunType(self.params, self.persp, self.uses)


DEFAULT_MACHINE = Machine(blocks=1, threads=32)


@dataclass(frozen=True, slots=True)
class Program:
    machine: Machine
    globals: tuple[GlobalDecl, ...]
    fns: tuple[FnDef, ...]
    main: Stmt
    span: Span = _SPAN

    def fn(self, name: str) -> FnDef | None:
        return next((f for f in self.fns if f.name == name), None)


# ---------------------------------------------------------------- smart constructor


def seq(*stmts: Stmt, span: Span = NO_SPAN) -> Stmt:
    """The canonical sequence of `stmts` (see the module docstring).

    Flattens nested `Seq`s and moves every statement that follows a binder into the
    binder's body. Returns `Skip()` for no statements and the statement itself for one.
    """
    flat: list[Stmt] = []
    for s in stmts:
        flat.extend(s.stmts if isinstance(s, Seq) else (s,))
    for i, s in enumerate(flat):
        if isinstance(s, BINDERS) and i + 1 < len(flat):
            # A binder's `skip` body is a placeholder (the parser builds `let ...;`
            # with one): absorbing `s2` gives `... in s2`, not `... in (skip; s2)`.
            inner = () if isinstance(s.body, Skip) else (s.body,)
            body = seq(*inner, *flat[i + 1 :])
            flat[i:] = [_with_body(s, body)]
            break
    if not flat:
        return Skip(span)
    if len(flat) == 1:
        return flat[0]
    return Seq(tuple(flat), span)


def _with_body(binder: Decl | Alloc, body: Stmt) -> Decl | Alloc:
    match binder:
        case Decl(name, ty, persp, init, _, span):
            return Decl(name, ty, persp, init, body, span)
        case Alloc():
            return replace(binder, body=body)


STMT_CLASSES = (
    Skip, Seq, Decl, Alloc, Assign, ArrAssign, If, While, Split, Group, Destruct,
    Partition, Claim, Lower, AsyncPartition, AsyncMemcpy, Memcpy,
    SyncInit, SyncDec, SyncWait, Free, Call,
)
EXPR_CLASSES = (IntLit, FloatLit, BoolLit, Var, Index, PartitionId, BinOp, UnOp, Fma)
