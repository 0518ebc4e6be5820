"""The first lowering of warp-specialised Cypress IR to GPU IR (compiler/cypress_cuda/
to_gpuir.py, issue 30 item 5): examples/cypress/gemm_ws_small.cyp after every pass
becomes a GPU IR procedure with a DMA warp, compute warps and full/empty mbarriers
that the front end and AMIR's sync check accept, whose sequential reading on the
Cypress inputs is the Cypress sequential reading, and whose compiled kernel agrees
with it on the cpu harness."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gpusem.api import exec_file, synccheck_file
from gpusem.api.options import ExecOptions, SyncOptions
from gpusem.calculus.cypress.inputs import header_inputs, make_inputs
from gpusem.calculus.cypress.reader import read_program
from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.cypress_cuda.allocate import allocate
from gpusem.compiler.cypress_cuda.copyelim import eliminate_copies
from gpusem.compiler.cypress_cuda.dependence import dependence_analysis
from gpusem.compiler.cypress_cuda.to_gpuir import lower_gemm
from gpusem.compiler.cypress_cuda.vectorize import vectorize
from gpusem.compiler.cypress_cuda.warpspec import Schedule, warp_specialise
from gpusem.interpreter.cypress.seq import seq
from gpusem.interpreter.gpuir.sequential import run_sequential

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SMALL = ROOT / "examples/cypress/gemm_ws_small.cyp"


def _lowered(path: Path, schedule: Schedule | None = None):  # type: ignore[no-untyped-def]
    text = path.read_text()
    program = read_program(text, path.name)
    arrays, scalars = make_inputs(header_inputs(text) or "")
    ir = warp_specialise(allocate(eliminate_copies(vectorize(dependence_analysis(
        program, arrays, scalars)), program), program), program, schedule=schedule)
    return program, arrays, scalars, lower_gemm(ir, program, arrays)


def test_the_lowering_has_the_roles_and_barriers_of_fig1b() -> None:
    _, _, _, text = _lowered(SMALL)
    assert 'CudaWarpConfig("dma", 1, 0, 0)]' in text  # after the compute warps
    assert "Await(empty[k % 3], cuda_in_order, -1)" in text  # the backward edge
    assert "Arrive(cuda_in_order, 1) >> full[k % 3]" in text
    assert "As: f32[3, 16, 4] @ CudaSmemLinear" in text  # the pipelined buffer
    # 4 iterations, depth 3: the DMA warp drains the phases of iterations 1, 2, 3
    lines = [line.strip() for line in text.splitlines()]
    end = lines.index("Arrive(cuda_in_order, 1) >> empty[k % 3]")
    assert lines[end + 1:end + 5] == [
        'with CudaWarps(name="dma"):', "Await(empty[1], cuda_in_order, -1)",
        "Await(empty[2], cuda_in_order, -1)", "Await(empty[0], cuda_in_order, -1)"]


def test_the_lowering_computes_the_sequential_reading() -> None:
    program, arrays, scalars, text = _lowered(SMALL)
    want, _ = seq(program, arrays, scalars)
    proc = parse_module(text, "x.gpuir").procs[0]
    m, n = arrays["C"].shape
    got = run_sequential(proc, {"M": m, "N": n, "K": arrays["A"].shape[1]},
                         {"A": arrays["A"], "B": arrays["B"]})
    assert np.array_equal(got["C"], want["C"])
    assert np.array_equal(want["C"], arrays["A"] @ arrays["B"])


def test_the_lowering_passes_the_sync_check_and_agrees_on_the_cpu_harness(
        tmp_path: Path) -> None:
    _, _, _, text = _lowered(SMALL)
    path = tmp_path / "gemm_ws_small.gpuir"
    path.write_text(text)
    report = synccheck_file(str(path), SyncOptions())
    assert report.accepted, report
    run = exec_file(str(path), ExecOptions(backend="cpu"))
    assert run.agree, run


def test_a_missing_backward_wait_is_rejected_by_the_sync_check(
        tmp_path: Path) -> None:
    """The sync check sees what the event machine saw (cypress-ws-no-backward-war):
    without the DMA warp's wait on empty, its copy overwrites a buffer the compute
    warps may still read."""
    _, _, _, text = _lowered(SMALL)
    assert "                    if k >= 3:\n" in text
    broken = text.replace("                    if k >= 3:\n                        "
                          "Await(empty[k % 3], cuda_in_order, -1)\n", "")
    path = tmp_path / "broken.gpuir"
    path.write_text(broken)
    report = synccheck_file(str(path), SyncOptions())
    # the refill of iteration k + 3 against the gemm's reads of iteration k
    assert (report.accepted, report.check) == (False, "CheckReads")


def test_other_shapes_are_refused_in_one_line() -> None:
    with pytest.raises(BadInput) as caught:
        _lowered(ROOT / "examples/cypress/flash_attention.cyp", Schedule(True, 1))
    assert caught.value.one_line() == (
        "not lowered: the entrypoint's tensors are not C, A, B (not a GEMM)")


def _fig5_square_lowered(tmp_path: Path) -> str:
    """Fig. 5 at N = 256 with the float32 K tile (W = 32), lowered to GPU IR."""
    text = (ROOT / "examples/cypress/gemm.cyp").read_text().replace(
        'tunables={"W": 64}', 'tunables={"W": 32}')
    path = tmp_path / "fig5.cyp"
    path.write_text(text.replace("C=float32[256,512] A=float32[256,128] "
                                 "B=float32[128,512]", "C=float32[256,256] "
                                 "A=float32[256,256] B=float32[256,256]"))
    _, _, _, lowered = _lowered(path)
    return lowered


def test_fig5_lowers_to_tma_and_wgmma_that_the_sync_check_accepts(
        tmp_path: Path) -> None:
    """Fig. 5's mapping names WGMMA_64x256x16 (l.46): the Hopper form
    (to_gpuir_hopper.py), the K tile 32 for float32 (errata "Cypress lowering to GPU
    IR"); its runs on the cpu harness and the GPU are scripts/cypress_gemm_gpu.py's."""
    lowered = _fig5_square_lowered(tmp_path)
    assert "Sm90_tma_multicast_warps_2d_f32(1, 1, As[k % 3:k % 3 + 1, :, :], " \
        "A_map[0:0 + 256, " in lowered
    assert "Sm90_wgmma_m64nNk8_f32(D[wg, r, :, :]" in lowered
    assert "Await(war, cuda_temporal, -3)" in lowered  # the backward edge, P = 3
    out = tmp_path / "fig5.gpuir"
    out.write_text(lowered)
    report = synccheck_file(str(out), SyncOptions())
    assert report.accepted, report
    # without the wait on the stage, the wgmmas read what the TMA may be writing
    wait = "                    Await(raw, cuda_generic_and_async_proxy, -1)\n"
    assert wait in lowered
    out.write_text(lowered.replace(wait, ""))
    assert not synccheck_file(str(out), SyncOptions()).accepted


def test_fig5_hopper_form_agrees_on_the_cpu_harness(tmp_path: Path) -> None:
    """Fig. 5's Hopper form compiled by gpuir_cuda equals its sequential reading on
    the cpu harness: `D[wg, r]` under `for r in seq(0, 2)` is indexed at run time,
    and each `for kk` loop of wgmmas into it accumulates in registers copied from
    and back to D (instr.wgmma_loop; results/cypress/gemm_speed.md)."""
    lowered = _fig5_square_lowered(tmp_path)
    assert "for r in seq(0, 2):" in lowered and "for kk in seq(0, 4):" in lowered
    out = tmp_path / "fig5.gpuir"
    out.write_text(lowered)
    run = exec_file(str(out), ExecOptions(backend="cpu"))
    assert run.agree, run


def test_one_warpgroup_of_two_tiles_keeps_both_on_the_cpu_harness(
        tmp_path: Path) -> None:
    """Fig. 5 mapped with one warpgroup (WGS = 1) of two 64-row tiles, U = V = 128:
    `D: f32[1, 2, 64, 128]` in a CTA of 2 warpgroups (the consumer and the
    producer). gpuir_cuda took its prefix [1, 2] for the owners (2 cells, 2
    warpgroups) and stored one tile a thread, so `D[wg, r]` for r = 0, 1 were one
    (at N = 256 the compiled C[0, 0] was 12.77, the reading 20.06); the memory
    analysis's n* keeps both."""
    text = (ROOT / "examples/cypress/gemm.cyp").read_text()
    for old, new in [('tunables={"W": 64}', 'tunables={"W": 32}'),
                     ('tunables={"U": 256, "V": 256}', 'tunables={"U": 128, "V": 128}'),
                     ('tunables={"WGS": 2}', 'tunables={"WGS": 1}'),
                     ("pipeline=3)", "pipeline=4)"),
                     ("C=float32[256,512] A=float32[256,128] B=float32[128,512]",
                      "C=float32[128,256] A=float32[128,128] B=float32[128,256]")]:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "fig5_wgs1.cyp"
    path.write_text(text)
    _, _, _, lowered = _lowered(path)
    assert "D: f32[1, 2, 64, 128] @ Sm90_RmemMatrixD(64, 128)" in lowered
    out = tmp_path / "fig5_wgs1.gpuir"
    out.write_text(lowered)
    run = exec_file(str(out), ExecOptions(backend="cpu"))
    assert run.agree, run
