"""GPU IR's TMA in Exo-GPU's form (compiler/gpuir_exo/emit_tma.py, issue 26 item 2):
what maps (the hoisted tensor map, the one-thread loop as a warp, the linear and
swizzled instructions with their box), what stays `Unexpressible` and why, the
feature count of pldi26's TMA helper calls, and the steered mix drawing TMA
pipelines that gpusem accepts and the emitter maps. The last test runs the real Exo
(marker `exo`)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_exo.emit import Unexpressible, emit_proc
from gpusem.compiler.gpuir_exo.features import features_of
from gpusem.fuzz.exo.census_tally import round_programs
from gpusem.fuzz.exo.constructs import ConstructProgram
from gpusem.fuzz.exo.tma_pipelines import TmaPipeline
from gpusem.interpreter.amir.synccheck import synccheck

TILE = "buf: f32[2, 8, 32] @ Sm90_SmemSwizzled(128)"
LOAD = "Sm90_tma_load_2d_f32(buf[k, :, :], A[k * 8:k * 8 + 8, 0:32]) >> bar"
SRC = """\
proc gen(A: f32[16, 32] @ CudaGmemLinear, B: f32[16, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            TILE
            bar: barrier @ CudaMbarrier
            for k in seq(0, 2):
                for t in cuda_threads(0, 1, unit=cuda_thread):
                    LOAD
                Arrive(cuda_temporal, 1) >> bar
                Await(bar, cuda_generic_and_async, -1)
                for tid in cuda_threads(0, 32, unit=cuda_thread):
                    for j in seq(0, 8):
                        B[k * 8 + j, tid] = buf[k, j, tid] * 2.0
            Fence(cuda_in_order, cuda_in_order)
"""


def emit(tile: str = TILE, load: str = LOAD, dialect: str = "pldi26") -> str:
    src = SRC.replace("TILE", tile).replace("LOAD", load)
    return emit_proc(parse_module(src, "t.gpuir").procs[-1], {}, dialect).text


def test_swizzled_load_maps_to_exo_tma_through_a_hoisted_tensor_map():
    text = emit()
    assert "    A_tma0 = A[:, :] @ Sm90_tensorMap(128, 8, 32)\n" in text
    assert text.index("A_tma0 =") < text.index("with CudaDeviceFunction")
    assert ("with CudaWarps(0, 1):\n                    "
            "Sm90_copy_tensor_to_smem_swizzled_2f32(buf[k, :, :], "
            "A_tma0[k * 8:k * 8 + 8, 0:32], size0=8, size1=32) >> bar") in text
    assert "cuda_threads(0, 1, unit=cuda_thread)" not in text
    assert "from exo.platforms.Sm90 import *" in text


def test_linear_tile_maps_to_the_linear_instruction_and_swizzle_0():
    text = emit("buf: f32[2, 8, 32] @ CudaSmemLinear")
    assert "Sm90_tensorMap(0, 8, 32)" in text
    assert "Sm90_copy_tensor_to_smem_linear_2f32(" in text
    # GPU IR's Sm90_SmemSwizzled(0) is no swizzle: Exo spells it CudaSmemLinear
    assert "@ CudaSmemLinear" in emit("buf: f32[2, 8, 32] @ Sm90_SmemSwizzled(0)")


@pytest.mark.parametrize(("tile", "load", "why"), [
    ("buf: f32[2, 8, 16] @ Sm90_SmemSwizzled(128)",
     "Sm90_tma_load_2d_f32(buf[k, :, :], A[k * 8:k * 8 + 8, 0:16]) >> bar",
     "rows of exactly 128 bytes"),
    ("buf: f32[2, 16, 32] @ Sm90_SmemSwizzled(128)",
     "Sm90_tma_load_2d_f32(buf[k, 0:8, :], A[k * 8:k * 8 + 8, 0:32]) >> bar",
     "not a dense box"),
    (TILE, LOAD + "\n                    B[0, 0] = 1.0", "other statements"),
    (TILE, LOAD.replace("buf[k,", "buf[t + k,"), "uses its thread index"),
])
def test_inexact_forms_stay_unexpressible(tile, load, why):
    with pytest.raises(Unexpressible, match=why):
        emit(tile, load)


def test_tensor_map_window_of_another_swizzle_is_refused():
    load = ("gA = A[k * 8:k * 8 + 8, 0:32] @ Sm90_tensorMap(0, 8, 32)\n"
            "                    Sm90_tma_load_2d_f32(buf[k, :, :], gA) >> bar")
    with pytest.raises(Unexpressible, match="swizzle 0 on a tile of swizzle 128"):
        emit(load=load)
    same = emit(load=load.replace("Sm90_tensorMap(0,", "Sm90_tensorMap(128,"))
    assert "A_tma0[k * 8:k * 8 + 8, 0:32], size0=8" in same and "gA" not in same


ONCE = """\
proc once(A: f32[8, 32] @ CudaGmemLinear, B: f32[8, 32] @ CudaGmemLinear):
    with CudaDeviceFunction(blockDim=32):
        for task in cuda_tasks(0, 1):
            buf: f32[8, 32] @ CudaSmemLinear
            bar: barrier @ CudaMbarrier
            for t in cuda_threads(0, 1, unit=cuda_thread):
                Sm90_tma_load_2d_f32(buf[:, :], A[:, :]) >> bar
            Arrive(cuda_temporal, 1) >> bar
            Await(bar, cuda_generic_and_async, -1)
"""


def test_endgame_tma_is_not_mapped():
    proc = parse_module(ONCE, "o.gpuir").procs[-1]
    assert "Sm90_copy_tensor_to_smem_linear_2f32(buf[:, :], A_tma0[:, :], size0=8" \
        in emit_proc(proc, {}, "pldi26").text
    with pytest.raises(Unexpressible, match="endgame's Sm90_tma_"):
        emit_proc(proc, {}, "endgame")


def test_a_wait_only_loop_on_a_tma_commit_group_is_the_same_warp():
    """Exo needs one collective tiling for an Arrive and its Await: the thread that
    arrived on the reduction's commit group in GPU IR waits in a loop of its own."""
    k = ConstructProgram("tmared", tasks=2)
    text = emit_proc(parse_module(k.source(), "r.gpuir").procs[-1], {}).text
    assert text.count("with CudaWarps(0, 1):") == 2
    assert "with CudaWarps(0, 1):\n                Await(cg, cuda_in_order, 0)" in text
    assert "cuda_threads(0, 1," not in text


def test_pldi26_tma_helper_calls_count_as_tma():
    assert "tma" in features_of("      exo_CudaUtil::exo_Sm90_tma_to_smem(\n")
    assert "tma" in features_of("      exo_CudaUtil::exo_Sm90_tma_to_gmem(\n")
    assert "tma" not in features_of("exo_Sm90_tma_to_smem(  // the definition\n")


def test_steered_mix_draws_mappable_tma_pipelines():
    tma = [k for r in (0, 1) for k in round_programs(0, r, steer=True)
           if isinstance(k, TmaPipeline)]
    assert len(tma) >= 25  # three in fourteen of 200
    swizzles, stores = set(), set()
    for k in tma:
        text = emit_proc(parse_module(k.source(), "k.gpuir").procs[-1], {}).text
        assert "Sm90_copy_tensor_to_smem_" in text
        assert ("Sm90_copy_tensor_to_gmem_" in text) == k.store
        swizzles.add(k.swizzle)
        stores.add(k.store)
    assert swizzles == {0, 32, 64, 128} and stores == {True, False}


@pytest.mark.parametrize("p", [
    TmaPipeline(swizzle=128, rows=8, cols=32, lag=1, iters=3, mul=3, add=5),
    TmaPipeline(swizzle=0, rows=16, cols=8, lag=2, iters=4, store=False, tasks=2),
])
def test_tma_pipelines_are_accepted_by_gpusem(p):
    assert synccheck(p.source(), "p.gpuir", {}).verdict.violation is None
    near = replace(p, mutation="early-read")
    assert synccheck(near.source(), "n.gpuir", {}).verdict.violation is not None


@pytest.mark.exo
def test_exo_accepts_and_compiles_tma_pipelines():
    from gpusem.compiler.gpuir_exo.driver import ExoDriver
    from gpusem.fuzz.exo.checking import check_program

    ps = [TmaPipeline(swizzle=sw, rows=8, cols=sw // 4 or 16, lag=lag, iters=3,
                      store=store)
          for sw, lag, store in ((0, 0, True), (32, 1, False), (128, 2, True))]
    with ExoDriver() as driver:
        for p in ps:
            c = check_program(driver, p)
            assert c.both_accept, (c.exo, p)
            assert "Sm90_copy_tensor_to_smem_" in c.exo_source.text
