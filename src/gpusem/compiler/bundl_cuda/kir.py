"""KIR: the kernel IR between Bundl and CUDA C++.

High-level KIR still has the perspective constructs of Bundl (destruct, group, split,
partition, claim, lower, shared allocations, async scopes), each annotated with the code
perspective it runs at. The passes of `pipeline.py` lower them one family at a time until
only plain C-like statements, barriers and primitive calls remain, which `emit.py`
prints. Every statement keeps the Bundl span it came from, so the emitted CUDA can point
back at the source line.

Arrays are (pointer, length) pairs: `KArrayVar.name` is the pointer variable and
`length` an expression giving the number of elements visible through it (the second
component of Bundl's ⟨l, n⟩).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from gpusem.calculus.bundl.ast import BaseType, MemKind
from gpusem.calculus.bundl.perspective import Perspective
from gpusem.calculus.span import NO_SPAN, Span

_SPAN = field(default=NO_SPAN, compare=False, repr=False)

CTYPE = {BaseType.INT: "int", BaseType.FLOAT: "float", BaseType.BOOL: "bool"}

# ---------------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class KConst:
    value: int | float | bool
    type: BaseType


@dataclass(frozen=True, slots=True)
class KVar:
    name: str


@dataclass(frozen=True, slots=True)
class KPerspId:
    """The current perspective id p (resolved by `lower_code_perspectives`)."""


@dataclass(frozen=True, slots=True)
class KBuiltin:
    """threadIdx.x or blockIdx.x."""

    name: str


@dataclass(frozen=True, slots=True)
class KBin:
    """A binary operation on `type` operands (int ops wrap; see emit.py)."""

    op: str
    left: KExpr
    right: KExpr
    type: BaseType


@dataclass(frozen=True, slots=True)
class KUn:
    op: str
    operand: KExpr
    type: BaseType


@dataclass(frozen=True, slots=True)
class KLoad:
    pointer: KExpr
    index: KExpr


@dataclass(frozen=True, slots=True)
class KPtrAdd:
    """pointer + offset (elements): S-Partition's `y + k`."""

    pointer: KExpr
    offset: KExpr


@dataclass(frozen=True, slots=True)
class KRaw:
    """Index arithmetic the compiler itself introduces (never user data): plain C++
    on non-negative ints that cannot overflow."""

    text: str


@dataclass(frozen=True, slots=True)
class KSmemTop:
    """The first free byte of dynamic shared memory here (resolved by
    `assign_smem_offsets`); passed to device functions as their smem offset."""


@dataclass(frozen=True, slots=True)
class KFma:
    """float a * b + c with one rounding (emitted as gs_ffma: `__fmaf_rn` on the device,
    glibc's correctly rounded `fmaf` on the cpu backend). Made from Bundl's explicit
    `fma(a, b, c)` (exact in the oracle), and by `speed.contract_fma` from a * b + c
    under CompileOptions(fast_fma=True) (benchmarks; never the oracle's default)."""

    a: KExpr
    b: KExpr
    c: KExpr


KExpr = Union[KConst, KVar, KPerspId, KBuiltin, KBin, KUn, KLoad, KPtrAdd, KRaw, KSmemTop,
              KFma]

