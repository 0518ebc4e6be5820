"""Instructions added for Exo-GPU's own programs (issue 16): stream-ordered host copies,
atomics and TMA reductions. Declared like the rest of the library
(calculus/gpuir/instr_decl.py); `INSTRUCTIONS` (calculus/gpuir/instructions.py)
includes them. Names and argument orders follow Exo-GPU's (branch akeley98/pldi26,
`exo.platforms.cuda` / `Sm80` / `Sm90`), so its procs translate call for call.

  cudaMemcpyAsync_{htod,dtoh}_{1,2}{f32,i32}, cudaMemsetAsync0_{1,2}{f32,i32}
      CPU instructions that are stream-ordered CUDA API calls (Figure 15's
      cpu_cuda_stream_qual, "strm"): sizes first, then dst, then src, as in Exo-GPU.
      Both sides are accessed on strm: after everything the host did before the call
      (the conversion puts the CPU -> stream ordering of the call in front of it:
      interpreter/amir/from_gpuir.py, errata "Stream-ordered host copies"), and before
      the host sees the result only through a stream synchronisation,
      `Fence(cuda_stream_sync, cpu_in_order)`.
  cuda_atomic_add_{f32,i32}
      one thread's atomicAdd of each element of src into dst (global or shared
      memory): Figure 19's atomic case, atomic on cuda_in_order_ram_qual, as Exo-GPU's
      atomic reductions (`Sm80_mma_atomic_reduce_d_*`) declare theirs.
  Sm90_tma_multicast_warps_2d_f32(ncta, cta_stride, dst, src) >> z
      the TMA multicast as Exo-GPU's Hopper GEMM issues it: run by one warp in each of
      ncta CTAs, cta_stride apart (unit `ncta * cuda_warp_in_cluster_strided
      (cta_stride)`); each loads its share of the tile and multicasts it, so every
      CTA's dst receives the whole src (dst's leading dimension is distributed over
      the CTAs); completes on the mbarrier.
  Sm90_tma_reduce_add_2d_f32
      cp.reduce.async.bulk.tensor .add: an asynchronous SMEM -> GMEM tile reduction,
      atomic on tma_to_gmem_async_qual (Exo-GPU's `Sm90_reduce_tensor_to_gmem_*`);
      waited for like the TMA store (Arrive(tma_to_gmem_async) >> commit group).

Note on exactness: a float32 atomic sum depends on the order of the additions, which
the parallel program does not fix; the sequential reading adds in program order. Only
integer atomics are exact in every order (errata "Atomics and seq = par").
"""

from __future__ import annotations

from gpusem.calculus.gpuir.ast import DataType, UnitExpr
from gpusem.calculus.gpuir.instr_decl import (
    ANY_CUDA,
    GMEM,
    HOST,
    RAM,
    SMEM,
    STRM,
    TMA_G,
    TMA_S,
    Access,
    Instr,
    InstrParam,
    View,
    async_quals,
    ctrl_param,
    data_param,
)

# ------------------------------------------------------------------- behaviours


def _copy(dst: View, src: View, **_sizes: int) -> None:
    dst[...] = src


def _zero(dst: View, **_sizes: int) -> None:
    dst[...] = 0


def _add(dst: View, src: View, **_sizes: int) -> None:
    """dst += src element by element, in the destination's precision (float32
    rounding once per element; int32 wrapping)."""
    dst[...] = (dst + src.astype(dst.dtype)).astype(dst.dtype)


# --------------------------------------------------------- stream-ordered host copies

_STREAM = frozenset({STRM})
_CPU_UNIT = UnitExpr("standalone_thread")
_DIMS = {1: ("n",), 2: ("M", "N")}
_TYPES = {"f32": DataType.F32, "i32": DataType.I32}
_WAYS = {"htod": "host -> device", "dtoh": "device -> host"}


def _stream_side(name: str, dims: tuple[str, ...], mems: tuple[str, ...],
                 access: Access, dtype: DataType) -> InstrParam:
    return data_param(name, dims, mems, access, dtype=dtype, initial_qual_tl=STRM,
                      ext_qual_tl=_STREAM)


def _memcpy(direction: str, rank: int, ty: str) -> Instr:
    dims, dtype = _DIMS[rank], _TYPES[ty]
    dst_mem, src_mem = (GMEM, HOST) if direction == "htod" else (HOST, GMEM)
    kind = "cudaMemcpyHostToDevice" if direction == "htod" else "cudaMemcpyDeviceToHost"
    size = " * ".join(f"{{{d}}}" for d in dims)
    return Instr(
        f"cudaMemcpyAsync_{direction}_{rank}{ty}",
        (*(ctrl_param(d, size_of=d) for d in dims),
         _stream_side("dst", dims, dst_mem, "write", dtype),
         _stream_side("src", dims, src_mem, "read", dtype)),
        _CPU_UNIT, _copy,
        cuda=f"cudaMemcpyAsync({{dst}}, {{src}}, 4 * {size}, {kind}, stream);",
        ptx="(host API call)", device=False, stream=True,
        doc=f"stream-ordered copy, {_WAYS[direction]}",
    )


