"""The Hopper lowerings of the GPU IR -> CUDA compiler (issue 32.12): the wgmma
accumulator in wgmma's own register fragment layout (PTX ISA, wgmma .m64nNk8, matrix
D), checked against that layout's definition, independently of the compiler's C."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from gpusem.compiler.gpuir_cuda.instr import wgmma_d_element
from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
from gpusem.fuzz.gpuir.seqpar import EXAMPLES
from gpusem.typing_rules.gpuir.frontend import load_proc


def ptx_fragment(r: int, j: int) -> tuple[int, int]:
    """The PTX ISA's figure for the f32 accumulator, spelled as the ISA does: warp
    w = r / 32 owns rows 16w .. 16w + 15; groupID = laneid >> 2, threadID_in_group =
    laneid % 4; d_j is at row groupID (+ 8 for j % 4 in {2, 3}) and column
    8 * (j / 4) + threadID_in_group * 2 + (j & 1)."""
    lane = r % 32
    group, tig = lane >> 2, lane % 4
    row = 16 * (r // 32) + group + (8 if j % 4 >= 2 else 0)
    return row, 8 * (j // 4) + tig * 2 + (j & 1)


@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_fragment_covers_the_tile_once(n):
    cells = [wgmma_d_element(r, j) for r in range(128) for j in range(n // 2)]
    assert sorted(cells) == [(m, c) for m in range(64) for c in range(n)]


def test_wgmma_fragment_is_the_ptx_layout():
    assert [wgmma_d_element(0, j) for j in range(5)] == \
        [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8)]
    assert wgmma_d_element(1, 0) == (0, 2) and wgmma_d_element(4, 0) == (1, 0)
    assert wgmma_d_element(32, 0) == (16, 0) and wgmma_d_element(127, 127) == (63, 255)
    assert all(wgmma_d_element(r, j) == ptx_fragment(r, j)
               for r in range(128) for j in range(128))


def _coords_line(source: str) -> str:
    (line,) = {ln.strip() for ln in source.splitlines()
               if ln.strip().startswith("const int gs_m = ") and ", gs_n = " in ln}
    return line


def test_emitted_wgmma_code_uses_the_fragment_layout():
    """The C the compiler prints for (gs_m, gs_n), evaluated for every thread and
    register, is the PTX layout (C's / and % on non-negatives are Python's // and %)."""
    proc, env, source = load_proc(str(EXAMPLES / "wgmma_waited.gpuir"), {})
    text = compile_proc(proc, env, source=source).source
    m = re.fullmatch(r"const int gs_m = (.*), gs_n = (.*);", _coords_line(text))
    assert m is not None
    row, col = (e.replace("/", "//") for e in m.groups())
    for r in range(128):
        for j in range(32):  # wgmma_waited: m64n64k8, 32 registers a thread
            env_c = {"gs_r": r, "gs_j": j}
            assert (eval(row, {}, env_c), eval(col, {}, env_c)) == ptx_fragment(r, j)


def test_emitted_wgmma_reads_the_operands_of_each_register():
    """The wgmma's own nest (instr.wgmma: rows gs_m and gs_m + 8, column gs_n for
    registers gs_j + gs_h and gs_j + 2 + gs_h) names, for every thread and register,
    the element of D the PTX layout puts there."""
    proc, env, source = load_proc(str(EXAMPLES / "wgmma_waited.gpuir"), {})
    lines = [ln.strip() for ln in compile_proc(proc, env, source=source)
             .source.splitlines()]
    row = next(ln for ln in lines if ln.endswith("// and gs_m + 8"))
    col = next(ln for ln in lines if ln.startswith("const int gs_n = "))
    row = row.removeprefix("const int gs_m = ").split(";")[0].replace("/", "//")
    col = col.removeprefix("const int gs_n = ").rstrip(";").replace("/", "//")
    assert "float gs_d0 = D[gs_j + gs_h], gs_d1 = D[gs_j + 2 + gs_h];" in lines
    for r in range(128):
        for j in range(0, 32, 4):
            for h in (0, 1):
                m = eval(row, {}, {"gs_r": r})
                n = eval(col, {}, {"gs_r": r, "gs_j": j, "gs_h": h})
                assert ptx_fragment(r, j + h) == (m, n)
                assert ptx_fragment(r, j + 2 + h) == (m + 8, n)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_wgmma_accumulator_stays_out_of_local_memory(tmp_path):
    """ptxas -v on the paper's GEMM: with a runtime register index the whole 64 x
    256 accumulator (128 floats a thread) was in local memory, a 512-byte stack
    frame; unrolled, what is left on the stack is a few spilled counters
    (results/cypress/gemm_speed.md)."""
    from gpusem.compiler.backends.cpu import HERE

    proc, env, source = load_proc(str(EXAMPLES / "gemm_hopper.gpuir"), {})
    cu = tmp_path / "gemm_hopper.cu"
    cu.write_text(compile_proc(proc, env, source=source).source)
    out = subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-Xptxas", "-v",
                          "--fmad=false", "-std=c++17", "-w", f"-I{HERE}", "-o",
                          str(tmp_path / "k.cubin"), str(cu)],
                         capture_output=True, text=True, check=True).stderr
    (frame,) = re.findall(r"(\d+) bytes stack frame", out)
    assert int(frame) < 128, out



