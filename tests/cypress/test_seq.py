"""The sequential reading seq(program, mapping) (interpreter/cypress/seq.py): Fig. 5's
GEMM computes A @ B exactly under its mapping and under others (l.163), the
partition_by_mma layouts of Fig. 4 (errata "Cypress partition_by_mma"), prange
non-interference, call_external's missing meaning, and the task-tree printer."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from gpusem.calculus.cypress.inputs import header_inputs, make_inputs
from gpusem.calculus.cypress.machine import Processor
from gpusem.calculus.cypress.reader import read_program
from gpusem.calculus.errors import IllTyped, Trap
from gpusem.calculus.span import NO_SPAN
from gpusem.interpreter.cypress.seq import NoReferenceMeaning, seq
from gpusem.interpreter.cypress.tree import print_tree, task_tree
from gpusem.interpreter.cypress.views import partition_by_mma, root_view

ROOT = Path(__file__).resolve().parents[2]
GEMM = (ROOT / "examples/cypress/gemm.cyp").read_text()


def _run(text: str, spec: str | None = None) -> tuple[dict[str, np.ndarray],
                                                      dict[str, np.ndarray]]:
    arrays, scalars = make_inputs(spec or header_inputs(text) or "")
    out, _ = seq(read_program(text, "t.cyp"), arrays, scalars)
    return arrays, out


def test_fig5_gemm_is_numpy_matmul_exactly() -> None:
    a, out = _run(GEMM)
    assert np.array_equal(out["C"], a["A"] @ a["B"])
    assert np.array_equal(out["A"], a["A"]) and np.array_equal(out["B"], a["B"])


@pytest.mark.parametrize("edit", [
    {'"U": 256, "V": 256': '"U": 128, "V": 256'},
    {'tunables={"W": 64}': 'tunables={"W": 32}'},
    {'tunables={"WGS": 2}': 'tunables={"WGS": 1}'},
    {"pipeline=3": "pipeline=1", "warpspecialize=True": "warpspecialize=False"},
])
def test_every_mapping_computes_the_same_result(edit: dict[str, str]) -> None:
    """l.163: the choice of mapping can only affect performance, not correctness."""
    text = GEMM
    for old, new in edit.items():
        assert old in text
        text = text.replace(old, new)
    a, out = _run(text, "C=float32[128,256] A=float32[128,64] B=float32[64,256]")
    assert np.array_equal(out["C"], a["A"] @ a["B"])


def test_fig4_c_layout_of_one_warpgroup() -> None:
    """Fig. 4: rows in groups of 16 per warp; lane t holds rows t//4 and t//4+8 and
    columns 2(t%4), 2(t%4)+1 of every 8 columns."""
    tile = root_view("C", np.arange(64 * 16).reshape(64, 16))
    warps = partition_by_mma(tile, 64, Processor.WARP, "C", NO_SPAN)
    w1 = warps.piece((1,), NO_SPAN)
    assert w1.read()[:, 0].tolist() == [16 * (16 + i) for i in range(16)]
    lanes = partition_by_mma(w1, 64, Processor.THREAD, "C", NO_SPAN)
    t5 = lanes.piece((5,), NO_SPAN).read()
    # lane 5: rows 1 and 9 of warp 1 (tile rows 17, 25), columns 2, 3, 10, 11
    assert t5.tolist() == [[17 * 16 + c for c in (2, 3, 10, 11)],
                           [25 * 16 + c for c in (2, 3, 10, 11)]]


@pytest.mark.parametrize("rows", [64, 128, 192])
def test_mma_pieces_tile_c_once_and_compute_the_product(rows: int) -> None:
    """Taller C tiles repeat the pattern; A and B pieces are what a C piece needs."""
    rng = np.random.default_rng(rows)
    a = rng.integers(-3, 4, (rows, 32)).astype(np.float32)
    b = rng.integers(-3, 4, (32, 24)).astype(np.float32)
    c = root_view("C", np.zeros((rows, 24), np.float32))
    av, bv = root_view("A", a), root_view("B", b)
    seen = np.zeros(rows * 24, int)
    cw = partition_by_mma(c, 64, Processor.WARP, "C", NO_SPAN)
    aw = partition_by_mma(av, 64, Processor.WARP, "A", NO_SPAN)
    bw = partition_by_mma(bv, 64, Processor.WARP, "B", NO_SPAN)
    for w in range(4):
        cs = [partition_by_mma(x.piece((w,), NO_SPAN), 64, Processor.THREAD, op, NO_SPAN)
              for x, op in ((cw, "C"), (aw, "A"), (bw, "B"))]
        for t in range(32):
            ct, at, bt = (p.piece((t,), NO_SPAN) for p in cs)
            np.add.at(seen, ct.idx.reshape(-1), 1)
            ct.write(ct.read() + at.read() @ bt.read())
    assert (seen == 1).all()
    assert np.array_equal(c.base.reshape(rows, 24), a @ b)


def test_mma_partition_refuses_rows_that_do_not_fill_the_warps() -> None:
    tile = root_view("C", np.zeros((48, 8), np.float32))
    with pytest.raises(Trap, match="multiple of 64"):
        partition_by_mma(tile, 64, Processor.WARP, "C", NO_SPAN)


LEAFY = '''
@task("t", Inner, reads=["X"], writes=["Y"])
def top(X: tensor[1, f32], Y: tensor[1, f32]):
    Xp = partition_by_blocks(X, (2,))
    Yp = partition_by_blocks(Y, (BLK,))
    for i in prange(2):
        launch("t", Xp[i], Yp[i])

@task("t", Leaf, reads=["X"], writes=["Y"])
def leaf(X: tensor[1, f32], Y: tensor[1, f32]):
    BODY

TaskMapping(instance="top", variant="top", proc=BLOCK, mems=[GLOBAL, GLOBAL],
            entrypoint=True, calls=["leaf"])
TaskMapping(instance="leaf", variant="leaf", proc=THREAD, mems=[GLOBAL, REGISTER])
'''


def test_prange_pieces_that_are_disjoint_run() -> None:
    a, out = _run(LEAFY.replace("BLK", "2").replace("BODY", "copy(X, Y)"),
                  "X=float32[4] Y=float32[4]")
    assert np.array_equal(out["Y"], a["X"])


def test_prange_aliasing_writes_are_illegal() -> None:
    text = LEAFY.replace("BLK", "4").replace("BODY", "clear(Y)")
    with pytest.raises(IllTyped) as caught:
        _run(text.replace("Yp[i]", "Yp[0]"), "X=float32[4] Y=float32[4]")
    assert caught.value.rule == "Prange-NonInterference"
    assert caught.value.prefix == "prange interference"


def test_call_external_has_no_reference_meaning() -> None:
    text = LEAFY.replace("BLK", "2").replace("BODY", 'call_external("cute", X, Y)')
    with pytest.raises(NoReferenceMeaning) as caught:
        _run(text, "X=float32[4] Y=float32[4]")
    assert caught.value.rule == "Seq-CallExternal"
    assert caught.value.prefix == "no reference meaning"


def test_an_uncleared_accumulator_shows_as_nan() -> None:
    text = GEMM.replace('    launch("clear", Cacc)\n', "")
    _, out = _run(text, "C=float32[128,256] A=float32[128,64] B=float32[64,256]")
    assert np.isnan(out["C"]).all()


def test_the_instantiated_task_tree_of_fig5() -> None:
    arrays, scalars = make_inputs(header_inputs(GEMM) or "")
    lines = print_tree(task_tree(read_program(GEMM, "g.cyp"), arrays, scalars))
    names = [re.match(r"\s*(\w+) =", ln)[1] for ln in lines]  # type: ignore[index]
    assert names[:3] == ["gemm_host", "gemm_block", "clear_tile"]
    assert names.count("gemm_thread") == 1 and names[-1] == "copy_thread"
    thread = next(ln for ln in lines if ln.lstrip().startswith("gemm_thread"))
    # 256 rows over 2 warpgroups, 4 warps, 8 lane rows: a 4 x 64 register fragment
    assert "C: [4, 64]@REGISTER" in thread and "@ THREAD" in thread
    assert "[x2, warpspecialize, pipeline=3]" in lines[1]  # 2 blocks at once
    assert thread.endswith("[x32]")  # 32 lanes of a warp


def test_none_tensor_held_by_two_threads_must_be_materialised() -> None:
    """l.395: the accumulator is NONE above the threads; clearing and accumulating it
    in Fig. 4's layout but copying it out one row per lane would need it in a memory
    two lanes share, which the compiler reports (rule None-Materialisation)."""
    rows = '''
@task("copy", Inner, reads=["S"], writes=["D"])
def copy_rows(S: tensor[2, f16], D: tensor[2, f16]):
    R, N = S.shape[0], S.shape[1]
    Sp = partition_by_blocks(S, (1, N))
    Dp = partition_by_blocks(D, (1, N))
    for i in prange(R):
        launch("copy", Sp[i, 0], Dp[i, 0])


MAPPING = ['''
    text = GEMM.replace("\nMAPPING = [", rows, 1)
    text = text.replace('''TaskMapping(instance="copy_warp", variant="copy_inner", proc=WARP,
                mems=[NONE, GLOBAL], tunables={"PIECES": 32, "PROC": THREAD},''',
                        '''TaskMapping(instance="copy_warp", variant="copy_rows", proc=WARP,
                mems=[NONE, GLOBAL],''')
    assert "copy_rows\", proc=WARP" in text
    spec = "C=float32[128,256] A=float32[128,64] B=float32[64,256]"
    with pytest.raises(IllTyped) as caught:
        _run(text, spec)
    assert caught.value.rule == "None-Materialisation"
    assert caught.value.prefix == "none memory"
    # the same copy tree is fine once the accumulator is materialised per warp
    shared = text.replace('''variant="copy_rows", proc=WARP,
                mems=[NONE, GLOBAL]''', '''variant="copy_rows", proc=WARP,
                mems=[SHARED, GLOBAL]''')
    a, out = _run(shared, spec)
    assert np.array_equal(out["C"], a["A"] @ a["B"])
