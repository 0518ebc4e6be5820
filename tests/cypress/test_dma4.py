"""A stage's bulk copies issued by the DMA warpgroup's 4 warps (branch cydma, issue
30; to_gpuir_hopper.emit_hopper's `dma_warps`, bench suffix `-dma4`): warp w copies
a quarter of each tile's rows, the 128 threads arrive once on the full barrier, and
that arrive's expect-tx is the whole stage's bytes (gpuir_cuda counts a copy in a
cuda_threads loop once an instance). Bit-exact against the GPU IR reading on the
cpu harness; the default form (one DMA warp) is untouched."""

from __future__ import annotations

import re
from dataclasses import replace
from types import ModuleType

import pytest

from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda.instr import FusedNest
from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
from gpusem.compiler.gpuir_cuda.run import Case, check_batch, make_inputs
from gpusem.interpreter.gpuir.sequential import run_sequential
from tests.script_module import load_script

N = 256
SIZES = {"M": N, "N": N, "K": N}
PREFETCH = FusedNest(grouped=False, a_copy=False, layout="blocked", prefetch=True)
# (mapping, U, V, warpgroups): the 64 x 128 tiles, the 64 x 64 tile, and U = 256
# (64 rows of A a warp)
TILES = (("u128-v128-wgs2-p4", 128, 128, 2), ("u64-v64-wgs1-p4", 64, 64, 1),
         ("u256-v128-wgs4-p3", 256, 128, 4))


@pytest.fixture(scope="module")
def mod() -> ModuleType:
    return load_script("cypress_gemm_gpu")


def _gpuir(mod: ModuleType, name: str) -> str:
    m = mod.named(name)
    return mod.lower(mod.render(N, m), m.form, m.dma_warps)[3]


def _source(text: str, nest: FusedNest = PREFETCH) -> str:
    proc = parse_module(text, "fig5_gemm.gpuir").procs[-1]
    return compile_proc(proc, SIZES, source=text, fused=nest).source


def test_dma4_equals_its_reading_on_the_cpu_harness(mod: ModuleType) -> None:
    """Each tile's dma4 kernel, with the pipelined blocked nest, equals the GPU IR
    reading of its proc bit for bit on the cpu harness (which completes a copy's
    bytes on the barrier and ends a phase only at zero arrivals and zero tx: a
    stage's expect-tx short of its bytes leaves the barrier's count negative and
    the compute warps' wait never ends, or ends before a quarter's rows land)."""
    cases = []
    for name, *_ in TILES:
        text = _gpuir(mod, f"{name}-fused-blocked-prefetch-dma4")
        proc = parse_module(text, "fig5_gemm.gpuir").procs[-1]
        inputs = make_inputs(proc, SIZES)
        case = Case(proc, dict(SIZES), inputs, run_sequential(proc, SIZES, inputs),
                    source=text)
        case.compiled = compile_proc(proc, SIZES, source=text, fused=PREFETCH)
        cases.append(case)
    # the control: the 64 x 64 tile's kernel expecting one warp's quarter of the
    # stage's bytes (what counting the loop's copies once would give) must not pass
    last = cases[1]
    stage = (64 + 64) * 32 * 4
    short = last.compiled.source.replace(f"{stage}u)", f"{stage // 4}u)")
    assert short != last.compiled.source
    cases.append(replace(last, compiled=replace(last.compiled, source=short)))
    verdicts = check_batch(cases, "cpu", seeds=(0,), timeout_s=300.0)
    bad = {name: v.describe() for (name, *_), v in zip(TILES, verdicts)
           if not v.agree}
    assert not bad, bad
    assert not verdicts[-1].agree, verdicts[-1].describe()