@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_dma_warp_copies_without_a_loop_over_lanes(tmp_path):
    """SASS of the paper's GEMM: each row copy is one UBLKCP from uniform registers,
    no ELECT / R2UR / BRA.U.ANY loop over the lanes of the warp that issues it (the
    lowering before elect.sync: 14 such loops, 8 instructions a row, the lanes one
    after the other; results/cypress/gemm_speed.md)."""
    from gpusem.compiler.backends.cpu import HERE
    from gpusem.compiler.backends.toolchain_build import find_tool

    proc, env, source = load_proc(str(EXAMPLES / "gemm_hopper.gpuir"), {})
    cu = tmp_path / "gemm_hopper.cu"
    cu.write_text(compile_proc(proc, env, source=source).source)
    subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "--fmad=false", "-std=c++17",
                    "-w", f"-I{HERE}", "-o", str(tmp_path / "k.cubin"), str(cu)],
                   capture_output=True, text=True, check=True)
    tool = find_tool("cuobjdump")
    assert tool is not None, "cuobjdump (Triton's wheel carries one)"
    sass = subprocess.run([tool, "-sass", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, check=True).stdout
    assert "UBLKCP" in sass  # the copies are there
    assert "BRA.U.ANY" not in sass

def _loop_over_kk(source: str) -> tuple[list[str], list[str], list[str]]:
    """(before, inside, after): the code lines around the first `for kk` loop."""
    lines = [ln.strip() for ln in source.splitlines()
             if not ln.strip().startswith("//")]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("for (int kk = "))
    depth, end = 0, start
    for end in range(start, len(lines)):
        depth += lines[end].count("{") - lines[end].count("}")
        if depth == 0:
            break
    return lines[:start], lines[start + 1:end], lines[end + 1:]


def test_a_k_loop_of_wgmmas_keeps_d_out_of_the_loop():
    """instr.wgmma_loop: `for kk in seq(0, 4): wgmma(D[..], As[.., 8 kk ..], ..)`
    reads the thread's D once before the loop and writes it once after, every
    iteration accumulating in gs_acc (each wgmma's nest loaded and stored all of a
    local-memory D: results/cypress/gemm_speed.md)."""
    proc, env, source = load_proc(str(EXAMPLES / "gemm_hopper.gpuir"), {})
    before, inside, after = _loop_over_kk(compile_proc(proc, env,
                                                       source=source).source)
    assert before[-1] == "for (int gs_j = 0; gs_j < 128; gs_j++) gs_acc[gs_j] = D[gs_j];"
    assert before[-5] == "{ float gs_acc[128];  // D's registers through the loop over kk"
    assert after[3] == "for (int gs_j = 0; gs_j < 128; gs_j++) D[gs_j] = gs_acc[gs_j];"
    assert not [ln for ln in inside if re.search(r"\bD\[", ln)]
    assert "float gs_d0 = gs_acc[gs_j + gs_h], gs_d1 = gs_acc[gs_j + 2 + gs_h];" \
        in inside


def test_a_k_loop_over_a_moving_d_is_left_alone():
    """Where D's window moves with the loop (a different accumulator each
    iteration), hoisting it would be wrong: the loop is kept, each wgmma alone."""
    from dataclasses import replace

    from gpusem.compiler.gpuir_cuda import kir as K
    from gpusem.compiler.gpuir_cuda.from_gpuir import from_gpuir
    from gpusem.compiler.gpuir_cuda.instr import wgmma_loop
    from gpusem.typing_rules.gpuir.frontend import check_proc

    proc, env, _ = load_proc(str(EXAMPLES / "gemm_hopper.gpuir"), {})
    (kernel,) = from_gpuir(proc, check_proc(proc, env))
    loop = next(s for s in K.walk(kernel.body) if isinstance(s, K.GFor)
                and s.var == "kk")
    assert len(wgmma_loop(loop, env)) == 3  # load, the loop, store
    call = next(s for s in loop.body if isinstance(s, K.GInstr))
    moving = replace(call, args=(replace(call.args[0], base="64 * kk"),
                                 *call.args[1:]))
    other = replace(loop, body=(moving,))
    assert wgmma_loop(other, env) == (other,)


# ------------------------------------------------- the paper's Hopper GEMM (Sec. 6)
@pytest.fixture(scope="module")
def gemm_hopper():
    proc, env, source = load_proc(str(EXAMPLES / "gemm_hopper.gpuir"), {})
    return compile_proc(proc, env, source=source, file="gemm_hopper.gpuir")


