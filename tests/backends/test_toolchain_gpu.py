"""The toolchain matrix and attribution on a GPU (issue 23): the T1 kernel's matrix is
the one measured on the H200, its attribution is `nvvm`, and a seeded fault of our
compiler is `ours` on the cuda backend too.

Marked `gpu` (CuPy, a GPU, nvcc and ptxas of CUDA 13.0: `bash scripts/gpu.sh toolchain`
runs them). `test_t1_is_attributed_nvvm` needs the static PTX check
(`ptx_oracle`, through `toolchain.installed_checker`) and an installed NVRTC wheel: it
fails where none is installed.
"""

from __future__ import annotations

import pytest
from gpusem.compiler.backends.toolchain import Matrix, installed_checker
from gpusem.fuzz.attribution import Case, attribute, observe

from ..fuzz.test_attribution_wiring import HALVES
from .test_toolchain_build import T1_EXPECTED, t1_job

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def matrix():
    m = Matrix("cuda")
    yield m
    m.close()


def t1_case() -> Case:
    def wrong_cell(outputs):
        got = outputs["g_out"].tolist()
        bad = [i for i, (g, e) in enumerate(zip(got, T1_EXPECTED, strict=True))
               if g != e]
        return f"out[{bad[0]}] = {got[bad[0]]}, expected " \
               f"{T1_EXPECTED[bad[0]]}" if bad else None

    return Case([t1_job(0), t1_job(1)], "nvrtc", wrong_cell)


def test_t1_matrix_is_the_measured_one(matrix):
    """Wrong at default/-O3 (NVRTC, nvcc, the PTX JIT); right with -G, ptxas -O0,
    without __restrict__, and on the cpu harness."""
    case = t1_case()
    runs = matrix.run(case.jobs)
    seen = {c: {observe(r, case.wrong_cell).status for r in rs} for c, rs in runs.items()}
    for config in ("nvrtc", "nvcc-O3", "ptx-jit"):
        assert seen[config] == {"wrong"}, (config, seen)
    for config in ("nvcc-G", "ptxas-O0", "no-restrict", "cpu"):
        assert seen[config] == {"right"}, (config, seen)


def test_t1_is_attributed_nvvm(matrix):
    checker = installed_checker()
    assert checker is not None, ("no static PTX check: ptx_oracle (branch "
                                 "ptxcheck) not merged, or no NVRTC wheel installed")
    found = attribute(t1_case(), matrix, checker)
    assert (found["verdict"], found["rule"]) == ("nvvm", "static-ptx"), found
    assert "ld.global.nc" in found["evidence"][0]


def test_a_seeded_fault_is_ours_on_the_cuda_backend(monkeypatch):
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.fuzz.bundl.generated import Generated
    from gpusem.fuzz.bundl.target import BundlTarget

    monkeypatch.setenv("GPUSEM_FAULT", "floor-division")
    target = BundlTarget("cuda")
    try:
        res = target.check(Generated(parse_program(HALVES, "halves.bundl"), False),
                           "compile")
        assert res.status == "finding", res.detail
        found = target.attribute(res, "compile")
    finally:
        target.close()
    assert found is not None and found["verdict"] == "ours", found
    assert found["rule"] in ("harness-same", "every-gpu-same")
    assert found["seconds"] < 60
