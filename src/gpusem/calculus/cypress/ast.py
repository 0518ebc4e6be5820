"""Syntax of Cypress programs (seed 001, Fig. 3 reconstructed from Fig. 5 and Sec. 3):
frozen, slotted dataclasses, one per production of docs/cypress.md, each with its span.

Conventions: a *variant* is one `@task` function (l.180); an *instance* is one
`TaskMapping` (l.393); names are plain strings because a task body has one flat scope
(Fig. 5 rebinds nothing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpusem.calculus.cypress.machine import Memory, Processor
from gpusem.calculus.span import Span

# ---- scalar and tensor expressions (Fig. 5a) ----------------------------------------


@dataclass(frozen=True, slots=True)
class Num:
    value: int
    span: Span


@dataclass(frozen=True, slots=True)
class Var:
    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class ProcLit:
    """A processor level used as a value (`tunables={"PROC": WARP}`, Fig. 5b l.40)."""

    proc: Processor
    span: Span


@dataclass(frozen=True, slots=True)
class BinOp:
    op: Literal["+", "-", "*", "/", "//", "%"]
    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Builtin:
    """`cdiv(a, b)`, `min(a, b)`, `max(a, b)` (Fig. 5a l.14, l.29)."""

    name: Literal["cdiv", "min", "max"]
    args: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class ShapeOf:
    """`C.shape[0]` (Fig. 5a l.7): tensor sizes are dynamic values."""

    tensor: str
    dim: int
    span: Span


@dataclass(frozen=True, slots=True)
class Instr:
    """`WGMMA_64x256x16()` (Fig. 5a l.51): a Tensor Core instruction shape."""

    name: str
    m: int
    n: int
    k: int
    span: Span


@dataclass(frozen=True, slots=True)
class Tunable:
    """`tunable(int)` / `tunable(processor)` (Fig. 5a l.5, l.49)."""

    kind: Literal["int", "processor"]
    span: Span


@dataclass(frozen=True, slots=True)
class PartitionBlocks:
    """`partition_by_blocks(T, (b0, b1, ...))` (Fig. 5a l.10, l.195). A block size
    `None` is our extension (Batched-GEMM): extent-1 slices, that dimension dropped."""

    tensor: str
    blocks: tuple[Expr | None, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class PartitionMma:
    """`partition_by_mma(T, WGMMA_..(), PROC, "C")` (Fig. 5a l.50-52, Fig. 4)."""

    tensor: str
    instr: Instr
    proc: Expr
    operand: Literal["A", "B", "C"]
    span: Span


@dataclass(frozen=True, slots=True)
class Piece:
    """`Cp[i, j]`: one sub-tensor of a partition, in its own compacted coordinates
    (l.194)."""

    partition: str
    index: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class MakeTensor:
    """`make_tensor(M, N)` (Fig. 5a l.26): a fresh tensor of an inner variant."""

    dims: tuple[Expr, ...]
    span: Span


Expr = (Num | Var | ProcLit | BinOp | Builtin | ShapeOf | Instr | Tunable
        | PartitionBlocks | PartitionMma | Piece | MakeTensor)

# ---- statements ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TensorType:
    """`tensor[2, f16]`."""

    rank: int
    dtype: str
    span: Span


@dataclass(frozen=True, slots=True)
class Assign:
    """`X = e`, `U, V = tunable(int), tunable(int)`,
    `T: tensor[2,f16] = make_tensor(..)`."""

    targets: tuple[str, ...]
    values: tuple[Expr, ...]
    declared: TensorType | None
    span: Span


@dataclass(frozen=True, slots=True)
class Launch:
    """`launch("gemm", Cp[i, j], Ap[i, 0], B)` (Fig. 5a l.15): an inline launch, or
    one task per point when inside a range (l.182)."""

    task: str
    args: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Range:
    """`for i, j in prange(e, e):` / `srange` (l.182)."""

    kind: Literal["prange", "srange"]
    vars: tuple[str, ...]
    extents: tuple[Expr, ...]
    body: tuple[Stmt, ...]
    span: Span


LEAF_OPS = {
    # name: (number of tensor operands, which of them are written)
    "clear": (1, (0,)),
    "copy": (2, (1,)),
    "mma": (3, (0,)),
    "mma_nt": (3, (0,)),
    "mma_fma": (3, (0,)),  # ours: C = fma(A, B, C) per k (errata "fused mma")
    "add": (3, (0,)),
    "sub": (3, (0,)),
    "mul": (3, (0,)),
    "div": (3, (0,)),
    "maximum": (3, (0,)),
    "exp": (2, (0,)),
    "rowmax": (2, (0,)),
    "rowsum": (2, (0,)),
}


@dataclass(frozen=True, slots=True)
class LeafOp:
    """A call of the leaf library (our reconstruction, docs/cypress.md): the data
    operations a leaf variant performs (l.180: "directly access tensor data")."""

    op: str
    args: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class CallExternal:
    """`call_external("cute_gemm", C, A, B)`: an arbitrary C++ function (l.180). It
    has no reference meaning."""

    function: str
    args: tuple[Expr, ...]
    span: Span


Stmt = Assign | Launch | Range | LeafOp | CallExternal

# ---- tasks and mappings -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Param:
    """A task argument: a tensor (`C: tensor[2,f16]`) or a scalar (`n: int`)."""

    name: str
    type: TensorType | None
    span: Span


@dataclass(frozen=True, slots=True)
class Variant:
    """`@task("gemm", Inner, reads=[..], writes=[..]) def gemm_host(..):` (l.180)."""

    name: str
    task: str
    kind: Literal["Inner", "Leaf"]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    span: Span

    @property
    def tensor_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.type is not None)


TunableValue = int | Processor


@dataclass(frozen=True, slots=True)
class TaskMapping:
    """One instance of the mapping specification (Fig. 3, l.393; Fig. 5b)."""

    instance: str
    variant: str
    proc: Processor
    mems: tuple[Memory, ...]
    tunables: tuple[tuple[str, TunableValue], ...]
    entrypoint: bool
    calls: tuple[str, ...]
    warpspecialize: bool
    pipeline: int
    span: Span


@dataclass(frozen=True, slots=True)
class Program:
    variants: tuple[Variant, ...]
    mappings: tuple[TaskMapping, ...]
    span: Span

    def variant(self, name: str) -> Variant | None:
        return next((v for v in self.variants if v.name == name), None)

    def instance(self, name: str) -> TaskMapping | None:
        return next((m for m in self.mappings if m.instance == name), None)
