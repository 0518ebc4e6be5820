"""The Hopper lowerings of the GPU IR -> CUDA compiler (issue 32.12): the wgmma
accumulator in wgmma's own register fragment layout (PTX ISA, wgmma .m64nNk8, matrix
D), checked against that layout's definition, independently of the compiler's C."""

from __future__ import annotations

import re

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
               if ln.strip().startswith("const int gs_m = ")}
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