def test_distributed_dims_of_the_accumulator_and_barriers():
    """n* of the memory analysis: D[cta, wg] is owned by a consumer warpgroup (2 of
    the allocating cluster's 6 warpgroups are idle), raw[cta] by a CTA."""
    from gpusem.typing_rules.gpuir.frontend import check_proc
    from gpusem.typing_rules.gpuir.memory import distributed_dims

    proc, env, _ = load_proc(str(EXAMPLES / "gemm_hopper.gpuir"), {})
    an = check_proc(proc, env)
    allocs = {s.name: s for s in _walk(proc.body)
              if type(s).__name__ in ("Alloc", "BarrierAlloc")}
    dims = distributed_dims(an)
    assert dims[id(allocs["D"])] == 2 and dims[id(allocs["raw"])] == 1
    assert dims[id(allocs["As"])] == 1


def _walk(body):
    for s in body:
        yield s
        yield from _walk(getattr(s, "body", ()))


def test_tensor_maps_are_windows_of_their_arrays(gemm_hopper):
    """Host code `A_map = A[0:N, 0:N] @ Sm90_tensorMap(...)` adds no parameter: the
    TMA rows are read from A itself at the map's coordinates."""
    (k,) = gemm_hopper.kernels
    assert [p.name for p in k.params] == ["N", "A", "B", "C"]
    code = [ln for ln in gemm_hopper.source.splitlines()
            if not ln.lstrip().startswith("//")]
    assert not any("A_map" in ln or "B_map" in ln for ln in code)
    assert "gs_bulk_copy_g2s(&As[" in gemm_hopper.source
    assert "&A[gs_add_i32(gs_mul_i32(gs_add_i32(gs_mul_i32(256, task_m), " \
        "gs_mul_i32(128, cta)), 256), gs_mul_i32(32, k))" in gemm_hopper.source


def test_accumulator_is_one_fragment_per_consumer_thread(gemm_hopper):
    # 64 x 256 / 128 threads of the owning warpgroup
    assert "  float D[128] = {};" in gemm_hopper.source.splitlines()


def test_rings_and_multicast_arrivals(gemm_hopper):
    """Await(war, tl, -4): rings of 4 mbarriers; raw expects 2 producer warps a phase
    (its own and the other CTA's, remote), war 2 x 256 consumer threads; the own
    producer expects the 48 KiB landing in its CTA (A 16 KiB + all of B 32 KiB)."""
    src = gemm_hopper.source
    assert "gs_mbar_init(&raw[gs_i], 64u)" in src and "gs_i < 4; gs_i++) gs_mbar_init" \
        in src
    assert "gs_mbar_init(&war[gs_i], 512u)" in src
    assert "gs_mbar_arrive_expect_tx(&raw[(0) * 4 + gs_na_raw[0] % 4u], 49152u)" in src
    assert src.count("gs_mbar_arrive_remote(&war[(0) * 4 + gs_na_war[0] % 4u], gs_c)") \
        == 2
    # Max = w + n + 1 (Figure 22): the w-th Await ~3 waits for arrive w - 3
    assert src.count("const int gs_m = (int)gs_nw_war[0] - 3;") == 2
    assert src.count("const int gs_m = (int)gs_nw_raw[0];") == 2


def test_multicast_warps_issue_a_share_each(gemm_hopper):
    """Each CTA's warp its share of the rows, issued by one elected lane (elect.sync:
    ptxas then issues the copies from uniform registers, no loop over the lanes),
    completing on the slot of lane 0's arrive count."""
    src = gemm_hopper.source
    copies = src.count("gs_i++) gs_bulk_copy_g2s")
    assert copies >= 2 and src.count("  if (gs_elect_one()) {") == copies
    assert "for (int gs_i = gs_q * 128; gs_i < (gs_q + 1) * 128; " \
        "gs_i++) gs_bulk_copy_g2s_multicast(&Bs[" in src
    assert "for (int gs_i = 0; gs_i < 128; gs_i++) gs_bulk_copy_g2s(&As[" in src
    assert "gs_lane" not in src
    assert "const unsigned short gs_mask = (unsigned short)(0x3u << " in src
    assert "gs_u64* const gs_bar = &raw[(0) * 4 + __shfl_sync(0xffffffffu, " \
        "gs_na_raw[0], 0) % 4u];" in src


def test_ring_keeps_a_producer_ahead_apart():
    """The rings keep the phases of a pipeline apart: the other CTA's producer, up
    to 4 iterations ahead, arrives and completes its B multicast on raw's slot of its
    own iteration, not on the phase this CTA's consumers still await. (Measured once
    with raw alone on one mbarrier a cell: schedule 0 fails, "mbarrier: arrive count
    exceeds the pending arrivals of the phase".) With them the GEMM agrees under
    every schedule kind (forward, reverse, random, eager)."""
    from gpusem.compiler.gpuir_cuda.run import check_proc

    proc, env, source = load_proc(str(EXAMPLES / "gemm_hopper.gpuir"), {})
    v = check_proc(proc, env, "cpu", (0, 1, 2, 3, 4), source=source)
    assert v.agree, v.describe()
