"""Every hand-written test kernel builds with `nvcc -c` for sm_90a (one batched check),
and the check attributes a failure to the kernel that has it."""

from __future__ import annotations

import pytest
from gpusem.compiler.backends import nvcc

from . import cases

pytestmark = pytest.mark.skipif(not nvcc.nvcc_available(), reason="nvcc not on PATH")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSEM_CACHE_DIR", str(tmp_path))


def test_every_test_kernel_builds_with_nvcc_for_sm_90a():
    sources = cases.all_sources()
    verdicts = nvcc.compile_check(list(sources.values()))
    failures = {n: v for n, v in zip(sources, verdicts, strict=True) if v is not None}
    assert not failures, failures
    assert len(sources) >= 18


def test_nvcc_failure_is_attributed_and_the_others_pass():
    good = cases.source("reduce_sync")
    bad = '#include "gpusem_rt.cuh"\nextern "C" __global__ void k(int* o) {\n  o[0] = nope;\n}\n'
    # same kernel name twice in one batch must not collide (namespaced)
    verdicts = nvcc.compile_check(
        [good, bad, good.replace("s[t + stride]", "s[t+stride]")]
    )
    assert verdicts[0] is None and verdicts[2] is None
    assert verdicts[1] is not None and "nope" in verdicts[1]
    assert "k1_src.cu(3)" in verdicts[1]


def test_ptx_only_for_a_wrong_architecture_instruction_fails_nvcc():
    # wgmma needs sm_90a: a PTX typo is caught by the nvcc check, not only at run time
    src = (
        '#include "gpusem_rt.cuh"\nextern "C" __global__ void k(int* o) {\n'
        '  GS_PTX_ONLY("wgmma", asm volatile("wgmma.fence.sync.aligned.bogus;"));\n}\n'
    )
    (verdict,) = nvcc.compile_check([src])
    assert verdict is not None and "error" in verdict.lower()
