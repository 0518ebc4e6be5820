"""scripts/cypress_gemm_gpu.py's timing-only ablations (`--ablate`): each leaves out
exactly its part of the GEMM kernel's CUDA (no-copies: every bulk copy, the
expect_tx bytes 0; no-math: every k chunk of the wgmma nest), the rest untouched,
and one that would change nothing is an error, never a silently full row."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from tests.script_module import load_script


@pytest.fixture(scope="module")
def mod_and_source() -> tuple[ModuleType, str]:
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.compiler.gpuir_cuda.pipeline import compile_proc

    mod = load_script("cypress_gemm_gpu")
    _, _, _, gpuir = mod.lower(mod.render(256, mod.MAPPINGS["u64-v64-wgs1-p4"]),
                               "hopper")
    proc = parse_module(gpuir, "fig5_gemm.gpuir").procs[-1]
    defines = {"M": 256, "N": 256, "K": 256}
    return mod, compile_proc(proc, defines, source=gpuir).source


COPY = re.compile(r"gs_bulk_copy_g2s(?:_multicast)?\(")
TX = re.compile(r"gs_mbar_arrive_expect_tx\([^;]*, (\d+)u\);")
KC = re.compile(r"gs_kc < (\d+);")


def test_no_copies_leaves_out_the_copies_alone(mod_and_source):
    mod, src = mod_and_source
    out = mod.ablate(src, "no-copies")
    assert len(COPY.findall(src)) >= 2 and not COPY.findall(out)
    assert TX.findall(src) and set(TX.findall(out)) == {"0"}
    assert KC.findall(out) == KC.findall(src) and "0" not in KC.findall(src)


def test_no_math_leaves_out_the_nest_alone(mod_and_source):
    mod, src = mod_and_source
    out = mod.ablate(src, "no-math")
    assert KC.findall(src) and set(KC.findall(out)) == {"0"}
    assert len(COPY.findall(out)) == len(COPY.findall(src))
    assert TX.findall(out) == TX.findall(src)


def test_an_ablation_that_changes_nothing_is_an_error(mod_and_source):
    mod, src = mod_and_source
    with pytest.raises(ValueError, match="matches nothing"):
        mod.ablate(mod.ablate(src, "no-math"), "no-math")
