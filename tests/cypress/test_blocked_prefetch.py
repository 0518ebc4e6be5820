"""The blocked fused nest software-pipelined (gpuir_cuda `instr.FusedNest.prefetch`,
branch cyfrag2: the operands of chunk c + 1 loaded before the FFMAs of chunk c, and
the loop over a stage's k slices unrolled so the pipeline runs across them) and
with a chunk of 1, 2 or 4 k asked for (`FusedNest.chunk`). Each choice equals its
GPU IR reading bit for bit on the cpu harness on full-significand floats; the
pipeline applies where two chunks' operands fit beside D and is the blocked nest's
text elsewhere; scripts/cypress_gemm_gpu.py names the choices as row suffixes."""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType

import numpy as np
import pytest

from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda.instr import FusedNest
from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
from gpusem.compiler.gpuir_cuda.run import check_batch
from tests.cypress.gpuir_reading import reading_case
from tests.script_module import load_script

N = 256
SIZES = {"M": N, "N": N, "K": N}
# the 64 x 128 tile (64 accumulators in 168 registers: chunks of 2 k pipelined),
# the 64 x 64 tile (32 in 255: chunks of 4) and u128-hopper (128 in 168: no room)
NAMES = ("u128-v128-wgs2-p4", "u64-v64-wgs1-p4", "u128-hopper")
BLOCKED = FusedNest(grouped=False, a_copy=False, layout="blocked")
PREFETCH = replace(BLOCKED, prefetch=True)


@pytest.fixture(scope="module")
def mod() -> ModuleType:
    return load_script("cypress_gemm_gpu")


@pytest.fixture(scope="module")
def gpuir(mod: ModuleType) -> dict[str, str]:
    """The fused GPU IR of each mapping at N = 256."""
    return {name: mod.lower(mod.render(N, mod.named(f"{name}-fused")), "hopper")[3]
            for name in NAMES}


def _source(text: str, nest: FusedNest) -> str:
    proc = parse_module(text, "fig5_gemm.gpuir").procs[-1]
    return compile_proc(proc, SIZES, source=text, fused=nest).source


def test_the_pipelined_nests_equal_their_reading_on_the_cpu_harness(
        gpuir: dict[str, str]) -> None:
    """The pipeline with the chunk chosen by room (2 k on the 64 x 128 tile, 4 on
    the 64 x 64) and asked for (1 k; 4 k on 64 x 128, beyond the room rule), and
    the unpipelined blocked nest with chunks of 1 k, in one cpu batch on the
    inputs of `gpusem exec` (full 24-bit significands: another order of an
    element's fmas, or a chunk's FFMAs reading the other chunk's registers, gives
    other bits), each equal to the GPU IR reading of its proc."""
    runs = [("u128-v128-wgs2-p4", PREFETCH), ("u128-v128-wgs2-p4", replace(PREFETCH, chunk=1)),
            ("u128-v128-wgs2-p4", replace(PREFETCH, chunk=4)),
            ("u64-v64-wgs1-p4", PREFETCH), ("u64-v64-wgs1-p4", replace(BLOCKED, chunk=1))]
    cases = []
    for name, nest in runs:
        case = reading_case(gpuir[name], SIZES)   # each proc read once (2, not 5)
        case.compiled = compile_proc(case.proc, SIZES, source=gpuir[name], fused=nest)
        assert "gs_s[2]" in case.compiled.source or not nest.prefetch
        cases.append(case)
    verdicts = check_batch(cases, "cpu", seeds=(0,), timeout_s=300.0)
    bad = {(name, nest): v.describe() for (name, nest), v in zip(runs, verdicts)
           if not v.agree}
    assert not bad, bad
    a = cases[0].inputs["A"]  # not the benchmark's integers: order shows
    assert np.count_nonzero(a != np.round(a)) > a.size // 2


