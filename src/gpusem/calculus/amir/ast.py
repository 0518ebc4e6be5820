"""AMIR abstract syntax: Figure 4 of Exo-GPU (seed 000), Section 5.1.

One frozen, slotted dataclass per production of Figure 4. Control expressions `c`,
booleans `b` and window coordinates `w` are GPU IR's (calculus.gpuir.ast), as the paper
says ("Variables, types, and expressions (c, b, w) use the same definition as GPU IR").

Every statement carries two source locations, neither taking part in equality:
  - `span`: where the statement itself is (a line of a printed `.amir` file, or
    NO_SPAN when built by the conversion);
  - `origin`: the GPU IR line it was converted from (provenance, kept in every record
    the machine makes, so a rejection can show both conflicting source lines). The
    parser sets `origin = span` when it reads a hand-written `.amir` file.

Statements that consult the executing threads (Definition 5.2: g_{s#}(σ, ι)) carry
their thread mapping f_{s#} as a `ThreadMap` (Section 4: compiled from the collective
tiling by the conversion): a CPU-scoped statement maps to every global thread 𝔾; a
GPU-scoped one to a box of natural thread indices whose corners are control
expressions.

Conventions (paper -> Python):
  τ_v : VL, τ_q : QualTL           -> calculus.gpuir.timelines.VL, QualTL
  t : Bool (convergent/transitive) -> `t` (bool)
  e# ::= x[w*] | z[w*]             -> `Access` (`barrier` tells e_z# from e_d#)
  τ_q*                             -> frozenset[QualTL]
  e_z#* (a set of barrier accesses)-> tuple[Access, ...] (ordered as written)
  s1#; s2#                         -> a tuple `body` (blocks), as in GPU IR
  for y in loop(c_lo, c_hi) do s#  -> `Loop`
  if b then s#                     -> `Guard`
  f_{s#} / scope(s#)               -> `ThreadMap` on the statements that need it
  p# ::= proc y* do s#             -> `AProc`

Note: `Free` is an extension: Figure 5 lowers `free x` to checks only, leaving x's
records in ρ for ever; the conversion may emit `Free(x)` after those checks so the
machine drops them (a later `Alloc` of the same name would reset them anyway). It has
no effect on any verdict. See proofs_notes/errata.md ("AMIR Free").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Union

from gpusem.calculus.gpuir.ast import BExpr, CExpr, CInt, WCoord
from gpusem.calculus.gpuir.timelines import VL, QualTL
from gpusem.calculus.span import NO_SPAN, Span


def _loc() -> Span:
    """A source location field: not part of equality, hashing or repr."""
    return field(default=NO_SPAN, compare=False, repr=False)


# ---------------------------------------------------------------- accesses (Fig. 4)


@dataclass(frozen=True, slots=True)
class Access:
    """e# ::= x[w*] (data) | z[w*] (barrier). `coords == ()` is the degenerate access
    x[<>] of a scalar (Figure 17). Interval bounds are half-open `lo:hi`; a `None`
    bound means the whole dimension and needs the variable's `Alloc`."""

    name: str
    coords: tuple[WCoord, ...] = ()
    barrier: bool = False
    span: Span = _loc()


# ------------------------------------------------------------ thread mappings (§4)


@dataclass(frozen=True, slots=True)
class ThreadRange:
    """One dimension of a thread box: natural thread indices
    start(σ) + k * stride for 0 <= k < count."""

    start: CExpr
    count: int = 1
    stride: int = 1


@dataclass(frozen=True, slots=True)
class ThreadMap:
    """f_{s#} with scope(s#): `cpu=True` is 𝔾 (every thread of every task,
    Definition 5.2 "otherwise"); else the natural thread indices
    { Σ_m start_m(σ) + k_m * stride_m | 0 <= k_m < count_m } of the current task ι.
    The default is thread 0 alone (convenient in hand-written AMIR)."""

    dims: tuple[ThreadRange, ...] = (ThreadRange(CInt(0)),)
    cpu: bool = False


CPU = ThreadMap(dims=(), cpu=True)
THREAD0 = ThreadMap()

# ------------------------------------------------------------ statements (Fig. 4)


