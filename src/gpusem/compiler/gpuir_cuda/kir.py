"""GKIR: the kernel IR between GPU IR and CUDA C++.

`from_gpuir` produces one `GKernel` per `CudaDeviceFunction`. Its statements are plain
C-like structure (`GFor`, `GIf`, `GLet`, local and shared storage, one-line `GPrim`s)
plus four abstract forms that later passes lower one family at a time:

    GFence / GArrive / GAwait   synchronisation, still at the GPU IR level: the
                                collective that runs it (a ThreadMapping of the
                                collective analysis) and its sync timelines
                                (lowered by `sync.lower_sync`);
    GInstr                      an instruction call with resolved argument windows
                                (lowered by `instr.lower_instructions`);
    GShared / GMbarriers        shared storage (placed by `smem.assign_smem`).

Every statement keeps the GPU IR span it came from so the emitted CUDA points back at
the source line. Expressions are C text (built by `cexpr.py`, exact by construction).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusem.calculus.span import NO_SPAN, Span
from gpusem.typing_rules.gpuir.collective import ThreadMapping

_SPAN = field(default=NO_SPAN, compare=False, repr=False)

# ----------------------------------------------------------------------- storage


@dataclass(frozen=True, slots=True)
class Window:
    """A window of a variable's per-thread (or per-CTA, or global) storage: element
    `base + Σ i_d * stride_d` for `i_d < extent_d` over its interval dimensions."""

    var: str            # the C name of the storage
    space: str          # "global" | "shared" | "local"
    ctype: str
    base: str           # C expression (element offset)
    dims: tuple[tuple[int, int], ...]  # (extent, stride) per interval dimension
    tile: tuple[int, ...] | None = None  # matrix-register tile (distributed layout)
    share: int = 1      # tile elements each thread of the owner holds

    def elem(self, *idx: str) -> str:
        """The C lvalue of element `idx` (one index per interval dimension)."""
        terms = [self.base] + [f"({i}) * {s}" if s != 1 else f"({i})"
                               for i, (_, s) in zip(idx, self.dims) if i != "0"]
        return f"{self.var}[{' + '.join(t for t in terms if t != '0') or '0'}]"


@dataclass(frozen=True, slots=True)
class BarRef:
    """A barrier operand: variable `name` of kind mbarrier | commit | cluster, at cell
    `index` (C expression over the per-CTA cells; None: every cell, `z[:]`).
    `ring`: the mbarriers each cell is lowered to (GMbarriers.ring); `multicast`:
    the cell in every CTA of the cluster (`raw[0:2]` in an Arrive of several
    barriers: the arrival signals each CTA's barrier)."""

    name: str
    kind: str
    index: str | None
    ring: int = 1
    multicast: bool = False


# -------------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class GPrim:
    """One line of C (already lowered)."""

    text: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GComment:
    text: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GLet:
    """const int name = expr;"""

    name: str
    expr: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GFor:
    """A sequential loop; `hi` is evaluated once, as seq(lo, hi) does."""

    var: str
    lo: str
    hi: str
    body: tuple[GStmt, ...]
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GIf:
    cond: str
    body: tuple[GStmt, ...]
    span: Span = _SPAN
    note: str = ""
    # a CudaWarps branch: the warps [first, end) of the CTA it runs on (`roles.py`
    # reads it to split the roles); None for every other test
    warps: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class GLocal:
    """Per-thread register storage, zero-filled (the sequential reading's allocations
    start at zero; see from_gpuir's Note)."""

    name: str
    ctype: str
    count: int
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GShared:
    """Per-CTA shared storage of `count` elements (placed by `assign_smem`)."""

    name: str
    ctype: str
    count: int
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GMbarriers:
    """`count` mbarriers in shared memory, each expecting `arrivals` arrivals per phase,
    initialised by one thread and published to the CTA (or cluster) before use; every
    thread keeps the parity of the next phase it awaits per cell. With `ring` > 1
    every cell is a ring of that many mbarriers (Await(z, tl, -n) with n > 1: a
    pipeline `ring` phases deep), and every thread counts its arrives and awaits per
    cell instead (`sync.py`)."""

    name: str
    count: int
    arrivals: int
    cluster: bool
    span: Span = _SPAN
    ring: int = 1


@dataclass(frozen=True, slots=True)
class GFence:
    """Fence(pre, post) run by collective `mapping`."""

    mapping: ThreadMapping
    pre: str
    post: str
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GArrive:
    """Arrive(tl, n) >> barriers, run by `mapping`; `tx_bytes`: the bytes of the TMA
    copies this arrive expects (tma_to_smem_async)."""

    mapping: ThreadMapping
    tl: str
    n: int
    barriers: tuple[BarRef, ...]
    tx_bytes: int = 0
    span: Span = _SPAN


@dataclass(frozen=True, slots=True)
class GAwait:
    mapping: ThreadMapping
    barrier: BarRef
    tl: str
    n: int
    span: Span = _SPAN


Arg = Window | str  # a data window, or a control value (C expression)


@dataclass(frozen=True, slots=True)
class GInstr:
    """Call of library instruction `instr` by collective `mapping`."""

    mapping: ThreadMapping
    instr: str
    args: tuple[Arg, ...]
    barrier: BarRef | None
    span: Span = _SPAN


GStmt = (GPrim | GComment | GLet | GFor | GIf | GLocal | GShared | GMbarriers | GFence
         | GArrive | GAwait | GInstr)


# ----------------------------------------------------------------------- kernels


@dataclass(frozen=True, slots=True)
class WarpRole:
    """Warps [first, first + nwarps) of a CTA sharing one register count: a run of the
    warp config's `CudaWarpConfig`s (Section 3.4) with the same setmaxnreg counts
    (`dec`, `inc`; 0 when none)."""

    names: tuple[str, ...]
    first: int
    nwarps: int
    dec: int = 0
    inc: int = 0


@dataclass(frozen=True, slots=True)
class KParam:
    """A kernel parameter: a pointer to `count` elements, or (count 0) an int scalar."""

    name: str
    dtype: str          # numpy dtype name
    ctype: str
    count: int


@dataclass(frozen=True, slots=True)
class GKernel:
    name: str
    params: tuple[KParam, ...]
    grid: int           # CTAs (tasks x clusterDim)
    block: int
    cluster: int
    body: tuple[GStmt, ...]
    smem_bytes: int = 0
    static_smem_bytes: int = 0  # the static `__shared__` arrays of instr's nests
    span: Span = _SPAN
    # the warp config's register classes (empty without a warp config), and the
    # minimum CTAs an SM ptxas must plan for (0: none given; `roles.py` sets 1)
    roles: tuple[WarpRole, ...] = ()
    min_blocks: int = 0


def map_body(stmts: tuple[GStmt, ...], fn) -> tuple[GStmt, ...]:
    """Rewrite bottom-up: `fn(stmt)` returns a tuple of statements replacing it, after
    the statement's own body has been rewritten."""
    out: list[GStmt] = []
    for s in stmts:
        if isinstance(s, (GFor, GIf)):
            s = type(s)(**{**_fields(s), "body": map_body(s.body, fn)})
        out.extend(fn(s))
    return tuple(out)


def _fields(s) -> dict:
    return {f: getattr(s, f) for f in s.__dataclass_fields__}


def walk(stmts: tuple[GStmt, ...]):
    for s in stmts:
        yield s
        if isinstance(s, (GFor, GIf)):
            yield from walk(s.body)
