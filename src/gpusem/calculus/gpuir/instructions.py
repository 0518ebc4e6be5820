"""The instruction library: g : Instr of Exo-GPU (Section 3.3, Figures 2, 19, 20).

Each instruction is one `Instr` declaration (calculus/gpuir/instr_decl.py says how
one is written; calculus/gpuir/instructions_ext.py adds the host copies, atomics and
TMA reductions Exo-GPU's programs use): its parameters (data: precision, window
shape, accepted memories, access mode and the Figure 19/20 annotations; control:
allowed values), its collective unit τ_u (the threads that must execute a call
together), the barrier type its trailing `>> z` needs (π_z), its sequential behaviour
(a Python function over NumPy views: the "statement body" g.s), and its CUDA C++ / PTX
spelling as a template (for the compiler). Adding an instruction is adding one
declaration to `INSTRUCTIONS`.

Conventions (paper -> Python):
  g.p_i                         -> `Instr.params[i]` (`InstrParam`)
  τ_x, π_d of g.p_i             -> `InstrParam.dtype`, `InstrParam.mems`
  out_of_order (T_ooo)          -> `InstrParam.out_of_order`
  convergent (T_cvg)            -> `InstrParam.convergent`
  τ_u* (distributed units)      -> `InstrParam.dist_units`
  initial_qual_tl (T_init)      -> `InstrParam.initial_qual_tl` (a QualTL name)
  ext_qual_tl (T_ext)           -> `InstrParam.ext_qual_tl`
  atomic_qual_tl (T_atom)       -> `InstrParam.atomic_qual_tl`
  g.τ_u, g.π_z, t (CPU/CUDA)    -> `Instr.unit`, `Instr.barrier`, `Instr.device`

Note: Section 5.2.3 derives a parameter's access mode by a static analysis of g.s;
our g.s is Python, so the mode is declared (`access`) and tests/gpuir/
test_instructions.py checks each declaration against the behaviour by running it.

Note: `initial_qual_tl = None` (and `ext_qual_tl = None`) means "as an ordinary
in-order access": T_qin of the argument's memory (Figure 18), so one synchronous copy
serves registers and shared/global memory alike. `initial_qual(param, memory)`
resolves it.

Note: accumulating async MMAs (wgmma) mark D atomic on wgmma_async_rmem_d_qual
(Figure 19's atomic case): back-to-back wgmmas into one accumulator are ordered by
the tensor core pipeline and need no wait between them, only before D is read
in order (Arrive(wgmma_async) >> commit group; Await).

Note on exactness: the behaviours of the MMA instructions accumulate in float32 one
k at a time, rounding after every multiply and every add (no FMA), the reference
order of the sequential reading; real tensor cores (tf32 inputs, wider internal
accumulation) may differ in the last bits. See errata "MMA rounding".
`Sm90_wgmma_m64nNk8_f32_fma` (ours) rounds once a step instead: d = fma(a, b, d),
k ascending (errata "Extension: fused mma").
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
from gpusem.calculus.fma32 import mma_fused
from gpusem.calculus.gpuir.ast import UnitExpr
from gpusem.calculus.gpuir.instr_decl import (
    ANY_CUDA,
    GMEM,
    SM80,
    SMEM,
    TMA_G,
    TMA_S,
    WG_D,
    WG_S,
    Access,
    Instr,
    InstrParam,
    View,
    async_quals,
    ctrl_param,
    data_param,
    ext_quals,
    initial_qual,
    warp_sync,
)
from gpusem.calculus.gpuir.instructions_ext import EXT_DECLS

__all__ = ["INSTRUCTIONS", "Instr", "InstrParam", "ext_quals", "initial_qual",
           "lookup"]


def _data(name: str, shape: Iterable[int | str], mems: Iterable[str] = ANY_CUDA,
          access: Access = "read", **kw: Any) -> InstrParam:
    return data_param(name, shape, mems, access, **kw)


_ctrl = ctrl_param
_async = async_quals
_warp_sync = warp_sync


# ------------------------------------------------------------------- behaviours
# Each mutates its output views in place; every arithmetic step stays in float32.


def _copy(dst: View, src: View) -> None:
    dst[...] = src


def _store(dst: View, d: View) -> None:
    dst[...] = d


def _multicast(dst: View, src: View) -> None:
    dst[...] = src[np.newaxis]


def _mma_nt(d: View, a: View, b: View) -> None:
    """d[m, n] += sum_k a[m, k] * b[n, k], one k at a time, float32 throughout."""
    acc = d.astype(np.float32)
    for k in range(a.shape[1]):
        acc = acc + np.multiply.outer(a[:, k], b[:, k]).astype(np.float32)
    d[...] = acc


def _mma_nt_fused(d: View, a: View, b: View) -> None:
    """d[m, n] = fma(a[m, k], b[n, k], d[m, n]) for k ascending, each step rounded
    once to float32 (calculus/fma32.py; errata "Extension: fused mma")."""
    d[...] = mma_fused(d, a, np.asarray(b).T)


def _zero(d: View) -> None:
    d[...] = 0


def _load_transposed(dst: View, src: View) -> None:
    dst[...] = src.T


def _shfl_down(dst: View, src: View, delta: int) -> None:
    lane = np.arange(src.shape[0])
    srcl = np.where(lane + delta < src.shape[0], lane + delta, lane)
    dst[...] = src[srcl]


def _shfl_xor(dst: View, src: View, mask: int) -> None:
    lane = np.arange(src.shape[0])
    dst[...] = src[lane ^ mask]


# -------------------------------------------------------------------- the library

# wgmma's operands (Figure 19's atomic accumulator, async shared-memory operands),
# shared by the tf32 wgmma and our fused one, which differ only in the arithmetic.
_WGMMA_PARAMS = (
    _data("d", (64, "n"), ("Sm90_RmemMatrixD",), "readwrite", convergent=True,
          atomic_qual_tl=frozenset({WG_D}), **_async(WG_D)),
    _data("a", (64, 8), SMEM, convergent=True, **_async(WG_S)),
    _data("b", ("n", 8), SMEM, convergent=True, **_async(WG_S)))

_DECLS: tuple[Instr, ...] = (
    Instr(
        "cuda_copy_f32",
        (_data("dst", ("n",), access="write"), _data("src", ("n",))),
        UnitExpr("cuda_thread"), _copy,
        cuda="for (int i = 0; i < {n}; i++) {dst}[i] = {src}[i];",
        ptx="ld / st (synchronous)",
        doc="synchronous element-wise copy by one thread",
    ),
    Instr(
        "Sm80_cp_async_f32",
        (_data("dst", ("n",), SMEM, "write", **_async(SM80)),
         _data("src", ("n",), GMEM, **_async(SM80))),
        UnitExpr("cuda_thread"), _copy,
        cuda='asm volatile("cp.async.ca.shared.global [%0], [%1], {bytes};" :: '
             '"r"(smem_addr({dst})), "l"({src}));',
        ptx="cp.async.ca.shared.global [dst], [src], 4*n;",
        sizes={"n": (1, 2, 4)},
        doc="Sm80 non-bulk asynchronous copy GMEM -> SMEM of 4, 8 or 16 bytes; waited "
            "for with Arrive(Sm80_cp_async) >> commit group / Await",
    ),
    Instr(
        "Sm90_tma_load_2d_f32",
        (_data("dst", ("m", "n"), SMEM, "write", **_async(TMA_S)),
         _data("src", ("m", "n"), GMEM + ("Sm90_tensorMap",), **_async(TMA_S))),
        UnitExpr("cuda_thread"), _copy,
        cuda="cuda::device::experimental::cp_async_bulk_tensor_2d_global_to_shared("
             "{dst}, &{src_map}, {src_c1}, {src_c0}, {barrier});",
        ptx="cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
            "complete_tx::bytes "
            "[dst], [tmap, {c1, c0}], [mbar];",
        barrier="CudaMbarrier",
        doc="TMA-style bulk tile load GMEM -> SMEM, completing on an mbarrier",
    ),
    Instr(
        "Sm90_tma_multicast_2d_f32",
        (_data("dst", ("c", "m", "n"), SMEM, "write", convergent=True,
               dist_units=("cuda_cta_in_cluster",), **_async(TMA_S)),
         _data("src", ("m", "n"), GMEM + ("Sm90_tensorMap",), convergent=True,
               **_async(TMA_S))),
        UnitExpr("cuda_cluster"), _multicast,
        cuda="cuda::device::experimental::cp_async_bulk_tensor_2d_global_to_shared_"
             "multicast({dst}, &{src_map}, {src_c1}, {src_c0}, {barrier}, {cta_mask});",
        ptx="cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
            ".multicast::cluster [dst], [tmap, {c1, c0}], [mbar], mask;",
        barrier="CudaMbarrier",
        doc="TMA multicast: one tile copied into the SMEM of every CTA of the cluster "
            "(the dst's leading dimension is distributed over CTAs)",
    ),
    Instr(
        "Sm90_tma_store_2d_f32",
        (_data("dst", ("m", "n"), GMEM + ("Sm90_tensorMap",), "write", **_async(TMA_G)),
         _data("src", ("m", "n"), SMEM, **_async(TMA_G))),
        UnitExpr("cuda_thread"), _copy,
        cuda="cuda::device::experimental::cp_async_bulk_tensor_2d_shared_to_global("
             "&{dst_map}, {dst_c1}, {dst_c0}, {src});",
        ptx="cp.async.bulk.tensor.2d.global.shared::cta.bulk_group "
            "[tmap, {c1, c0}], [src];",
        doc="TMA-style bulk tile store SMEM -> GMEM; waited for with "
            "Arrive(tma_to_gmem_async) >> commit group / Await",
    ),
    Instr(
        "Sm80_mma_load_a_f32",
        (_data("dst", (16, 8), ("Sm80_RmemMatrixA",), "write", **_warp_sync()),
         _data("src", (16, 8), SMEM + GMEM, convergent=True)),
        UnitExpr("cuda_warp"), _copy,
        cuda="exo_Sm80_load_a_tf32({dst}, {src}, {src_stride});",
        ptx="ldmatrix.sync.aligned.m8n8.x4.shared.b16 / ld.shared per fragment",
        doc="warp loads a 16x8 (M x K) A fragment",
    ),
    Instr(
        "Sm80_mma_load_b_f32",
        (_data("dst", (8, 8), ("Sm80_RmemMatrixB",), "write", **_warp_sync()),
         _data("src", (8, 8), SMEM + GMEM, convergent=True)),
        UnitExpr("cuda_warp"), _load_transposed,
        cuda="exo_Sm80_load_b_tf32({dst}, {src}, {src_stride});",
        ptx="ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 / ld.shared per fragment",
        doc="warp loads an 8x8 (K x N) B tile into an N x K fragment",
    ),
    Instr(
        "Sm80_mma_zero_d_f32",
        (_data("d", (16, 8), ("Sm80_RmemMatrixD",), "write", **_warp_sync()),),
        UnitExpr("cuda_warp"), _zero,
        cuda="for (int i = 0; i < 4; i++) {d}[i] = 0.0f;", ptx="mov.f32 (x4)",
        doc="warp zeroes a 16x8 accumulator fragment",
    ),
    Instr(
        "Sm80_mma_m16n8k8_f32",
        (_data("d", (16, 8), ("Sm80_RmemMatrixD",), "readwrite", **_warp_sync()),
         _data("a", (16, 8), ("Sm80_RmemMatrixA",), **_warp_sync()),
         _data("b", (8, 8), ("Sm80_RmemMatrixB",), **_warp_sync())),
        UnitExpr("cuda_warp"), _mma_nt,
        cuda='asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 '
             '{{%0,%1,%2,%3}}, {{%4,%5,%6,%7}}, {{%8,%9}}, {{%0,%1,%2,%3}};" ...);',
        ptx="mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 d, a, b, d;",
        doc="warp MMA: D[16x8] += A[16x8] . B[8x8]^T (B stored N x K)",
    ),
    Instr(
        "Sm80_mma_store_d_f32",
        (_data("dst", (16, 8), SMEM + GMEM, "write", convergent=True),
         _data("d", (16, 8), ("Sm80_RmemMatrixD",), **_warp_sync())),
        UnitExpr("cuda_warp"), _store,
        cuda="exo_Sm80_store_d({dst}, {d}, {dst_stride});", ptx="st.f32 per fragment",
        doc="warp stores a 16x8 accumulator fragment",
    ),
    Instr(
        "Sm90_wgmma_zero_d_f32",
        (_data("d", (64, "n"), ("Sm90_RmemMatrixD",), "write", **_warp_sync()),),
        UnitExpr("cuda_warpgroup"), _zero,
        cuda="for (int i = 0; i < {n} / 2; i++) {d}[i] = 0.0f;", ptx="mov.f32",
        sizes={"n": tuple(range(8, 257, 8))},
        doc="warpgroup zeroes a 64 x n wgmma accumulator",
    ),
    Instr(
        "Sm90_wgmma_m64nNk8_f32", _WGMMA_PARAMS, UnitExpr("cuda_warpgroup"), _mma_nt,
        cuda='asm volatile("wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 '
             '{{...}}, {a_desc}, {b_desc}, 1, 1, 1;" ...);',
        ptx="wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 d, a-desc, b-desc;",
        sizes={"n": tuple(range(8, 257, 8))},
        doc="wgmma-style async MMA: D[64 x n] += A[64x8] . B[n x 8]^T, operands in "
            "SMEM; waited for with Arrive(wgmma_async) >> commit group / Await",
    ),
    Instr(
        # ours, not Exo-GPU's (errata "Extension: fused mma"): the wgmma whose
        # meaning is one fma a step, for the Cypress leaf `mma_fma`; no tensor core
        # computes it, gpuir_cuda emulates it with __fmaf_rn (FFMA).
        "Sm90_wgmma_m64nNk8_f32_fma", _WGMMA_PARAMS, UnitExpr("cuda_warpgroup"),
        _mma_nt_fused,
        cuda="gs_ffma(a[m, k], b[n, k], d[m, n]) for k ascending (emulation)",
        ptx="fma.rn.f32 d, a, b, d (per element and k)",
        sizes={"n": tuple(range(8, 257, 8))},
        doc="fused async MMA: D[64 x n] = fma(A[64x8], B[n x 8]^T, D) one k at a "
            "time, one rounding a step; synchronised as Sm90_wgmma_m64nNk8_f32",
    ),
    Instr(
        "Sm90_wgmma_store_d_f32",
        (_data("dst", (64, "n"), SMEM + GMEM, "write", convergent=True),
         _data("d", (64, "n"), ("Sm90_RmemMatrixD",), **_warp_sync())),
        UnitExpr("cuda_warpgroup"), _store,
        cuda="exo_Sm90_store_d({dst}, {d}, {dst_stride});", ptx="st.f32 per fragment",
        sizes={"n": tuple(range(8, 257, 8))},
        doc="warpgroup stores a 64 x n accumulator",
    ),
    Instr(
        "cuda_shfl_down_f32",
        (_data("dst", (32,), ("CudaRmem",), "write", dist_units=("cuda_thread",),
               **_warp_sync()),
         _data("src", (32,), ("CudaRmem",), dist_units=("cuda_thread",),
               **_warp_sync()),
         _ctrl("delta", range(0, 32))),
        UnitExpr("cuda_warp"), _shfl_down,
        cuda="{dst} = __shfl_down_sync(0xffffffff, {src}, {delta});",
        ptx="shfl.sync.down.b32 dst, src, delta, 0x1f, 0xffffffff;",
        doc="warp shuffle down: lane i gets lane i+delta's value (its own past 31)",
    ),
    Instr(
        "cuda_shfl_xor_f32",
        (_data("dst", (32,), ("CudaRmem",), "write", dist_units=("cuda_thread",),
               **_warp_sync()),
         _data("src", (32,), ("CudaRmem",), dist_units=("cuda_thread",),
               **_warp_sync()),
         _ctrl("mask", range(0, 32))),
        UnitExpr("cuda_warp"), _shfl_xor,
        cuda="{dst} = __shfl_xor_sync(0xffffffff, {src}, {mask});",
        ptx="shfl.sync.bfly.b32 dst, src, mask, 0x1f, 0xffffffff;",
        doc="warp butterfly shuffle: lane i gets lane (i xor mask)'s value",
    ),
)

INSTRUCTIONS: dict[str, Instr] = {g.name: g for g in _DECLS + EXT_DECLS}


def lookup(name: str) -> Instr | None:
    return INSTRUCTIONS.get(name)
