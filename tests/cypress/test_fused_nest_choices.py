"""The fused wgmma's emission choices (gpuir_cuda `instr.FusedNest`, cyknob):
`grouped` (branch cyperf4's nest on 64 x 256 tiles) and `a_copy` (cyperf5's
per-warp k-major copy of A), switchable per compilation so that one GPU run times
all four combinations, and `layout="blocked"` (branch cyfrag: each thread an 8 x N
/ 16 block of the accumulator, `instr.blocked_d_element`). Every choice on the three
mappings the GPU run times (Fig. 5's, u128-hopper, u64-v64-wgs1-p4) equals its GPU
IR reading bit for bit on the cpu harness on full-significand floats; the plain
kernels never change; and scripts/cypress_gemm_gpu.py names the choices as row
suffixes."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda.instr import (
    BLOCKED_COL,
    BLOCKED_ROW,
    FUSED_NEST,
    WGMMA,
    WGMMA_FMA,
    FusedNest,
    blocked_d_element,
)
from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
from gpusem.compiler.gpuir_cuda.run import check_batch
from tests.cypress.gpuir_reading import reading_case
from tests.script_module import load_script

N = 256
SIZES = {"M": N, "N": N, "K": N}
TIMED = ("fig5-hopper", "u128-hopper", "u64-v64-wgs1-p4")  # the cyknob GPU run's
NESTS = [FusedNest(grouped=g, a_copy=a) for g, a in itertools.product((False, True),
                                                                      repeat=2)]
BLOCKED = FusedNest(grouped=False, a_copy=False, layout="blocked")


@pytest.fixture(scope="module")
def mod() -> ModuleType:
    return load_script("cypress_gemm_gpu")


@pytest.fixture(scope="module")
def gpuir(mod: ModuleType) -> dict[tuple[str, bool], str]:
    """The GPU IR of each timed mapping at N = 256, plain and fused."""
    return {(name, fused): mod.lower(mod.render(N, mod.named(name).as_fused()
                                                if fused else mod.named(name)),
                                     "hopper")[3]
            for name in TIMED for fused in (False, True)}


def _source(text: str, nest: FusedNest | None) -> str:
    proc = parse_module(text, "fig5_gemm.gpuir").procs[-1]
    return compile_proc(proc, SIZES, source=text, fused=nest).source


def test_every_fused_nest_equals_its_reading_on_the_cpu_harness(
        gpuir: dict[tuple[str, bool], str]) -> None:
    """The 15 kernels (3 mappings x the 4 nests and the blocked layout) in one cpu
    batch, on the inputs of `gpusem exec` (floats with full 24-bit significands: any
    other order of an element's fmas, a wrong row or column of A, or a register the
    store reads in another layout than the nest wrote, gives other bits), each
    equal to the GPU IR reading of its proc."""
    cases = []
    for name in TIMED:
        for nest in [*NESTS, BLOCKED]:
            case = reading_case(gpuir[name, True], SIZES)
            case.compiled = compile_proc(case.proc, SIZES, source=gpuir[name, True],
                                         fused=nest)
            cases.append((name, nest, case))
    verdicts = check_batch([c for _, _, c in cases], "cpu", seeds=(0,),
                           timeout_s=300.0)
    bad = {(name, nest): v.describe() for (name, nest, _), v in zip(cases, verdicts)
           if not v.agree}
    assert not bad, bad
    a = cases[0][2].inputs["A"]  # not the benchmark's integers: order shows
    assert np.count_nonzero(a != np.round(a)) > a.size // 2


def test_the_choices_reach_the_fused_gemm_alone(
        gpuir: dict[tuple[str, bool], str]) -> None:
    """The plain kernels are the same text under every nest; the fused kernel of a
    64 x 256 tile (128 accumulators a thread) takes four texts, the copy of A
    (`gs_at`) where a_copy says and the grouped nest (`gs_b[gs_p]`) where grouped
    says; on 64 x 64 tiles (32 accumulators) `grouped` changes nothing (cyperf4's
    nest is for tiles of FUSED_MIN_SHARE registers a thread and more)."""
    for name in TIMED:
        plain = {_source(gpuir[name, False], nest) for nest in [*NESTS, BLOCKED, None]}
        assert len(plain) == 1 and "gs_at" not in plain.pop()
        fused = {nest: _source(gpuir[name, True], nest) for nest in NESTS}
        for nest, text in fused.items():
            assert ("__shared__ __align__(16) float gs_at[" in text) == nest.a_copy
            if name != "u64-v64-wgs1-p4":
                assert ("gs_b[gs_p][gs_k]" in text) == nest.grouped
        assert len(set(fused.values())) == (2 if name == "u64-v64-wgs1-p4" else 4)
        assert _source(gpuir[name, True], None) == fused[FUSED_NEST]


def test_the_default_is_the_nest_the_gpu_found_fastest() -> None:
    """The H200's timing of the four nests (results/cypress/gemm_h200_2026-11-29f/):
    neither branch's nest is faster than the plain one, the copy of A is slower, so
    the default compilation uses neither."""
    assert FUSED_NEST == FusedNest(grouped=False, a_copy=False)


def test_the_benchmark_names_the_four_nests(mod: ModuleType) -> None:
    """NAME-fused-[no]grouped-[no]acopy: the fused mapping with the nest's two
    choices; NAME-fused keeps the compiler's default; --fused takes either; the
    FMA form has no fused wgmma to choose for."""
    m = mod.named("u128-hopper-fused-nogrouped-acopy")
    assert m == replace(mod.VARIANTS["u128-hopper"].as_fused(), grouped=False,
                            a_copy=True)
    assert mod.nest_of(m) == FusedNest(grouped=False, a_copy=True)
    assert mod.nest_of(mod.named("u128-hopper-fused")) == FUSED_NEST
    assert m.describe()["nest"] == {"grouped": False, "a_copy": True,
                                    "layout": "wgmma", "prefetch": False,
                                    "chunk": 0, "default": False}
    assert m.program() == mod.named("u128-hopper-fused")
    runs = mod.fused_runs({}, "u64-v64-wgs1-p4,fig5-hopper-fused-grouped-noacopy")
    assert runs == {"u64-v64-wgs1-p4-fused": mod.named("u64-v64-wgs1-p4-fused"),
                    "fig5-hopper-fused-grouped-noacopy":
                        replace(mod.VARIANTS["fig5-hopper"].as_fused(),
                                    grouped=True, a_copy=False)}
    with pytest.raises(ValueError, match="fma form has no fused wgmma"):
        mod.named("fig5-fma-fused-grouped-acopy")
    with pytest.raises(KeyError):
        mod.named("u128-hopper-fused-grouped")


def test_the_benchmark_runs_each_nest_and_says_which(
        mod: ModuleType, tmp_path: Path) -> None:
    """scripts/cypress_gemm_gpu.py on the cpu backend with two nests of u64-v64:
    both rows exact and equal to the Cypress reading, each with its nest and the
    hash of the CUDA it ran (different texts: the copy of A or not)."""
    out = tmp_path / "gemm.json"
    names = ("u64-v64-wgs1-p4-fused-nogrouped-noacopy,"
             "u64-v64-wgs1-p4-fused-grouped-acopy")
    rc = mod.main(["--backend", "cpu", "--sizes", "256", "--variants", "none",
                   "--fused", names, "--warmup", "0", "--iters", "1",
                   "--check-upto", "256", "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert rc == 0 and [r["variant"] for r in rows] == names.split(",")
    assert all(r["agree_reading"] is True and r["agree_exact"] is True for r in rows)
    assert [r["mapping"]["nest"]["a_copy"] for r in rows] == [False, True]
    assert rows[0]["cuda_sha256"] != rows[1]["cuda_sha256"]


def test_the_blocked_layout_holds_each_element_once() -> None:
    """`blocked_d_element` gives the 128 threads of a warpgroup every element of a
    64 x n tile once, n / 2 a thread, each an 8-row, n / 16-column block; the C the
    zero, nest and store print (BLOCKED_ROW, BLOCKED_COL) is the same map; and
    lanes l, l ^ 1 share rows (one address of A a pair) and l, l ^ 2 columns."""
    for n in (16, 64, 128, 256):
        cells = [blocked_d_element(r, j, n) for r in range(128) for j in range(n // 2)]
        assert sorted(cells) == [(m, c) for m in range(64) for c in range(n)]
        for r in range(128):
            row = eval(BLOCKED_ROW.replace("/", "//"), {"gs_r": r})
            col = eval(BLOCKED_COL.format(half=n // 2).replace("/", "//"), {"gs_r": r})
            mine = [blocked_d_element(r, j, n) for j in range(n // 2)]
            assert mine == [(row + 4 * p, col + 8 * q) for p in range(8)
                            for q in range(n // 16)]
            assert blocked_d_element(r ^ 1, 0, n)[0] == row
            assert blocked_d_element(r ^ 2, 0, n)[1] == col
    with pytest.raises(ValueError, match="own nest"):
        FusedNest(grouped=True, a_copy=False, layout="blocked")


def test_the_blocked_layout_stays_out_of_kernels_with_a_plain_wgmma(
        gpuir: dict[tuple[str, bool], str]) -> None:
    """A kernel where a plain wgmma (wgmma's fragment layout, the exact nest) and a
    fused one meet keeps the fragment layout for every tile: the blocked choice
    then compiles the same text as the default, and that text equals its reading
    on the cpu harness (without the guard the plain wgmma's nest refuses the
    blocked tile). The fused kernel alone takes the blocked nest and its zero and
    store print the blocked map."""
    fused = gpuir["u64-v64-wgs1-p4", True]
    mixed = _with_a_plain_wgmma(fused)
    assert mixed.count(f"{WGMMA_FMA}(") == mixed.count(f"{WGMMA}(") == 1
    assert _source(mixed, BLOCKED) == _source(mixed, None)
    assert "gs_a[gs_p][gs_k]" not in _source(mixed, BLOCKED)
    alone = _source(fused, BLOCKED)
    assert "gs_a[gs_p][gs_k]" in alone and alone.count(BLOCKED_ROW) >= 3
    # chunks of 4 k where A's rows fit beside D (64 x 64: 32 accumulators in 255
    # registers), of 2 beside u128's 128 in 168: both are in the bit-exact batch
    assert "float gs_a[8][4];" in alone
    assert "float gs_a[8][2];" in _source(gpuir["u128-hopper", True], BLOCKED)
    case = reading_case(mixed, SIZES)
    case.compiled = compile_proc(case.proc, SIZES, source=mixed, fused=BLOCKED)
    v, = check_batch([case], "cpu", seeds=(0,), timeout_s=300.0)
    assert v.agree, v.describe()


def _with_a_plain_wgmma(text: str) -> str:
    """`text` with, after its loop over kk of fused wgmmas, one plain wgmma of the
    first k slice into the same D (another product, read as such)."""
    head, line = re.search(r"\n( *)for kk in seq\(0, 4\):\n( *Sm90_wgmma\S+\(.*\))",
                           text).groups()
    plain = re.sub(r"8 \* kk:8 \* kk \+ 8", "0:8", line.strip()).replace(
        f"{WGMMA_FMA}(", f"{WGMMA}(")
    return text.replace(line, f"{line}\n{head}{plain}", 1)


def test_the_benchmark_names_the_blocked_layout(mod: ModuleType) -> None:
    """NAME-fused-blocked: the fused mapping with the blocked layout, which --fused
    (and so scripts/gpu/cypress.sh's CYPRESS_FUSED and cypress_ncu.sh's MAPPING)
    takes beside NAME-fused."""
    m = mod.named("u128-hopper-fused-blocked")
    assert m == replace(mod.VARIANTS["u128-hopper"].as_fused(), layout="blocked")
    assert mod.nest_of(m) == BLOCKED and m.program() == mod.named("u128-hopper-fused")
    assert m.describe()["nest"] == {"grouped": False, "a_copy": False,
                                    "layout": "blocked", "prefetch": False,
                                    "chunk": 0, "default": False}
    runs = mod.fused_runs({}, "u128-hopper,u128-v128-wgs2-p4-fused-blocked")
    assert runs == {"u128-hopper-fused": mod.named("u128-hopper-fused"),
                    "u128-v128-wgs2-p4-fused-blocked":
                        replace(mod.MAPPINGS["u128-v128-wgs2-p4"].as_fused(),
                                layout="blocked")}
    with pytest.raises(ValueError, match="fma form has no fused wgmma"):
        mod.named("fig5-fma-fused-blocked")
