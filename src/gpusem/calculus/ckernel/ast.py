"""The abstract syntax of CKernel: frozen, slotted dataclasses, one per production.

A program is one CUDA kernel over a 1-D grid of `grid` blocks of `block` threads. Every
pointer parameter and shared array holds `CELLS` cells per thread (per global thread for
parameters, per thread of the block for shared arrays): the cells a thread *owns*.
What a thread may touch is part of the syntax, so that in-bounds and race-free hold by
construction (typing_rules/ckernel):

- `Own(slot)`: cell `gid * CELLS + slot` of a parameter, `tid * CELLS + slot` of a
  shared array (the thread's own cell);
- `Masked(e)`: cell `(unsigned)e & (size - 1)` of a read-only parameter (any cell);
- `Neighbour(shift, slot)`: cell `((tid + shift) & (block - 1)) * CELLS + slot` of a
  shared array (another thread's cell; only after a barrier ordered its write).

Types: `i16 u16 i32 u32 i64 u64 f32`. Arithmetic is on `i32 u32 i64 u64 f32` only;
16-bit values enter it through an explicit `Cast` (C's integer promotion, made visible).
Every expression node carries its type `ty`.

Parameter modes: `ro` (`const T* __restrict__`, read with plain loads or `__ldg`), `rw`
(`T*`), `rwr` (`T* __restrict__`), `atomic` (`T*`, touched by atomics only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpusem.calculus.span import NO_SPAN, Span

CELLS = 4  # cells each thread owns per buffer (one int4 / float4)
ATOMIC_CELLS = 8  # cells of an atomic parameter

INT_TYPES = ("i16", "u16", "i32", "u32", "i64", "u64")
ARITH_TYPES = ("i32", "u32", "i64", "u64", "f32")
TYPES = (*INT_TYPES, "f32")
BITS = {"i16": 16, "u16": 16, "i32": 32, "u32": 32, "i64": 64, "u64": 64, "f32": 32}
SIGNED = ("i16", "i32", "i64")

Mode = Literal["ro", "rw", "rwr", "atomic"]
MODES = ("ro", "rw", "rwr", "atomic")

BIN_ARITH = ("+", "-", "*", "&", "|", "^", "<<", ">>", "min", "max")
BIN_COMPARE = ("<", "<=", "==", "!=")
UNARY = ("neg", "not", "abs", "popc", "clz", "brev")
ATOMIC_OPS = ("add", "min", "max", "and", "or", "xor")
BUILTINS = ("tid", "bid", "gid", "lane")


# ----------------------------------------------------------------------------- indices
@dataclass(frozen=True, slots=True)
class Own:
    slot: int
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Masked:
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Neighbour:
    shift: int
    slot: int
    span: Span = field(default=NO_SPAN, compare=False)


Index = Own | Masked | Neighbour


# ------------------------------------------------------------------------- expressions
@dataclass(frozen=True, slots=True)
class Lit:
    ty: str
    value: int | float
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Var:
    name: str
    ty: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Builtin:
    """`tid`, `bid`, `gid`, `lane`: int32 thread coordinates."""

    which: str
    ty: str = "i32"
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Unary:
    op: str
    arg: Expr
    ty: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Binary:
    """Arithmetic (`ty` = the operands' type) or a comparison (`ty` = i32, 0 or 1)."""

    op: str
    a: Expr
    b: Expr
    ty: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class DivC:
    """Division `/` or remainder `%` by a constant (C: truncating toward zero)."""

    op: str
    a: Expr
    divisor: int
    ty: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Cast:
    ty: str
    arg: Expr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Select:
    """`c ? a : b` on values (c an i32, nonzero is true)."""

    cond: Expr
    a: Expr
    b: Expr
    ty: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Load:
    buf: str
    index: Index
    ldg: bool
    ty: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class PtrSelect:
    """`(c ? a : b)[index]`: a load through a select of two pointers (issue 23 T1)."""

    cond: Expr
    buf_a: str
    buf_b: str
    index: Index
    ty: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Shfl:
    """`__shfl_sync(~0, v, (lane + k) & 31)` (xor False) or `__shfl_xor_sync(~0, v, k)`."""

    xor: bool
    value: Expr
    k: int
    ty: str
    span: Span = field(default=NO_SPAN, compare=False)


Expr = Lit | Var | Builtin | Unary | Binary | DivC | Cast | Select | Load | PtrSelect | Shfl


# -------------------------------------------------------------------------- statements
@dataclass(frozen=True, slots=True)
class Let:
    name: str
    ty: str
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Assign:
    name: str
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Store:
    buf: str
    index: Own
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class VecLoad:
    """`int4/int2/float4 t = ((const V*)buf)[v]` declaring one local per component;
    `index` is `Own(slot)` (vector `gid * CELLS / width + slot`) or `Masked(e)`."""

    names: tuple[str, ...]
    ty: str
    buf: str
    index: Own | Masked
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class VecStore:
    """`((V*)buf)[gid * CELLS / width + slot] = make_V(exprs...)`."""

    buf: str
    slot: int
    exprs: tuple[Expr, ...]
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Block:
    stmts: tuple[Stmt, ...]
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class If:
    cond: Expr
    then: Block
    orelse: Block
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class For:
    """`for (int var = 0; var < trips; ++var)`, `#pragma unroll` when `unroll`."""

    var: str
    trips: int
    unroll: bool
    body: Block
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Sync:
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Atomic:
    op: str
    buf: str
    cell: int
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False)


Stmt = Let | Assign | Store | VecLoad | VecStore | If | For | Sync | Atomic


# ---------------------------------------------------------------------------- programs
@dataclass(frozen=True, slots=True)
class Param:
    name: str
    mode: str
    ty: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Shared:
    name: str
    ty: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Kernel:
    """`inputs` seeds the contents of every parameter (interpreter/ckernel/inputs)."""

    name: str
    grid: int
    block: int
    inputs: int
    params: tuple[Param, ...]
    shared: tuple[Shared, ...]
    body: Block
    span: Span = field(default=NO_SPAN, compare=False)

    @property
    def threads(self) -> int:
        return self.grid * self.block

    def size_of(self, name: str) -> int:
        """Cells of a parameter or a shared array (per block)."""
        for p in self.params:
            if p.name == name:
                return ATOMIC_CELLS if p.mode == "atomic" else self.threads * CELLS
        return self.block * CELLS

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def shared_array(self, name: str) -> Shared | None:
        return next((s for s in self.shared if s.name == name), None)


def children(stmt: Stmt) -> tuple[Block, ...]:
    """The blocks a statement holds, in order (then, else; a loop's body)."""
    match stmt:
        case If(then=t, orelse=e):
            return (t, e)
        case For(body=b):
            return (b,)
    return ()


def statement_count(block: Block) -> int:
    return sum(1 + sum(statement_count(c) for c in children(s)) for s in block.stmts)