@pytest.mark.parametrize("name,u,v,groups", TILES)
def test_dma4_spreads_the_rows_and_expects_the_stage_once(
        mod: ModuleType, name: str, u: int, v: int, groups: int) -> None:
    """4 DMA warps after the 4 x groups compute warps, each copying U / 4 rows of A
    and V / 4 of B (one warp: all U and V);
    the full barrier expects 128 arrivals a phase and one expect-tx of the stage's
    (U + V) x 32 floats, from one thread."""
    one = _source(_gpuir(mod, f"{name}-fused-blocked-prefetch"))
    four = _source(_gpuir(mod, f"{name}-fused-blocked-prefetch-dma4"))
    stage = (u + v) * 32 * 4
    w = 4 * groups
    assert f"warp(s) {w} .. {w + 3} of dma" in four
    assert f"warp(s) {w} .. {w} of dma" in one
    rows = r"gs_i < (\d+); gs_i\+\+\) gs_bulk_copy_g2s\("
    assert sorted(map(int, re.findall(rows, four))) == sorted([u // 4, v // 4])
    assert sorted(map(int, re.findall(rows, one))) == sorted([u, v])
    assert re.findall(r"gs_mbar_arrive_expect_tx\([^,]+, (\d+)u\)", four) == [
        str(stage)]
    assert re.findall(r"gs_mbar_arrive_expect_tx\([^,]+, (\d+)u\)", one) == [
        str(stage)]
    assert "gs_mbar_init(&raw[gs_i], 128u)" in four
    assert "gs_mbar_init(&raw[gs_i], 32u)" in one


def test_the_default_form_keeps_one_dma_warp(mod: ModuleType) -> None:
    """Without the suffix the GPU IR is the one-warp form (its 3 unused warps);
    the suffix changes only the DMA side of the text."""
    one = _gpuir(mod, "u128-v128-wgs2-p4-fused-blocked-prefetch")
    four = _gpuir(mod, "u128-v128-wgs2-p4-fused-blocked-prefetch-dma4")
    assert 'CudaWarpConfig("dma", 1, 40, 0), CudaWarpConfig("unused", 3' in one
    assert 'CudaWarpConfig("dma", 4, 40, 0)]' in four and "unused" not in four
    assert "cuda_threads(0, 4, unit=cuda_warp)" in four
    assert "cuda_threads(0, 4, unit=cuda_warp)" not in one
    dma = re.compile(r"CudaDeviceFunction\(warp_config|cuda_warp\)|_tma_")
    assert [t for t in one.splitlines() if not dma.search(t)] == [
        t for t in four.splitlines() if not dma.search(t)]


def test_the_benchmark_names_dma4(mod: ModuleType) -> None:
    """NAME-dma4 on any fused Hopper row; --fused (CYPRESS_FUSED) takes it; the
    program (and so the reading a row is checked against) is the base row's."""
    m = mod.named("u128-v128-wgs2-p4-fused-blocked-prefetch-dma4")
    base = mod.named("u128-v128-wgs2-p4-fused-blocked-prefetch")
    assert m == replace(base, dma_warps=4) and base.dma_warps == 1
    assert m.program() == base.program()
    assert m.describe()["dma_warps"] == 4 and "dma_warps" not in base.describe()
    assert mod.named("u128-hopper-fused-dma4") == replace(
        mod.named("u128-hopper-fused"), dma_warps=4)
    runs = mod.fused_runs({}, "u128-hopper-fused-dma4,"
                          "u128-v128-wgs2-p4-fused-blocked-prefetch-dma4")
    assert runs == {"u128-hopper-fused-dma4": mod.named("u128-hopper-fused-dma4"),
                    "u128-v128-wgs2-p4-fused-blocked-prefetch-dma4": m}
    with pytest.raises(ValueError, match="fma form has no DMA warp"):
        mod.named("fig5-fma-dma4")
    with pytest.raises(ValueError, match="dma_warps 2"):
        from gpusem.compiler.cypress_cuda.to_gpuir_hopper import emit_hopper
        emit_hopper(None, "x", 2)  # type: ignore[arg-type]


def test_the_sync_check_accepts_dma4_and_needs_its_empty_wait(mod: ModuleType) -> None:
    """GPU IR -> AMIR -> the synchronisation check (`gpusem synccheck`) accepts the
    dma4 program; without the DMA warps' wait on the empty barrier (their copies
    may overwrite a stage the compute warps still read) it rejects it."""
    from gpusem.interpreter.amir.from_gpuir import convert
    from gpusem.interpreter.amir.machine import check_amir

    text = _gpuir(mod, "u64-v64-wgs1-p4-fused-blocked-prefetch-dma4")
    wait = "                    Await(war, cuda_temporal, -4)\n"
    assert text.count(wait) == 1
    for source, ok in ((text, True), (text.replace(wait, ""), False)):
        proc = parse_module(source, "fig5_gemm.gpuir").procs[-1]
        verdict = check_amir(convert(proc, SIZES), SIZES)
        assert verdict.accepted is ok, verdict
