"""The GPU IR -> CUDA pipeline (Exo-GPU Section 4.2): named passes, each testable alone.

    host_as_kernel     host code after the last kernel -> a kernel of one thread,
                       launched in stream order (`host.py`)
    analyse            the front end (typing_rules.gpuir.check_proc): collective and
                       distributed memory analyses; its thread mappings drive lowering
    from_gpuir         GPU IR -> GKIR: tasks, thread guards, loops, storage, abstract
                       sync and instruction nodes
    lower_instructions instruction calls -> CUDA / PTX (exact lowerings)
    lower_sync         Fence / Arrive / Await / mbarriers -> hardware barriers
    assign_smem        shared allocations -> offsets in dynamic shared memory
    split_roles        (setmaxnreg=True) each warp role's code in a branch of its
                       own headed by its setmaxnreg (`roles.py`)
    emit_cuda          text

`compile_proc(proc, defines)` -> `CompiledProc`: the `.cu` text (one kernel per
CudaDeviceFunction, launched in program order) and each kernel's launch. `run.py`
runs it and compares with the sequential reading; `faults.py` lists the seeded
miscompilations (GPUSEM_FAULT=gpuir-...) used to measure the oracle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from gpusem.calculus.errors import IllTyped
from gpusem.calculus.gpuir import ast as A
from gpusem.compiler.backends import KernelSpec, ptr, scalar
from gpusem.compiler.gpuir_cuda import kir as K
from gpusem.compiler.gpuir_cuda.emit import emit_cuda
from gpusem.compiler.gpuir_cuda.from_gpuir import from_gpuir
from gpusem.compiler.gpuir_cuda.host import host_as_kernel
from gpusem.compiler.gpuir_cuda.instr import FUSED_NEST, FusedNest, lower_instructions
from gpusem.compiler.gpuir_cuda.roles import (
    class_registers,
    split_roles,
    unroll_register_loops,
)
from gpusem.compiler.gpuir_cuda.smem import assign_smem
from gpusem.compiler.gpuir_cuda.sync import lower_sync


@dataclass(frozen=True, slots=True)
class CompiledProc:
    proc: str
    source: str
    kernels: tuple[K.GKernel, ...]
    defines: tuple[tuple[str, int], ...]

    def specs(self) -> list[KernelSpec]:
        """One KernelSpec per kernel (launch order)."""
        out = []
        for k in self.kernels:
            params = tuple(ptr(p.name, p.dtype, p.count) if p.count
                           else scalar(p.name, p.dtype) for p in k.params)
            out.append(KernelSpec(k.name, self.source, max(k.cluster, k.grid),
                                  k.block, k.smem_bytes, params, cluster=k.cluster))
        return out


def lower(proc: A.Proc, defines: Mapping[str, int], analysis=None,
          fused: FusedNest | None = None, setmaxnreg: bool = False
          ) -> list[K.GKernel]:
    """Every pass but the text: the lowered GKIR kernels. `fused`: the fused
    wgmma's nest (instr.FusedNest; None: instr.FUSED_NEST, the default);
    `setmaxnreg`: emit the warp config's register counts (`roles.py`) in every
    kernel whose warp config gives any (off by default: the kernels as before)."""
    from gpusem.typing_rules.gpuir.frontend import check_proc

    env = dict(defines)
    hosted = host_as_kernel(proc)
    if hosted is not proc:  # its host code as a kernel: analysed as such
        try:
            proc, analysis = hosted, check_proc(hosted, env)
        except IllTyped:
            pass  # not as a kernel: from_gpuir says what it does not lower
    an = analysis if analysis is not None else check_proc(proc, env)
    nest = FUSED_NEST if fused is None else fused
    kernels = _passes(from_gpuir(proc, an, pad_rows=True), env, nest, setmaxnreg)
    if not _fits(kernels):  # the padding does not fit
        kernels = _passes(from_gpuir(proc, an), env, nest, setmaxnreg)
    if not _fits(kernels):  # nor the fused nest's copy of A (FusedNest.a_copy)
        kernels = _passes(from_gpuir(proc, an), env, replace(nest, a_copy=False),
                          setmaxnreg)
    return kernels


def _fits(kernels: list[K.GKernel]) -> bool:
    return all(k.smem_bytes + k.static_smem_bytes <= SMEM_BYTES for k in kernels)


# The dynamic shared memory one block may have on sm_90 (227 KiB, opted in).
SMEM_BYTES = 227 * 1024


def _passes(kernels: list[K.GKernel], env: dict[str, int], nest: FusedNest,
            setmaxnreg: bool = False) -> list[K.GKernel]:
    def split(k: K.GKernel) -> bool:
        return setmaxnreg and any(r.dec or r.inc for r in k.roles)

    # a split kernel's compute warps have their setmaxnreg count: the fused nest's
    # chunk rule sizes its registers by it
    kernels = [lower_instructions(unroll_register_loops(k), {
        **env, "gs_class_regs": class_registers(k)}, nest) if split(k)
        else lower_instructions(k, env, nest) for k in kernels]
    kernels = [lower_sync(k, env) for k in kernels]
    return [split_roles(assign_smem(k)) if split(k) else assign_smem(k)
            for k in kernels]


def compile_proc(proc: A.Proc, defines: Mapping[str, int], *, analysis=None,
                 source: str = "", file: str = "<input>",
                 fused: FusedNest | None = None, setmaxnreg: bool = False
                 ) -> CompiledProc:
    kernels = lower(proc, defines, analysis, fused, setmaxnreg)
    defs = " ".join(f"{k}={v}" for k, v in sorted(defines.items()))
    header = (f"Generated by gpusem from {file}, proc {proc.name} "
              f"(GPU IR -> CUDA, Exo-GPU Section 4.2){'; ' + defs if defs else ''}.")
    text = emit_cuda(kernels, header, tuple(source.split("\n")))
    return CompiledProc(proc.name, text, tuple(kernels),
                        tuple(sorted(dict(defines).items())))
