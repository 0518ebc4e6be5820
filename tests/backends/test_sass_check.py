"""The static SASS check of toolchain finding T2's class (`compiler/backends/
sass_check.py`) with this machine's nvcc 13.0 and cuobjdump, no GPU: T2's minimal
kernel and both campaign kernels that showed T2 on the H200 fail it, naming the PTX
and the SASS lines; the same kernel without what T2 needs passes; and the ckernel
target's `sass` property reports it under one cause-level signature."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gpusem.calculus.ckernel.parser import parse_kernel
from gpusem.compiler.backends import sass_check
from gpusem.fuzz.ckernel.target import CkernelTarget

RESULTS = Path(__file__).parents[2] / "results" / "toolchain"
T2_MIN = (RESULTS / "T2" / "t2_min.cu").read_text()
CAMPAIGN = sorted((RESULTS / "ckernel_cuda_avoid_t1").glob("*/kernel.cu"))


def _named(source: str) -> tuple[str, str]:
    return re.search(r"__global__\s+void\s+(\w+)", source).group(1), source


def test_t2_and_its_campaign_kernels_fail_and_the_right_fold_passes():
    no_atomic = T2_MIN.replace("  atomicAdd(acc, a);\n", "")  # ptxas is right then
    plain = T2_MIN.replace("3 + __shfl_xor_sync(0xffffffffu, 0, 1)", "3")
    sources = [_named(T2_MIN), _named(no_atomic), _named(plain)]
    sources += [_named(p.read_text()) for p in CAMPAIGN]
    assert len(CAMPAIGN) == 2
    screen = sass_check.screen(sources)
    assert screen.missing == ""
    t2, right, constant, *campaign = screen.failures
    assert right == [] and constant == []
    for failures in (t2, *campaign):
        (f,) = failures
        assert f.check == "viaddmnmx-negated-constant" and f.constant == 3
        assert "VIADDMNMX" in f.sass and "0xfffffffd" in f.sass
        assert any("sub.s32" in line for line in f.ptx)


def test_negated_constants_reads_the_ptx_roles():
    ptx = ("\tadd.s32 \t%r6, %r5, 3;\n\tsub.s32 \t%r10, %r6, %r9;\n"
           "\tmin.s32 \t%r11, %r10, 0;\n")
    assert set(sass_check.negated_constants(ptx)) == {3}
    explained = ptx + "\tadd.s32 \t%r12, %r9, -3;\n"  # x - 3 computed elsewhere
    assert sass_check.negated_constants(explained) == {}
    swapped = ptx.replace("%r6, %r9", "%r9, %r6")  # x - a: -3 is right then
    assert sass_check.negated_constants(swapped) == {}
    assert sass_check.signed32("0xfffffffd") == -3


def test_the_sass_property_of_the_ckernel_target():
    kernels = [parse_kernel(p.with_name("program.ck").read_text()) for p in CAMPAIGN]
    target = CkernelTarget("cpu")
    try:
        assert target.prefetch(kernels, "sass")
        results = [target.check(k, "sass") for k in kernels]
    finally:
        target.close()
    assert {r.signature for r in results} == {"sass:viaddmnmx-negated-constant"}
    assert all("VIADDMNMX" in r.files["trace.txt"] for r in results)
    assert all("kernel.cu" in r.files for r in results)
    from gpusem.fuzz.attribution import cause_of

    blame = json.loads(results[0].files["attribution.json"])
    assert blame["verdict"] == "ptxas"  # the PTX is right, the SASS contradicts it
    assert cause_of(blame, results[0].signature) == "ptxas:viaddmnmx-negated-constant"
