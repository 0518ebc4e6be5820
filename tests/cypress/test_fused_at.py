"""The fused wgmma's k-major copy of A (gpuir_cuda/instr.py `_at_copy`, cyperf5):
Fig. 5's fused nest reads its rows m and m + 8 of one k as a pair from a per-warp
shared copy; the copy is dropped where its static shared memory would not fit
beside the kernel's dynamic; plain (unfused) kernels never get it. That the fused
kernels equal their GPU IR reading on the cpu harness with and without the copy
(and with and without cyperf4's grouped nest) is test_fused_nest_choices.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusem.api import exec_file
from gpusem.api.options import ExecOptions
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda import pipeline
from gpusem.compiler.gpuir_cuda.instr import FusedNest
from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
from tests.script_module import load_script

SIZES = {"M": 256, "N": 256, "K": 256}
# cyperf5's copy on (with cyperf4's grouped nest), whatever the compiler's default
COPY = FusedNest(grouped=True, a_copy=True)


@pytest.fixture(scope="module")
def fig5() -> dict[bool, str]:
    """Fig. 5's mapping (64 x 256 tiles, the grouped fused nest) at N = 256:
    GPU IR, plain and fused."""
    mod = load_script("cypress_gemm_gpu")
    m = mod.VARIANTS["fig5-hopper"]
    return {f: mod.lower(mod.render(256, m.as_fused() if f else m), "hopper")[3]
            for f in (False, True)}


def _gemm(text: str, nest: FusedNest = COPY):
    """The compiled proc and its GEMM kernel (the last), with the copy of A."""
    proc = parse_module(text, "fig5.gpuir").procs[-1]
    out = compile_proc(proc, SIZES, source=text, fused=nest)
    return out, out.kernels[-1]


def test_the_fused_nest_reads_a_as_pairs_from_the_warps_k_major_copy(
        fig5: dict[bool, str]) -> None:
    """One copy a nest, fenced by `__syncwarp` before the reads and after them;
    a0 and a1 of one k adjacent in it; its bytes (12 warps x 16 rows x 8 k
    floats) counted beside the dynamic shared memory."""
    out, gemm = _gemm(fig5[True])
    nest = out.source.split("__shared__ __align__(16) float gs_at[", 1)[1]
    copy, rest = nest.split("__syncwarp();", 1)
    assert "gs_w[16 * (gs_c + gs_k) + 2 * (gs_q % 8) + gs_q / 8] = As[" in copy
    assert "gs_a0[gs_k] = gs_w[gs_o];" in rest and \
        "gs_a1[gs_k] = gs_w[gs_o + 1];" in rest
    assert rest.index("gs_ffma(") < rest.index("__syncwarp();")  # fenced after
    assert gemm.block == 384 and gemm.static_smem_bytes == 12 * 16 * 8 * 4
    assert gemm.smem_bytes + gemm.static_smem_bytes <= pipeline.SMEM_BYTES


def test_the_plain_kernel_has_no_copy(fig5: dict[bool, str]) -> None:
    out, gemm = _gemm(fig5[False])
    assert "gs_at" not in out.source and gemm.static_smem_bytes == 0


def test_without_room_the_fused_nest_reads_a_directly(
        fig5: dict[bool, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the copy's static bytes would pass the limit, pipeline.lower first
    drops the rows' padding (as it did before cyperf5), then the copy (the nest
    reads A along k, as before), rather than emit a kernel that cannot launch."""
    _, padded = _gemm(fig5[True])
    monkeypatch.setattr(pipeline, "SMEM_BYTES", padded.smem_bytes)
    out, unpadded = _gemm(fig5[True])
    assert unpadded.smem_bytes < padded.smem_bytes and "gs_at[" in out.source
    assert unpadded.static_smem_bytes == padded.static_smem_bytes
    monkeypatch.setattr(pipeline, "SMEM_BYTES", unpadded.smem_bytes)
    out, small = _gemm(fig5[True])
    assert "gs_at" not in out.source and small.static_smem_bytes == 0
    assert small.smem_bytes == unpadded.smem_bytes
    assert "gs_a0[gs_k] = As[" in out.source


def test_the_default_fused_gemm_equals_its_reading(
        fig5: dict[bool, str], tmp_path: Path) -> None:
    """`gpusem exec` (the compiler's default nest, instr.FUSED_NEST) on
    full-significand floats (any other order of an element's fmas, or a wrong row
    of A, gives other bits) agrees with the GPU IR reading on the cpu harness."""
    out = tmp_path / "fig5_fused.gpuir"
    out.write_text(fig5[True])
    run = exec_file(str(out), ExecOptions(backend="cpu"))
    assert run.agree, run


def test_the_element_pair_nest_reads_a_from_the_copy_too() -> None:
    """The smaller fused tiles (u64-v64: 64 x 64, the element-pair nest) read A
    from the copy as well; their plain wgmma reads it along k, as before."""
    mod = load_script("cypress_gemm_gpu")
    m = mod.MAPPINGS["u64-v64-wgs1-p4"]
    fused, plain = (_gemm(mod.lower(mod.render(256, x), "hopper")[3])
                    for x in (m.as_fused(), m))
    assert "gs_d0" in fused[0].source and "gs_a0[gs_k] = gs_w[gs_o];" in fused[0].source
    assert fused[1].static_smem_bytes == (fused[1].block // 32) * 16 * 8 * 4
    assert "gs_at" not in plain[0].source and plain[1].static_smem_bytes == 0