def test_the_pipeline_goes_where_two_chunks_fit(gpuir: dict[str, str]) -> None:
    """Two chunks' registers: 2 k on the 64 x 128 tile (64 + 2 x 16 x 2 + 40 spare
    = 168), 4 k on the 64 x 64 tile; the loop over the stage's k slices gets
    `#pragma unroll` there. u128-hopper (128 accumulators in 168 registers) has
    no room: prefetch compiles the blocked nest's text, as a chunk asked for
    without prefetch changes only the chunk."""
    def nest_line(text: str) -> str:
        return next(t for t in text.splitlines() if "gs_s[2];" in t)

    v128 = _source(gpuir["u128-v128-wgs2-p4"], PREFETCH)
    assert "float a[8][2], b[8][2]; } gs_s[2];" in nest_line(v128)
    assert "#pragma unroll\n          #endif\n          for (int kk = 0" in v128
    assert "for (int gs_i = 0; gs_i <= 4; gs_i++)" in v128
    v64 = _source(gpuir["u64-v64-wgs1-p4"], PREFETCH)
    assert "float a[8][4], b[4][4]; } gs_s[2];" in nest_line(v64)
    assert "a[8][1], b[8][1]" in nest_line(
        _source(gpuir["u128-v128-wgs2-p4"], replace(PREFETCH, chunk=1)))
    hopper = gpuir["u128-hopper"]
    assert _source(hopper, PREFETCH) == _source(hopper, BLOCKED)
    assert "gs_s[2]" not in _source(hopper, BLOCKED)
    blocked = _source(gpuir["u128-v128-wgs2-p4"], BLOCKED)
    assert "float gs_a[8][4];" in blocked and "gs_s[2]" not in blocked
    assert "#pragma unroll\n          #endif\n          for (int kk = 0" not in blocked
    one = _source(gpuir["u128-v128-wgs2-p4"], replace(BLOCKED, chunk=1))
    assert "float gs_a[8][1];" in one and "gs_s[2]" not in one


def test_prefetch_and_chunk_are_the_blocked_layouts() -> None:
    with pytest.raises(ValueError, match="blocked layout's nest"):
        FusedNest(grouped=False, a_copy=False, prefetch=True)
    with pytest.raises(ValueError, match="blocked layout's nest"):
        FusedNest(grouped=False, a_copy=False, chunk=2)
    with pytest.raises(ValueError, match="chunk 3"):
        replace(BLOCKED, chunk=3)


def test_the_benchmark_names_the_pipeline(mod: ModuleType) -> None:
    """NAME-fused-blocked[-prefetch][-k1|-k2|-k4]: the blocked layout, pipelined,
    with a chunk asked for; --fused (CYPRESS_FUSED) takes them beside NAME-fused."""
    m = mod.named("u128-v128-wgs2-p4-fused-blocked-prefetch")
    base = mod.MAPPINGS["u128-v128-wgs2-p4"].as_fused()
    assert m == replace(base, layout="blocked", prefetch=True)
    assert mod.nest_of(m) == PREFETCH and m.program() == base
    assert m.describe()["nest"] == {"grouped": False, "a_copy": False,
                                    "layout": "blocked", "prefetch": True,
                                    "chunk": 0, "default": False}
    k1 = mod.named("u64-v64-wgs1-p4-fused-blocked-prefetch-k1")
    assert mod.nest_of(k1) == replace(PREFETCH, chunk=1)
    assert mod.nest_of(mod.named("u64-v64-wgs1-p4-fused-blocked-k2")) == replace(
        BLOCKED, chunk=2)
    assert mod.nest_of(mod.named("u128-hopper-fused-blocked")) == BLOCKED
    runs = mod.fused_runs({}, "u128-hopper,u128-v128-wgs2-p4-fused-blocked-prefetch")
    assert runs == {"u128-hopper-fused": mod.named("u128-hopper-fused"),
                    "u128-v128-wgs2-p4-fused-blocked-prefetch": m}
    for bad in ("u128-hopper-fused-blocked-k3", "u128-hopper-fused-prefetch",
                "u128-hopper-fused-blocked-k2-prefetch"):
        with pytest.raises(KeyError):
            mod.named(bad)
