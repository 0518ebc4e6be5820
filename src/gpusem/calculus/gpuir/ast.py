"""GPU IR abstract syntax: Figures 1 and 2 of Exo-GPU (seed 000), Sections 3.1-3.4.

One frozen, slotted dataclass per production of Figure 1 (expressions) and Figure 2
(statements, procedures), plus the argument forms of `shared/spec/gpuir-syntax.md`
(collective units, memory types, warp configurations). Every node carries its source
`span`, which takes no part in equality or hashing: two programs are equal when their
trees are (the print/parse property relies on this).

Conventions (paper -> Python):
  y ∈ 𝕐 (control variable)           -> `CVar.name` (str)
  x ∈ 𝕏 (data variable)              -> `DRead.name`, `Assign.name`, `Alloc.name` (str)
  z ∈ 𝔹 (barrier variable)           -> `ZRead.name`, `BarrierAlloc.name` (str)
  r ∈ 𝕎 (warp variable)              -> `WarpConfig.name`, `CudaWarps.name` (str)
  c : CExpr, b : BExpr                -> `CExpr`, `BExpr` (quasi-affine, Figure 1)
  w (window coordinate)               -> `WPoint | WInterval`
  e : DExpr, e_z : ZExpr              -> `DExpr`, `ZRead`
  s : Stmt                            -> `Stmt`; `s1; s2` is a tuple `body`
  τ_x (data type, Figure 10)          -> `DataType`
  τ_u (collective unit, Figure 11)    -> `UnitExpr` (meaning: calculus.gpuir.units)
  π_d / π_z / π_w (Figures 12-14)     -> `MemExpr` (meaning: calculus.gpuir.memtypes)
  τ_s (sync timeline, Figure 16)      -> `str` (validated against the timeline table)
  p : Proc                            -> `Proc`; g : Instr is a Python declaration in
                                         calculus.gpuir.instructions, called by
                                         `InstrCall`

Note: binders are plain strings, not unique symbols (STYLE 8). The parser rejects a
binder that shadows a visible name, so within a procedure a name resolves to exactly
one binder along every path; sibling scopes may reuse a name (two `tid` loops). Names
are resolved at parse time into control (`CVar`), data (`DRead`) and barrier (`ZRead`)
forms, so no later pass needs a symbol table to know what a name is.

Note: `seq`, `cuda_tasks` and `cuda_threads` loops are one class `For` with a `mode`:
they share every field but the unit, and T_s (Figure 5) normalises all three to
`loop`. Windows are half-open, `lo:hi`, as in the paper's concrete examples (Figure 6's
W-RANGE writes the inclusive set of the already-decremented bound).

The generic walkers (`sub_bodies`, `walk`, `data_reads`) are in `calculus.gpuir.walk`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Union

from gpusem.calculus.span import NO_SPAN, Span

_SPAN = field(default=NO_SPAN, compare=False, repr=False)

# ---------------------------------------------------------------------------- types


class DataType(enum.Enum):
    """τ_x : DataType (Figure 10)."""

    F32 = "f32"
    F64 = "f64"
    F16 = "f16"
    I32 = "i32"
    UI16 = "ui16"
    I8 = "i8"
    UI8 = "ui8"


class CtrlKind(enum.Enum):
    """The two control parameter types of the spec (`size` >= 0, `index`)."""

    SIZE = "size"
    INDEX = "index"


class LoopMode(enum.Enum):
    """The three loop forms of Figure 2."""

    SEQ = "seq"
    CUDA_TASKS = "cuda_tasks"
    CUDA_THREADS = "cuda_threads"


# ---------------------------------------------------------------- control (Fig. 1)


@dataclass(frozen=True, slots=True)
class CInt:
    """n : an integer literal in a control expression (C-Int)."""

    value: int
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class CVar:
    """y : a control variable read (C-Read): a `size` / `index` parameter or a loop
    iterator."""

    name: str
    span: Span = _SPAN


CONTROL_OPS = ("+", "-", "*", "/", "%")


@dataclass(frozen=True, slots=True)
class CBin:
    """c1 op c2 (C-Aff). `*` needs a constant side, `/` and `%` a constant divisor
    (quasi-affine); the analyses check this, the parser does not."""

    op: str
    lhs: CExpr
    rhs: CExpr
    span: Span = _SPAN


CExpr = Union[CInt, CVar, CBin]


@dataclass(frozen=True, slots=True)
class BConst:
    """true / false (B-Const)."""

    value: bool
    span: Span = _SPAN


RELATION_OPS = ("==", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True, slots=True)
class BRel:
    """c1 op c2 for op in == != < <= > >= (B-Rel; the paper lists == < <=, the others
    are their mirror images)."""

    op: str
    lhs: CExpr
    rhs: CExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class BLog:
    """b1 and b2, b1 or b2 (B-Log)."""

    op: str  # "and" | "or"
    lhs: BExpr
    rhs: BExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class BNot:
    """not b (an extension: the negation of a guard, convenient for pipelines)."""

    arg: BExpr
    span: Span = _SPAN


BExpr = Union[BConst, BRel, BLog, BNot]

# ----------------------------------------------------------------- windows (Fig. 1)


@dataclass(frozen=True, slots=True)
class WPoint:
    """c : a point window coordinate (W-Point)."""

    index: CExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class WInterval:
    """lo:hi : a half-open interval coordinate (W-Range). `None` bounds are the
    whole dimension (`x[:, 0]`), resolved against the shape by the analyses."""

    lo: CExpr | None
    hi: CExpr | None
    span: Span = _SPAN


WCoord = Union[WPoint, WInterval]

# -------------------------------------------------------------------- data (Fig. 1)


@dataclass(frozen=True, slots=True)
class DConst:
    """d : a data literal. An `int` value is an integer literal, a `float` a floating
    one (rounded to the destination precision where it is used)."""

    value: int | float
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class DRead:
    """x or x[w*] : a data read; `coords == ()` is the bare name (sugar for x[<>])."""

    name: str
    coords: tuple[WCoord, ...] = ()
    span: Span = _SPAN


DATA_OPS = ("+", "-", "*", "/")


@dataclass(frozen=True, slots=True)
class DBin:
    """e1 op e2 for op in + - * / (compound data expression)."""

    op: str
    lhs: DExpr
    rhs: DExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class DNeg:
    """-e (an extension; printed `-(e)` so that it never merges with a literal)."""

    arg: DExpr
    span: Span = _SPAN


DExpr = Union[DConst, DRead, DBin, DNeg]


@dataclass(frozen=True, slots=True)
class ZRead:
    """z or z[w*] : a barrier expression (ZExpr; read only, never composed)."""

    name: str
    coords: tuple[WCoord, ...] = ()
    span: Span = _SPAN


# ---------------------------------------------- units, memories, warp configurations


@dataclass(frozen=True, slots=True)
class UnitExpr:
    """τ_u as written: `[count *] name[(args)]`, e.g. `cuda_thread`, `4 * cuda_warp`,
    `2 * cuda_threads_strided(4, 8)` (Figure 11; meaning in calculus.gpuir.units)."""

    name: str
    count: int = 1
    args: tuple[int, ...] = ()
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class MemExpr:
    """π_d, π_z or π_w as written: `name[(args)]`, e.g. `CudaSmemLinear`,
    `Sm90_RmemMatrixD(64, 256)`, `Sm90_tensorMap(128, 64, 64)` (Figures 12-14;
    meaning in calculus.gpuir.memtypes)."""

    name: str
    args: tuple[int, ...] = ()
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class WarpConfig:
    """e_w : `CudaWarpConfig("name", nwarps, dec, inc)` (Section 3.4, Figure 3)."""

    name: str
    nwarps: int
    setmaxnreg_dec: int = 0
    setmaxnreg_inc: int = 0
    span: Span = _SPAN


# --------------------------------------------------------------- statements (Fig. 2)


@dataclass(frozen=True, slots=True)
class For:
    """for y in seq(lo, hi) | cuda_tasks(lo, hi) | cuda_threads(lo, hi, unit=τ_u)."""

    var: str
    lo: CExpr
    hi: CExpr
    mode: LoopMode
    unit: UnitExpr | None  # exactly when mode is CUDA_THREADS
    body: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class CudaDeviceFunction:
    """with CudaDeviceFunction(blockDim=n, clusterDim=n, warp_config=[e_w*]) do s.
    Exactly one of `block_dim` and `warp_config` is given (blockDim is 32 x the total
    warps named by warp_config)."""

    block_dim: int | None
    cluster_dim: int
    warp_config: tuple[WarpConfig, ...]
    body: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class CudaWarps:
    """with CudaWarps(lo, hi, name=r) do s : warps [lo, hi) of warp variable r (all of
    its warps when lo/hi are omitted; the whole CTA when the name is omitted too)."""

    lo: int | None
    hi: int | None
    name: str | None
    body: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class If:
    """if b then s (guard)."""

    cond: BExpr
    body: tuple[Stmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Assign:
    """x[c*] = e (write); `idx == ()` writes a scalar."""

    name: str
    idx: tuple[CExpr, ...]
    rhs: DExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Reduce:
    """x[c*] += e (reduce)."""

    name: str
    idx: tuple[CExpr, ...]
    rhs: DExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class WindowStmt:
    """x_win = x[w*] @ π_w (window statement; Figure 14)."""

    name: str
    source: DRead
    mem: MemExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Alloc:
    """x : τ_x[c*] @ π_d (data alloc); `shape == ()` is a scalar."""

    name: str
    dtype: DataType
    shape: tuple[CExpr, ...]
    mem: MemExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class BarrierAlloc:
    """z : barrier[c*] @ π_z (barrier alloc; Figure 13)."""

    name: str
    shape: tuple[CExpr, ...]
    mem: MemExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Free:
    """free x / free z. Users may not write it (Section 3.4: frees are inserted by a
    compiler pass); it parses so that inserted frees print and parse back."""

    name: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Fence:
    """Fence(τ_s^pre, τ_s^post) : non-split barrier."""

    pre: str
    post: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Arrive:
    """Arrive(τ_s, n) >> e_z* : the arrive half of a split barrier (`n` defaults to 1
    in the source, as in Section 2.2's `Arrive(wgmma_async) >> cg[cta, wg]`)."""

    tl: str
    n: int
    barriers: tuple[ZRead, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class Await:
    """Await(e_z, τ_s, n) : the await half of a split barrier."""

    barrier: ZRead
    tl: str
    n: int
    span: Span = _SPAN


InstrArg = Union[CExpr, DRead, DConst]


@dataclass(frozen=True, slots=True)
class InstrCall:
    """g(c*, e*) [>> e_z] : a call of instruction `instr` of the library. Data
    arguments are `DRead` windows, control arguments `CExpr`, literal data `DConst`."""

    instr: str
    args: tuple[InstrArg, ...]
    barrier: ZRead | None
    span: Span = _SPAN


Stmt = Union[
    For, CudaDeviceFunction, CudaWarps, If, Assign, Reduce, WindowStmt, Alloc,
    BarrierAlloc, Free, Fence, Arrive, Await, InstrCall,
]

# --------------------------------------------------------------------- procedures


@dataclass(frozen=True, slots=True)
class CtrlParam:
    """y : size | index."""

    name: str
    kind: CtrlKind
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class DataParam:
    """x : τ_x[c*] @ π_d (a data parameter; `shape == ()` is a scalar)."""

    name: str
    dtype: DataType
    shape: tuple[CExpr, ...]
    mem: MemExpr
    span: Span = _SPAN


Param = Union[CtrlParam, DataParam]


@dataclass(frozen=True, slots=True)
class Proc:
    """proc name(y*, (x : τ_x @ π_d)*) do s."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    span: Span = _SPAN

    @property
    def ctrl_params(self) -> tuple[CtrlParam, ...]:
        return tuple(p for p in self.params if isinstance(p, CtrlParam))

    @property
    def data_params(self) -> tuple[DataParam, ...]:
        return tuple(p for p in self.params if isinstance(p, DataParam))


@dataclass(frozen=True, slots=True)
class Module:
    """A `.gpuir` file: one or more procedures."""

    procs: tuple[Proc, ...]
    span: Span = _SPAN
