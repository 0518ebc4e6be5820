"""Each pass of the GPU IR -> CUDA pipeline alone (IR in, IR out), with independent
expectations: the barrier a collective needs (Exo-GPU Section 4.2 / Figure 16), the
C spelling of exact arithmetic, storage placement, thread guards."""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.calculus.gpuir.units import Launch
from gpusem.compiler.gpuir_cuda import cexpr
from gpusem.compiler.gpuir_cuda import kir as K
from gpusem.compiler.gpuir_cuda.emit import emit_cuda
from gpusem.compiler.gpuir_cuda.errors import CompileError
from gpusem.compiler.gpuir_cuda.from_gpuir import from_gpuir, membership
from gpusem.compiler.gpuir_cuda.instr import lower_instructions
from gpusem.compiler.gpuir_cuda.pipeline import compile_proc, lower
from gpusem.compiler.gpuir_cuda.smem import assign_smem
from gpusem.compiler.gpuir_cuda.sync import lower_sync
from gpusem.typing_rules.gpuir.collective import ThreadMapping
from gpusem.typing_rules.gpuir.frontend import check_proc

L256 = Launch(256, 1)


def kernel_of(*body: K.GStmt, launch: Launch = L256) -> K.GKernel:
    return K.GKernel("k", (), 1, launch.block_dim, launch.cluster_dim, tuple(body))


def prims(k: K.GKernel) -> list[str]:
    return [s.text for s in K.walk(k.body) if isinstance(s, K.GPrim)]


def fence_text(m: ThreadMapping, pre="cuda_in_order", post="cuda_in_order"):
    return prims(lower_sync(kernel_of(K.GFence(m, pre, post)), {}))


# ------------------------------------------------------------------ lower_sync
def test_fence_by_a_cta_is_syncthreads():
    assert fence_text(ThreadMapping.run(L256, 1, 256, 0)) == ["__syncthreads();"]


def test_fence_by_one_warp_is_syncwarp():
    assert fence_text(ThreadMapping.run(L256, 1, 32, 0, (("w", A.CInt(0), 32),))) == \
        ["__syncwarp();"]


def test_fence_by_one_thread_needs_no_barrier():
    assert fence_text(ThreadMapping.run(L256, 1, 1, 0, (("t", A.CInt(0), 1),))) == []


def test_fence_by_a_warpgroup_is_a_named_barrier_per_position():
    # two warpgroups of a 256-thread CTA run concurrently: ids 1 and 2, 128 threads
    m = ThreadMapping.run(L256, 1, 128, 0, (("wg", A.CInt(0), 128),))
    (text,) = fence_text(m)
    assert text.startswith("gs_bar_sync(1 + ") and text.endswith(", 128);")
    wg = 1
    slot = eval(text[len("gs_bar_sync(1 + "):-len(", 128);")].replace("/", "//"),
                {"wg": wg})
    assert 1 + slot == 2


def test_named_barrier_ids_do_not_overlap_between_sizes():
    wg = ThreadMapping.run(L256, 1, 128, 0, (("wg", A.CInt(0), 128),))
    two = ThreadMapping.run(L256, 1, 64, 0, (("p", A.CInt(0), 64),))
    k = lower_sync(kernel_of(K.GFence(wg, "cuda_in_order", "cuda_in_order"),
                             K.GFence(two, "cuda_in_order", "cuda_in_order")), {})
    texts = prims(k)
    assert texts[0].startswith("gs_bar_sync(1 + ")   # 128: ids 1, 2
    assert texts[1].startswith("gs_bar_sync(3 + ")   # 64: ids 3 .. 6


def test_fence_on_cp_async_waits_for_the_copies_first():
    texts = fence_text(ThreadMapping.run(L256, 1, 256, 0), pre="Sm80_cp_async")
    assert texts == ["gs_cp_async_wait_all();", "__syncthreads();"]


def test_fence_to_the_async_proxy_fences_the_proxy():
    texts = fence_text(ThreadMapping.run(L256, 1, 256, 0), post="cuda_async_proxy")
    assert texts == ["gs_fence_proxy_async();", "__syncthreads();"]


def test_fence_on_register_timelines_needs_no_barrier():
    # wgmma_fence_1 orders in-order and wgmma register accesses: one thread's own
    m = ThreadMapping.run(L256, 1, 128, 0, (("wg", A.CInt(0), 128),))
    assert fence_text(m, pre="wgmma_fence_1", post="wgmma_fence_2") == []
    # cuda_temporal has no "full" entries but still needs the barrier (temporal)
    assert fence_text(ThreadMapping.run(L256, 1, 256, 0), pre="cuda_temporal") == \
        ["__syncthreads();"]


def test_fence_over_a_cluster_is_a_cluster_barrier():
    launch = Launch(128, 2)
    texts = fence_text(ThreadMapping.run(launch, 1, 256, 0))
    # gs_cluster_arrive/wait: barrier.cluster.arrive.release / wait.acquire under
    # nvcc, the harness's cluster barrier on the cpu backend
    assert texts == ["gs_cluster_arrive();", "gs_cluster_wait();"]


