"""Memory, barrier and special-window types of Exo-GPU (Figures 12, 13, 14), as data.

Each data memory π_d carries what the analyses and the conversion need: its physical
backing (registers, shared, global, grid constant, host), its parent in the paper's
"base type" hierarchy (an argument of memory M may be passed where a parameter asks
for any ancestor of M), the collective level that owns one physical copy (δ_{π_d},
consumed by distributed memory analysis, Section 4.1), whether it is shared memory
(isSmem, Figure 18) and whether it is sync-exempt (isEx, Figure 18; Section 5.2.2:
CudaGridConstant, CudaClusterSync and CudaCommitGroup).

Conventions (paper -> Python):
  π_d : DataMemory      -> `DataMemory`      (Figure 12)
  π_z : BarrierComp     -> `BarrierMemory`   (Figure 13)
  π_w : SpecialWindow   -> `WindowMemory`    (Figure 14)
  δ_{π_d}               -> `DataMemory.owner` ("thread", "warp", "warpgroup", "cta",
                            "device", "host")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir.ast import MemExpr

# The owner levels, finest first.
OWNERS = ("thread", "warp", "warpgroup", "cta", "cluster", "device", "host")


@dataclass(frozen=True, slots=True)
class DataMemory:
    name: str
    params: tuple[str, ...]  # names of its numeric parameters, e.g. ("M", "N")
    parent: str | None       # base type (Figure 12's "base type for ...")
    physical: str            # "rmem" | "smem" | "gmem" | "grid_constant" | "host"
    owner: str               # the level owning one copy (δ_{π_d})
    sync_exempt: bool = False
    abstract: bool = False   # a base type: parameters may ask for it, allocations not
    doc: str = ""

    @property
    def is_smem(self) -> bool:
        return self.physical == "smem"

    @property
    def is_rmem(self) -> bool:
        return self.physical == "rmem"

    @property
    def is_cuda(self) -> bool:
        return self.physical != "host"


def _m(name: str, params: Iterable[str], parent: str | None, physical: str,
       owner: str, **kw: Any) -> DataMemory:
    return DataMemory(name, tuple(params), parent, physical, owner, **kw)


DATA_MEMORIES: dict[str, DataMemory] = {m.name: m for m in (
    # Pre-existing Exo memory (not listed in Figure 12): host memory.
    _m("DRAM", (), None, "host", "host", doc="CPU memory"),
    _m("CudaBasicDeviceVisible", (), None, "gmem", "device", abstract=True),
    _m("CudaBasicSmem", (), None, "smem", "cta", abstract=True),
    _m("CudaDeviceVisibleAtomicity16B", (), "CudaBasicDeviceVisible", "gmem", "device",
       abstract=True),
    _m("CudaDeviceVisibleLinear", (), "CudaDeviceVisibleAtomicity16B", "gmem", "device",
       abstract=True),
    _m("CudaGridConstant", (), "CudaBasicDeviceVisible", "grid_constant", "device",
       sync_exempt=True),
    _m("CudaGmemLinear", (), "CudaDeviceVisibleLinear", "gmem", "device"),
    _m("CudaSmemAtomicity16B", (), "CudaBasicSmem", "smem", "cta", abstract=True),
    _m("CudaSmemLinear", (), "CudaSmemAtomicity16B", "smem", "cta"),
    _m("CudaRmem", (), None, "rmem", "thread"),
    _m("Sm80_RmemMatrixA", ("M", "K"), None, "rmem", "warp"),
    _m("Sm80_RmemMatrixB", ("N", "K"), None, "rmem", "warp"),
    _m("Sm80_RmemMatrixD", ("M", "N"), None, "rmem", "warp"),
    _m("Sm90_SmemSwizzled", ("B",), "CudaSmemAtomicity16B", "smem", "cta"),
    _m("Sm90_RmemMatrixA", ("M",), None, "rmem", "warpgroup",
       doc="not implemented in the paper either"),
    _m("Sm90_RmemMatrixD", ("M", "N"), None, "rmem", "warpgroup"),
)}


@dataclass(frozen=True, slots=True)
class BarrierMemory:
    """π_z. `owner`: "cta" (an mbarrier lives in one CTA's shared memory), "cluster",
    or "collective" (a commit group belongs to the threads that arrive on it)."""

    name: str
    owner: str
    sync_exempt: bool
    is_smem: bool
    abstract: bool = False


BARRIER_MEMORIES: dict[str, BarrierMemory] = {m.name: m for m in (
    BarrierMemory("CudaDeviceBarrier", "cta", False, False, abstract=True),
    BarrierMemory("CudaMbarrier", "cta", False, True),
    BarrierMemory("CudaCommitGroup", "collective", True, False),
    BarrierMemory("CudaClusterSync", "cluster", True, False),
)}


@dataclass(frozen=True, slots=True)
class WindowMemory:
    """π_w: Sm90_tensorMap(swizzle, *smem_box)."""

    name: str
    min_args: int


WINDOW_MEMORIES: dict[str, WindowMemory] = {
    "Sm90_tensorMap": WindowMemory("Sm90_tensorMap", 2),
}

SWIZZLES = (0, 32, 64, 128)


# ------------------------------------------------------------------- resolution


def data_memory(m: MemExpr) -> DataMemory:
    """The π_d named by `m`; BadInput for an unknown name or wrong argument count."""
    d = DATA_MEMORIES.get(m.name)
    if d is None:
        raise BadInput(f"unknown memory: {m.name} (known: "
                       f"{', '.join(DATA_MEMORIES)})", span=m.span)
    if len(m.args) != len(d.params):
        raise BadInput(f"bad memory: {m.name} takes {len(d.params)} "
                       f"argument(s) ({', '.join(d.params) or 'none'})", span=m.span)
    if d.name == "Sm90_SmemSwizzled" and m.args[0] not in SWIZZLES:
        raise BadInput(f"bad memory: swizzle {m.args[0]} not in {SWIZZLES}",
                       span=m.span)
    return d


def barrier_memory(m: MemExpr) -> BarrierMemory:
    b = BARRIER_MEMORIES.get(m.name)
    if b is None or m.args:
        raise BadInput(f"unknown barrier type: {m.name} (known: "
                       f"{', '.join(BARRIER_MEMORIES)})", span=m.span)
    return b


def window_memory(m: MemExpr) -> WindowMemory:
    w = WINDOW_MEMORIES.get(m.name)
    if w is None:
        raise BadInput(f"unknown window type: {m.name} (known: "
                       f"{', '.join(WINDOW_MEMORIES)})", span=m.span)
    if len(m.args) < w.min_args or m.args[0] not in SWIZZLES:
        raise BadInput(f"bad window type: expected "
                       f"{m.name}(swizzle, box0, ...) with swizzle in {SWIZZLES}",
                       span=m.span)
    return w


def is_subtype(mem: str, ancestor: str) -> bool:
    """`mem` is `ancestor` or descends from it through Figure 12's base types."""
    cur: str | None = mem
    while cur is not None:
        if cur == ancestor:
            return True
        d = DATA_MEMORIES.get(cur)
        cur = d.parent if d is not None else None
    return False


def matrix_tile(m: MemExpr) -> tuple[int, ...] | None:
    """The tile shape a matrix register memory fixes (the trailing dimensions of an
    allocation in it), or None for memories without one."""
    match m.name:
        case "Sm80_RmemMatrixA" | "Sm80_RmemMatrixB" | "Sm80_RmemMatrixD":
            return tuple(m.args)
        case "Sm90_RmemMatrixD":
            return tuple(m.args)
    return None


def is_sync_exempt(name: str) -> bool:
    """isEx (Figure 18)."""
    if name in DATA_MEMORIES:
        return DATA_MEMORIES[name].sync_exempt
    if name in BARRIER_MEMORIES:
        return BARRIER_MEMORIES[name].sync_exempt
    return False


def is_smem(name: str) -> bool:
    """isSmem (Figure 18 / Section 5.2.2)."""
    if name in DATA_MEMORIES:
        return DATA_MEMORIES[name].is_smem
    if name in BARRIER_MEMORIES:
        return BARRIER_MEMORIES[name].is_smem
    return False