# ----------------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class KDecl:
    name: str
    ctype: str
    init: KExpr | None
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KLocalArray:
    name: str
    ctype: str
    size: int
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KAssign:
    name: str
    value: KExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KStore:
    pointer: KExpr
    index: KExpr
    value: KExpr
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KIf:
    cond: KExpr
    then: tuple[KStmt, ...]
    orelse: tuple[KStmt, ...] = ()
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KWhile:
    cond: KExpr
    body: tuple[KStmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KBlock:
    """A C++ `{ ... }` scope."""

    body: tuple[KStmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KCall:
    fn: str
    args: tuple[KExpr, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KComment:
    text: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KCopy:
    """Element-wise copy of `count` elements src -> dst (memcpy)."""

    dst: KExpr
    src: KExpr
    count: KExpr
    ctype: str
    span: Span = _SPAN


# -- perspective constructs (removed by lower_code_perspectives) -------------------


@dataclass(frozen=True, slots=True)
class KDestruct:
    """destruct at `outer` = (Grid,1) or (Block,1); p becomes blockIdx / threadIdx."""

    outer: Perspective
    body: tuple[KStmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KGroup:
    """group q at (h, q·n): p becomes p mod n."""

    q: int
    inner: Perspective
    body: tuple[KStmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KSplit:
    """split(n1, n2) at (h, n): p < n1 runs left; n1 <= p < n1+n2 runs right at p-n1."""

    n1: int
    n2: int
    left: tuple[KStmt, ...]
    right: tuple[KStmt, ...]
    span: Span = _SPAN


# -- data-perspective constructs (removed by lower_data_perspectives) --------------


@dataclass(frozen=True, slots=True)
class KPartition:
    """partition x into y by c at code perspective `persp` (fixed S-Partition); with
    `offset`, each piece's view starts at it (S-Partition-Offset, our extension)."""

    source: str
    target: str
    by: int
    source_len: KExpr
    elem: BaseType
    persp: Perspective
    body: tuple[KStmt, ...]
    span: Span = _SPAN
    offset: KExpr | None = None


@dataclass(frozen=True, slots=True)
class KClaim:
    source: str
    target: str
    at: int
    source_len: KExpr
    elem: BaseType
    persp: Perspective
    body: tuple[KStmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KLower:
    source: str
    target: str
    source_len: KExpr
    elem: BaseType
    persp: Perspective
    body: tuple[KStmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KSharedAlloc:
    """x := alloc Shared τ n, scoped over `body` (assign_smem_offsets gives it a place)."""

    name: str
    elem: BaseType
    size: int
    body: tuple[KStmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KGlobalAlloc:
    """x := alloc Global τ n at code perspective `persp`, scoped over `body`: one array
    per unit of `persp` (S-Alloc-Global, fixed; `galloc.py` gives it a scratch slot)."""

    name: str
    elem: BaseType
    size: int
    persp: Perspective
    body: tuple[KStmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KAsyncScope:
    """async_partition x into y: copies issued inside complete at the end (Φ unwind)."""

    source: str
    target: str
    source_len: KExpr
    elem: BaseType
    body: tuple[KStmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KAsyncCopy:
    dst: str
    src: str
    elem: BaseType
    span: Span = _SPAN


# -- synchronisation ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KBarrier:
    """All threads of the perspective instance `persp` (containing this thread, whose
    id in it is `p`) synchronise: the init; dec; wait of S-Partition/S-Claim/S-Lower.
    `site` names the source construct (for the data-control-flow graph)."""

    persp: Perspective
    p: KExpr
    site: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KArrive:
    """The arrive half of a split barrier (Prism Sec. 5's arrive), placed where the
    construct's accesses end; `KWait` with the same `site` completes it later."""

    persp: Perspective
    p: KExpr
    site: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KWait:
    """The wait half of a split barrier, placed before the first conflicting use."""

    persp: Perspective
    p: KExpr
    site: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KPrim:
    """A call of a device primitive after barrier lowering (`__syncthreads()` ...)."""

    text: str
    span: Span = _SPAN


KStmt = Union[
    KDecl, KLocalArray, KAssign, KStore, KIf, KWhile, KBlock, KCall, KComment, KCopy,
    KDestruct, KGroup, KSplit, KPartition, KClaim, KLower, KSharedAlloc, KGlobalAlloc,
    KAsyncScope, KAsyncCopy, KBarrier, KArrive, KWait, KPrim,
]

# ---------------------------------------------------------------------- functions


@dataclass(frozen=True, slots=True)
class KParam:
    name: str
    ctype: str  # "int*", "float", ...
    length_of: str | None = None  # for `<x>_len` params: the array they measure


@dataclass(frozen=True, slots=True)
class KFunction:
    """A kernel (`is_kernel`) or a device function. Device functions take the relative
    perspective id, the block id and the shared-memory offset (Prism Section 5)."""

    name: str
    params: tuple[KParam, ...]
    body: tuple[KStmt, ...]
    persp: Perspective
    is_kernel: bool = False
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class KProgram:
    functions: tuple[KFunction, ...]
    blocks: int
    threads: int
    smem_bytes: int = 0
    globals: tuple[tuple[str, BaseType, int], ...] = ()
    # kernel parameters after the globals: zero-filled scratch arrays (name, element
    # type, elements) holding the `alloc ... in Global` arrays (galloc.py)
    scratch: tuple[tuple[str, BaseType, int], ...] = ()
    source_lines: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


__all__ = [name for name in dir() if name.startswith("K")] + ["CTYPE", "MemKind"]