def test_mbarrier_await_tracks_parity_per_cell():
    m = ThreadMapping.run(L256, 1, 256, 0)
    ref = K.BarRef("full", "mbarrier", "k % 2")
    k = lower_sync(kernel_of(K.GMbarriers("full", 2, 256, False),
                             K.GArrive(m, "cuda_in_order", 1, (ref,)),
                             K.GAwait(m, ref, "cuda_in_order", -1)), {})
    texts = prims(k)
    assert any("gs_mbar_init(&full[gs_i], 256u)" in t for t in texts)
    assert "gs_mbar_arrive(&full[k % 2]);" in texts
    assert "gs_mbar_wait_parity(&full[k % 2], (gs_ph_full >> (k % 2)) & 1u);" in texts
    assert "gs_ph_full ^= 1u << (k % 2);" in texts


def test_commit_group_is_cp_async_commit_and_wait_group():
    m = ThreadMapping.run(L256, 1, 1, 0, (("t", A.CInt(0), 1),))
    ref = K.BarRef("cg", "commit_cp_async", "0")
    k = lower_sync(kernel_of(K.GArrive(m, "Sm80_cp_async", 1, (ref,)),
                             K.GAwait(m, ref, "cuda_in_order", 1)), {})
    assert prims(k) == ["gs_cp_async_commit();", "gs_cp_async_wait_group(1);"]


def test_tma_arrive_expects_its_bytes_from_one_thread():
    m = ThreadMapping.run(L256, 1, 1, 0, (("t", A.CInt(0), 1),))
    ref = K.BarRef("full", "mbarrier", "0")
    (text,) = prims(lower_sync(kernel_of(
        K.GArrive(m, "tma_to_smem_async", 1, (ref,), 32768)), {}))
    assert "gs_mbar_arrive_expect_tx(&full[0], 32768u)" in text


# ------------------------------------------------------------------- cexpr
def test_float_literals_round_like_numpy():
    for v in (0.1, 1.0 / 3.0, 1e-40, 3.4028235e38, -0.0, 7):
        text = cexpr.literal(v, A.DataType.F32)
        assert text.endswith("f")
        body = text[:-1]
        parsed = np.float32(float.fromhex(body)) if "p" in body else np.float32(body)
        want = np.asarray(v).astype(np.float32)
        assert parsed.tobytes() == want.tobytes(), (v, text)


def test_data_arithmetic_uses_exact_helpers():
    e = A.DBin("+", A.DBin("*", A.DRead("a"), A.DRead("b")), A.DConst(1))
    text = cexpr.c_data(e, A.DataType.F32, lambda r: (r.name, A.DataType.F32))
    assert text == "gs_fadd(gs_fmul(a, b), 1.0f)"  # no FMA: two rounded operations
    text = cexpr.c_data(e, A.DataType.I32, lambda r: (r.name, A.DataType.F32))
    assert text == "gs_add_i32(gs_mul_i32(gs_f2i(a), gs_f2i(b)), 1)"


def test_control_division_truncates_like_c():
    c = A.CBin("%", A.CBin("/", A.CVar("t"), A.CInt(8)), A.CInt(2))
    assert cexpr.c_int(c) == "gs_rem_i32(gs_div_i32(t, 8), 2)"


def test_unsupported_precision_is_reported():
    with pytest.raises(CompileError, match="^unsupported: data type f16"):
        cexpr.ctype(A.DataType.F16)


# ----------------------------------------------------------- from_gpuir
SMALL = """\
proc small(A: f32[64] @ CudaGmemLinear, B: f32[64] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=64):
        for task in cuda_tasks(0, 1):
            buf: f32[64] @ CudaSmemLinear
            part: f32[2, 32] @ CudaRmem
            for w in cuda_threads(0, 2, unit=cuda_warp):
                for lane in cuda_threads(0, 16, unit=cuda_thread):
                    buf[w * 32 + lane] = A[w * 32 + lane]
                    part[w, lane] = A[lane]
                Fence(cuda_in_order, cuda_in_order)
            Fence(cuda_in_order, cuda_in_order)
"""


def small_kernel():
    proc = parse_module(SMALL, "small.gpuir").procs[0]
    (k,) = from_gpuir(proc, check_proc(proc, {}))
    return k


def test_launch_shape_and_parameters():
    k = small_kernel()
    assert (k.grid, k.block, k.cluster) == (1, 64, 1)
    assert [(p.name, p.count) for p in k.params] == [("A", 64), ("B", 64)]


def test_storage_by_memory_type():
    k = small_kernel()
    stmts = list(K.walk(k.body))
    (shared,) = [s for s in stmts if isinstance(s, K.GShared)]
    (local,) = [s for s in stmts if isinstance(s, K.GLocal)]
    assert (shared.name, shared.count) == ("buf", 64)
    # part[2, 32] is distributed over the 64 threads: one register each
    assert (local.name, local.count) == ("part", 1)