@dataclass(frozen=True, slots=True)
class Loop:
    """for y in loop(c_lo, c_hi) do s# (LoopStep / LoopDone, Figure 21)."""

    var: str
    lo: CExpr
    hi: CExpr
    body: tuple[AStmt, ...]
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class Guard:
    """if b then s# (If-True / If-False, Figure 21)."""

    cond: BExpr
    body: tuple[AStmt, ...]
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class IncTaskID:
    """IncTaskID (InctaskID, Figure 21)."""

    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class Alloc:
    """Alloc(x[c*]) / Alloc(z[c*]) : fresh records over the index box [0, n_i)."""

    name: str
    shape: tuple[CExpr, ...]
    barrier: bool = False
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class Free:
    """Free(x) : drop x's records (extension; see the module docstring)."""

    name: str
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class RecordRead:
    """RecordRead(τ_v, t, e#, τ_q, τ_q*, e_z#*) : add R(...) to the read records."""

    vl: VL
    t: bool
    access: Access
    qual: QualTL
    atomic: frozenset[QualTL]
    barriers: tuple[Access, ...]
    threads: ThreadMap = THREAD0
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class RecordMutate:
    """RecordMutate(τ_v, t, e#, τ_q, τ_q*, e_z#*) : add R(...) to the mutate records."""

    vl: VL
    t: bool
    access: Access
    qual: QualTL
    atomic: frozenset[QualTL]
    barriers: tuple[Access, ...]
    threads: ThreadMap = THREAD0
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class ClearReads:
    """ClearReads(e#) : forget the read records of the accessed cells."""

    access: Access
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class ClearMutates:
    """ClearMutates(e#) : forget the mutate records of the accessed cells."""

    access: Access
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class Fence:
    """Fence(t, τ_q^pre*, τ_q^full*, τ_q^temp*) : non-split barrier."""

    t: bool
    pre: frozenset[QualTL]
    full: frozenset[QualTL]
    temp: frozenset[QualTL]
    threads: ThreadMap = THREAD0
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class Arrive:
    """Arrive(t, τ_q^pre*, e_z#*) : the arrive half of a split barrier."""

    t: bool
    pre: frozenset[QualTL]
    barriers: tuple[Access, ...]
    threads: ThreadMap = THREAD0
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class Await:
    """Await(e_z#, τ_q^full*, τ_q^temp*, n) : the await half of a split barrier."""

    barrier: Access
    full: frozenset[QualTL]
    temp: frozenset[QualTL]
    n: int
    threads: ThreadMap = THREAD0
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class CheckReads:
    """CheckReads(τ_v, t, e#, τ_q*) : every read record of the cells must give the
    executing threads visibility >= τ_v on every timeline of τ_q*."""

    vl: VL
    t: bool
    access: Access
    quals: frozenset[QualTL]
    threads: ThreadMap = THREAD0
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class CheckMutates:
    """CheckMutates(τ_v, t, e#, τ_q*) : as CheckReads, over the mutate records."""

    vl: VL
    t: bool
    access: Access
    quals: frozenset[QualTL]
    threads: ThreadMap = THREAD0
    origin: Span = _loc()
    span: Span = _loc()


@dataclass(frozen=True, slots=True)
class CheckBarrier:
    """CheckBarrier(e_z#) : every accessed barrier cell has arrives = awaits."""

    access: Access
    origin: Span = _loc()
    span: Span = _loc()


AStmt = Union[
    Loop, Guard, IncTaskID, Alloc, Free, RecordRead, RecordMutate, ClearReads,
    ClearMutates, Fence, Arrive, Await, CheckReads, CheckMutates, CheckBarrier,
]

STMT_CLASSES: tuple[type, ...] = AStmt.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class AProc:
    """p# ::= proc y* do s# : control parameters only (Section 5.2.4)."""

    name: str
    params: tuple[str, ...]
    body: tuple[AStmt, ...]
    span: Span = _loc()
    # Note: the witness W of Definition B.3 (i) as printed (False) counts a record
    # seen at >= unordered, temporally_ordered included; True (the conversion's
    # `--rules fixed`) counts only fully_ordered or the accessing threads' own
    # R-given level (errata "The witness W and temporal visibility"). The printed
    # form has no place for it (a printed program reads back with W as printed), so
    # it takes no part in equality.
    strict_witness: bool = field(default=False, compare=False)


# ------------------------------------------------------------------------ helpers


def walk(body: tuple[AStmt, ...]) -> Iterator[AStmt]:
    """Every statement of `body`, pre-order, including nested ones."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (Loop, Guard)):
            yield from walk(stmt.body)
