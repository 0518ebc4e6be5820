"""How an instruction of the library is declared: g : Instr and its parameters
τ_a : Arg (Exo-GPU Figure 2, with the Figure 19/20 annotations), and the helpers the
declarations in calculus/gpuir/instructions.py and instructions_ext.py are written
with. The library itself (which instructions exist) is calculus/gpuir/instructions.py.

Conventions (paper -> Python):
  g.p_i                         -> `Instr.params[i]` (`InstrParam`)
  τ_x, π_d of g.p_i             -> `InstrParam.dtype`, `InstrParam.mems`
  out_of_order (T_ooo)          -> `InstrParam.out_of_order`
  convergent (T_cvg)            -> `InstrParam.convergent`
  τ_u* (distributed units)      -> `InstrParam.dist_units`
  initial_qual_tl (T_init)      -> `InstrParam.initial_qual_tl` (a QualTL name)
  ext_qual_tl (T_ext)           -> `InstrParam.ext_qual_tl`
  atomic_qual_tl (T_atom)       -> `InstrParam.atomic_qual_tl`
  g.τ_u, g.π_z, t (CPU/CUDA)    -> `Instr.unit` (`unit_for(args)`), `Instr.barrier`,
                                   `Instr.device`
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy.typing as npt
from gpusem.calculus.gpuir.ast import DataType, UnitExpr
from gpusem.calculus.gpuir.memtypes import DataMemory

Access = Literal["read", "write", "readwrite"]

# Qualitative timeline names (Figure 15; calculus.gpuir.timelines.QualTL values).
STRM = "cpu_cuda_stream_qual"
RMEM = "cuda_in_order_rmem_qual"
RAM = "cuda_in_order_ram_qual"
SM80 = "Sm80_cp_async_qual"
TMA_S = "tma_to_smem_async_qual"
TMA_G = "tma_to_gmem_async_qual"
WG_A = "wgmma_async_rmem_a_qual"
WG_D = "wgmma_async_rmem_d_qual"
WG_S = "wgmma_async_smem_qual"

ANY_CUDA = ("CudaBasicDeviceVisible", "CudaBasicSmem", "CudaRmem")
SMEM = ("CudaBasicSmem",)
GMEM = ("CudaBasicDeviceVisible",)
HOST = ("DRAM",)

View = npt.NDArray[Any]  # a window of a data argument, written in place


@dataclass(frozen=True, slots=True)
class InstrParam:
    """τ_a : Arg (Figure 2). For a data parameter `shape` lists the extents of the
    argument window's interval dimensions (ints, or symbols unified across the call;
    the leading `len(dist_units)` of them are distributed over those units). A
    control parameter with `size_of` names such a symbol: its value must be that
    extent (Exo-GPU's instructions take their sizes as arguments, e.g.
    `cudaMemcpyAsync_htod_1f32(n, dst, src)`)."""

    name: str
    kind: Literal["data", "ctrl"] = "data"
    dtype: DataType | None = DataType.F32
    shape: tuple[int | str, ...] = ()
    mems: tuple[str, ...] = ANY_CUDA
    access: Access = "read"
    out_of_order: bool = False
    convergent: bool = False
    dist_units: tuple[str, ...] = ()
    initial_qual_tl: str | None = None
    ext_qual_tl: frozenset[str] | None = None
    atomic_qual_tl: frozenset[str] = frozenset()
    values: tuple[int, ...] = ()  # allowed values of a control parameter (any if empty)
    size_of: str | None = None    # a control parameter equal to this shape symbol


@dataclass(frozen=True, slots=True)
class Instr:
    """g : Instr (Figure 2): `proc y*, (x : τ_a)*, t, τ_u, π_z, τ_u* do s`.

    `stream`: a CPU instruction that is a stream-ordered CUDA API call
    (cudaMemcpyAsync-like): its accesses happen on the stream's timeline
    (cpu_cuda_stream_qual), after everything the host did before issuing it."""

    name: str
    params: tuple[InstrParam, ...]
    unit: UnitExpr
    behaviour: Callable[..., None]
    cuda: str
    ptx: str
    barrier: str | None = None       # π_z the trailing `>> z` must have, if any
    device: bool = True              # t: a CUDA instruction (False: CPU)
    sizes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # symbol -> allowed
    doc: str = ""
    stream: bool = False
    unit_params: tuple[str, ...] = ()  # control parameters giving n_1 and the args

    def unit_for(self, values: dict[str, int]) -> UnitExpr:
        """τ_u for a call: `unit`, whose count n_1 and numeric arguments come from
        the call's control arguments named by `unit_params` (Exo-GPU's TMA multicast
        runs on `ncta * cuda_warp_in_cluster_strided(cta_stride)`)."""
        if not self.unit_params:
            return self.unit
        count, *args = (values[p] for p in self.unit_params)
        return UnitExpr(self.unit.name, count, tuple(args), span=self.unit.span)

    def param(self, name: str) -> InstrParam:
        return next(p for p in self.params if p.name == name)

    @property
    def data_params(self) -> tuple[InstrParam, ...]:
        return tuple(p for p in self.params if p.kind == "data")


def initial_qual(p: InstrParam, memory: DataMemory) -> str:
    """T_init(g.p_i), resolving the in-order default by the argument's memory
    (T_qin)."""
    if p.initial_qual_tl is not None:
        return p.initial_qual_tl
    return RMEM if memory.is_rmem else RAM


def ext_quals(p: InstrParam, memory: DataMemory) -> frozenset[str]:
    """T_ext(g.p_i), with the same default."""
    if p.ext_qual_tl is not None:
        return p.ext_qual_tl
    return frozenset({initial_qual(p, memory)})


def data_param(name: str, shape: Iterable[int | str], mems: Iterable[str] = ANY_CUDA,
               access: Access = "read", dtype: DataType = DataType.F32,
               **kw: Any) -> InstrParam:
    return InstrParam(name, "data", dtype, tuple(shape), tuple(mems), access, **kw)


def ctrl_param(name: str, values: Iterable[int] = (),
               size_of: str | None = None) -> InstrParam:
    return InstrParam(name, "ctrl", None, (), (), "read", values=tuple(values),
                      size_of=size_of)


def async_quals(qual: str) -> dict[str, Any]:
    """An asynchronous parameter on timeline `qual` (T_ooo, T_init, T_ext)."""
    return {"out_of_order": True, "initial_qual_tl": qual, "ext_qual_tl": frozenset({qual})}


def warp_sync(qual: str = RMEM) -> dict[str, Any]:
    """A convergent (collective) parameter on timeline `qual`."""
    return {"convergent": True, "initial_qual_tl": qual, "ext_qual_tl": frozenset({qual})}