def test_thread_loops_become_guards_from_the_tilings():
    k = small_kernel()
    guards = [s.cond for s in K.walk(k.body) if isinstance(s, K.GIf)]
    assert "gs_rel_lane < 16" in guards   # 16 of each warp's 32 lanes take part
    lets = {s.name: s.expr for s in K.walk(k.body) if isinstance(s, K.GLet)}
    assert lets["w"] == "gs_rel_w / 32" and lets["gs_rel_lane"] == "gs_t - (w * 32)"
    fences = [s for s in K.walk(k.body) if isinstance(s, K.GFence)]
    assert [f.mapping.size for f in fences] == [32, 64]


def test_thread_guard_selects_exactly_the_collective():
    """membership(m) read back as Python agrees with ThreadMapping.threads."""
    launch = Launch(128, 2)
    m = ThreadMapping.run(launch, 2, 32, 32, (("w", A.CInt(0), 32),))
    text = membership(m, {})
    cond = text.replace("(unsigned)", "_u").replace("&&", "and").replace("u ", " ")
    for w in range(3):
        want = set(m.threads({"w": w}))
        got = {t for t in range(256)
               if eval(cond, {"_u": lambda x: x % 2**32, "gs_t": t, "w": w})}
        assert got == want


# --------------------------------------------------- instructions, smem, emit
def test_shuffle_lowers_to_shfl_sync():
    m = ThreadMapping.run(L256, 1, 32, 0, (("w", A.CInt(0), 32),))
    dst = K.Window("tmp", "local", "float", "0", ())
    src = K.Window("part", "local", "float", "0", ())
    k = lower_instructions(kernel_of(K.GInstr(m, "cuda_shfl_xor_f32",
                                              (dst, src, "16"), None)), {})
    assert prims(k) == ["tmp[0] = __shfl_xor_sync(0xffffffffu, part[0], 16);"]


def test_cp_async_moves_the_window_bytes():
    m = ThreadMapping.run(L256, 1, 1, 0, (("t", A.CInt(0), 1),))
    dst = K.Window("buf", "shared", "float", "t", ((4, 1),))
    src = K.Window("A", "global", "float", "t", ((4, 1),))
    k = lower_instructions(kernel_of(K.GInstr(m, "Sm80_cp_async_f32", (dst, src),
                                              None)), {})
    assert prims(k) == ["gs_cp_async(&buf[t], &A[t], 16);"]


def test_unknown_instruction_lowering_is_unsupported():
    m = ThreadMapping.run(L256, 1, 1, 0)
    with pytest.raises(CompileError, match="^unsupported: instruction"):
        lower_instructions(kernel_of(K.GInstr(m, "Sm90_tma_store_2d_f32", (), None)),
                           {})


def test_shared_allocations_get_aligned_offsets():
    k = assign_smem(kernel_of(K.GShared("a", "float", 3), K.GShared("b", "gs_u64", 2),
                              K.GShared("c", "float", 1)))
    texts = prims(k)
    assert "(gs_smem + 0)" in texts[0] and "(gs_smem + 16)" in texts[1] \
        and "(gs_smem + 32)" in texts[2]
    assert k.smem_bytes == 48


def test_emitted_kernel_is_extern_c_and_exact():
    proc = parse_module(SMALL, "small.gpuir").procs[0]
    text = compile_proc(proc, {}, source=SMALL, file="small.gpuir").source
    assert text.startswith("// Generated by gpusem")
    assert '#include "gpusem_rt.cuh"' in text
    assert 'extern "C" __global__ void __launch_bounds__(64) small(float * A, ' \
        "float * B)" in text
    assert "// 8: buf[w * 32 + lane] = A[w * 32 + lane]" in text  # source lines


def test_lower_leaves_only_printable_statements():
    proc = parse_module(SMALL, "small.gpuir").procs[0]
    for k in lower(proc, {}):
        kinds = {type(s) for s in K.walk(k.body)}
        assert kinds <= {K.GPrim, K.GComment, K.GLet, K.GFor, K.GIf, K.GLocal}
    assert emit_cuda(lower(proc, {}), "h").count("__global__") == 1


# ---------------------------------------------------------------- storage
def test_distributed_dimensions_are_the_owner_prefix():
    from gpusem.compiler.gpuir_cuda.storage import leading_dims

    assert leading_dims((4, 32), 128) == 2      # part[w, lane] over 128 threads
    assert leading_dims((2, 64, 128), 2) == 1   # D[wg, ...] over two warpgroups
    assert leading_dims((128,), 1) == 0         # one owner: nothing distributed
    assert leading_dims((3, 5), 4) is None      # no prefix fits: replicate


def test_window_extent_of_quasi_affine_bounds():
    from gpusem.compiler.gpuir_cuda.from_gpuir import _extent

    t4 = A.CBin("*", A.CBin("%", A.CVar("t"), A.CInt(2)), A.CInt(4))
    assert _extent(t4, A.CBin("+", t4, A.CInt(4)), {}) == 4
    assert _extent(A.CVar("k"), A.CBin("+", A.CVar("k"), A.CInt(8)), {}) == 8
    assert _extent(A.CInt(0), A.CVar("N"), {"N": 12}) == 12
    assert _extent(A.CInt(0), A.CVar("t"), {}) is None