def _memset(rank: int, ty: str) -> Instr:
    dims, dtype = _DIMS[rank], _TYPES[ty]
    size = " * ".join(f"{{{d}}}" for d in dims)
    return Instr(
        f"cudaMemsetAsync0_{rank}{ty}",
        (*(ctrl_param(d, size_of=d) for d in dims),
         _stream_side("dst", dims, GMEM, "write", dtype)),
        _CPU_UNIT, _zero,
        cuda=f"cudaMemsetAsync({{dst}}, 0, 4 * {size}, stream);",
        ptx="(host API call)", device=False, stream=True,
        doc="stream-ordered zero fill of device memory",
    )


_HOST_DECLS: tuple[Instr, ...] = tuple(
    [_memcpy(d, r, t) for d in ("htod", "dtoh") for r in (1, 2) for t in ("f32", "i32")]
    + [_memset(r, t) for r in (1, 2) for t in ("f32", "i32")])

# --------------------------------------------------------------------- atomics


def _atomic_add(ty: str) -> Instr:
    dtype = _TYPES[ty]
    return Instr(
        f"cuda_atomic_add_{ty}",
        (data_param("dst", ("n",), GMEM + SMEM, "readwrite", dtype=dtype,
                    atomic_qual_tl=frozenset({RAM})),
         data_param("src", ("n",), ANY_CUDA, dtype=dtype)),
        UnitExpr("cuda_thread"), _add,
        cuda="for (int i = 0; i < {n}; i++) atomicAdd(&{dst}[i], {src}[i]);",
        ptx=f"red.global.add.{'f32' if ty == 'f32' else 's32'} (per element)",
        doc="one thread atomically adds each element of src into dst",
    )


def _multicast(dst: View, src: View, **_sizes: int) -> None:
    dst[...] = src[None]


_TMA_DECLS: tuple[Instr, ...] = (
    Instr(
        "Sm90_tma_multicast_warps_2d_f32",
        (ctrl_param("ncta", size_of="c"), ctrl_param("cta_stride", (1, 2, 4, 8)),
         data_param("dst", ("c", "m", "n"), SMEM, "write", convergent=True,
                    dist_units=("cuda_cta_in_cluster",), **async_quals(TMA_S)),
         data_param("src", ("m", "n"), GMEM + ("Sm90_tensorMap",), convergent=True,
                    **async_quals(TMA_S))),
        UnitExpr("cuda_warp_in_cluster_strided", 1, (1,)), _multicast,
        cuda="cp_async_bulk_tensor_2d_global_to_shared_multicast({dst}, &{src_map}, "
             "{src_c1}, {src_c0}, {barrier}, {cta_mask});",
        ptx="cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
            ".multicast::cluster [dst], [tmap, {c1, c0}], [mbar], mask;",
        barrier="CudaMbarrier", unit_params=("ncta", "cta_stride"),
        doc="TMA multicast issued by one warp in each of ncta CTAs (Exo-GPU's "
            "Sm90_multicast_copy_tensor_to_smem_swizzled_2f32)",
    ),
)

_ATOMIC_DECLS: tuple[Instr, ...] = (
    _atomic_add("f32"),
    _atomic_add("i32"),
    Instr(
        "Sm90_tma_reduce_add_2d_f32",
        (data_param("dst", ("m", "n"), GMEM + ("Sm90_tensorMap",), "readwrite",
                    atomic_qual_tl=frozenset({TMA_G}), **async_quals(TMA_G)),
         data_param("src", ("m", "n"), SMEM, **async_quals(TMA_G))),
        UnitExpr("cuda_thread"), _add,
        cuda="cp_reduce_async_bulk_tensor_2d_shared_to_global_add("
             "&{dst_map}, {dst_c1}, {dst_c0}, {src});",
        ptx="cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.bulk_group "
            "[tmap, {c1, c0}], [src];",
        doc="TMA tile reduction SMEM -> GMEM (dst += src), asynchronous; waited for "
            "with Arrive(tma_to_gmem_async) >> commit group / Await",
    ),
)

EXT_DECLS: tuple[Instr, ...] = _HOST_DECLS + _TMA_DECLS + _ATOMIC_DECLS
