"""GPU IR's wgmma in Exo-GPU's form (compiler/gpuir_exo/emit_wgmma.py, issue 26 item
2): the mapping, each refusal that keeps the meaning exact, the integer inputs the
compile property draws for wgmma programs, and the steered mix drawing wgmma GEMMs
that gpusem accepts and the emitter maps. The last test runs the real Exo (marker
`exo`)."""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_exo.emit import Unexpressible, emit_proc
from gpusem.compiler.gpuir_exo.features import features_of
from gpusem.fuzz.exo.census_tally import round_programs
from gpusem.fuzz.exo.compile_property import exact_mma_inputs
from gpusem.fuzz.exo.tma_pipelines import TmaPipeline
from gpusem.fuzz.exo.wgmma_gemms import WgmmaGemm
from gpusem.interpreter.amir.synccheck import synccheck


def proc_of(src: str):
    return parse_module(src, "w.gpuir").procs[-1]


def emit(src: str) -> str:
    return emit_proc(proc_of(src), {}, "pldi26").text


GEMM = WgmmaGemm(wgs=2, n=16, ksteps=2, stages=2, tasks=2).source()


def test_wgmma_maps_to_exo_mma_async_zero_scale_and_store():
    text = emit(GEMM)
    assert "Sm90_zero_scale_d_f32(D[wg, :, :], M=64, N=16)" in text
    assert ("Sm90_mma_async_tf32(D[wg, :, :], As[0, wg * 64:wg * 64 + 64, "
            "kk * 8:kk * 8 + 8], Bs[0, :, kk * 8:kk * 8 + 8], M=64, N=16)") in text
    assert ("Sm90_mma_store_d_row_major_tf32(64, 16, C[task * 128 + wg * 64:task * "
            "128 + wg * 64 + 64, 0:16], D[wg, :, :], M=64, N=16)") in text
    assert "D: f32[2, 64, 16] @ Sm90_RmemMatrixD(64, 16)" in text


@pytest.mark.parametrize(("old", "new", "why"), [
    # a zero with no mma right after it: Exo's zero would never happen
    ("        Sm90_wgmma_zero_d_f32(D[wg, :, :])\n",
     "        Sm90_wgmma_zero_d_f32(D[wg, :, :])\n"
     "                Arrive(wgmma_async, 1) >> cg[wg]\n"
     "                Await(cg[wg], cuda_in_order, 0)\n",
     "zero not followed by an mma"),
    # a K step of 4 columns: a descriptor inside the swizzle atom's 8-column step
    ("kk * 8:kk * 8 + 8], Bs[0", "kk * 8 + 4:kk * 8 + 12], Bs[0", "aligned"),
    # an unswizzled operand tile: Exo's descriptors assume the 128-byte swizzle
    ("As: f32[2, 128, 32] @ Sm90_SmemSwizzled(128)",
     "As: f32[2, 128, 32] @ CudaSmemLinear", r"Sm90_SmemSwizzled\(128\) tile"),
])
def test_inexact_wgmma_forms_stay_unexpressible(old, new, why):
    assert old in GEMM
    with pytest.raises(Unexpressible, match=why):
        emit(GEMM.replace(old, new, 1))


def test_store_into_shared_memory_is_refused():
    src = GEMM.replace("C[task * 128 + wg * 64:task * 128 + wg * 64 + 64, 0:16]",
                       "Cs[wg, :, :]").replace(
        "            bar: barrier @ CudaMbarrier\n",
        "            bar: barrier @ CudaMbarrier\n"
        "            Cs: f32[2, 64, 16] @ CudaSmemLinear\n")
    with pytest.raises(Unexpressible, match="global memory only"):
        emit(src)


def test_endgame_wgmma_is_not_mapped():
    with pytest.raises(Unexpressible, match="endgame"):
        emit_proc(proc_of(GEMM), {}, "endgame")


def test_wgmma_programs_get_integer_inputs_and_others_do_not():
    got = exact_mma_inputs(proc_of(GEMM), {}, seed=3)
    for a in got.values():
        assert a.dtype == np.float32 and np.array_equal(a, np.round(a))
        assert np.abs(a).max() <= 8 and len(np.unique(a)) > 8
    plain = exact_mma_inputs(proc_of(TmaPipeline().source()), {}, seed=3)
    assert not np.array_equal(plain["A"], np.round(plain["A"]))


def test_pldi26_mma_helper_calls_count_as_wgmma():
    call = "  exo_CudaUtil::exo_Sm90_mma_async_ss_m64n16_f32_tf32_tf32(\n"
    assert "wgmma" in features_of(call)


def test_steered_mix_draws_mappable_wgmma_gemms():
    ks = [k for r in (0, 1) for k in round_programs(0, r, steer=True)
          if isinstance(k, WgmmaGemm)]
    assert len(ks) >= 25  # three in fourteen of 200
    for k in ks:
        assert "Sm90_mma_async_tf32(" in emit(k.source())
    assert {k.wgs for k in ks} == {1, 2} and len({k.n for k in ks}) >= 4


@pytest.mark.parametrize("g", [WgmmaGemm(), WgmmaGemm(wgs=2, n=8, ksteps=3,
                                                      stages=2)])
def test_wgmma_gemms_are_accepted_by_gpusem(g):
    assert synccheck(g.source(), "g.gpuir", {}).verdict.violation is None
    near = WgmmaGemm(**{**g.__dict__, "mutation": "drop-wait"})
    assert synccheck(near.source(), "n.gpuir", {}).verdict.violation is not None


@pytest.mark.exo
def test_exo_accepts_and_compiles_wgmma_gemms():
    from gpusem.compiler.gpuir_exo.driver import ExoDriver
    from gpusem.fuzz.exo.checking import check_program

    with ExoDriver() as driver:
        for g in (WgmmaGemm(), WgmmaGemm(wgs=2, n=128, ksteps=2, stages=2)):
            c = check_program(driver, g)
            assert c.both_accept, (c.exo, g)
            assert "Sm90_mma_async_tf32(" in c.exo_source.text
