"""The reader of Fig. 5's notation (calculus/cypress/reader.py): Fig. 5 reads, user
code is never run, and malformed input is one BadInput with its file:line:col."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress.machine import Memory, Processor
from gpusem.calculus.cypress.reader import read_program
from gpusem.calculus.errors import BadInput

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "examples/cypress/gemm.cyp"


def test_fig5_gemm_reads_with_its_mapping() -> None:
    p = read_program(GEMM.read_text(), "gemm.cyp")
    assert {v.name for v in p.variants} >= {"gemm_host", "gemm_block", "gemm_tile",
                                             "gemm_inner", "gemm_thread"}
    host = p.instance("gemm_host")
    assert host is not None and host.entrypoint and host.proc is Processor.HOST
    assert host.tunables == (("U", 256), ("V", 256))
    block = p.instance("gemm_block")
    assert block is not None and block.warpspecialize and block.pipeline == 3
    warp = p.instance("gemm_warp")
    assert warp is not None and ("PROC", Processor.THREAD) in warp.tunables
    thread = p.instance("gemm_thread")
    assert thread is not None and thread.mems[0] is Memory.REGISTER
    inner = p.variant("gemm_inner")
    assert inner is not None and inner.kind == "Inner"
    loop = inner.body[-1]
    assert isinstance(loop, A.Range) and loop.kind == "prange"
    assert isinstance(loop.body[0], A.Launch) and loop.body[0].task == "gemm"


def test_user_code_is_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f"open({str(marker)!r}, 'w')\n"
    with pytest.raises(BadInput):
        read_program(text, "x.cyp")
    assert not marker.exists()


@pytest.mark.parametrize("text, where, prefix", [
    ("def f(:\n", "x.cyp:1:7", "syntax error"),
    ('@task("t", Inner, writes["C"])\ndef f(C: tensor[2, f16]):\n    pass\n',
     "x.cyp:1:19", "bad task"),  # Fig. 5a l.33's typo: a subscript, not a keyword
    ('@task("t", Leaf)\ndef f(C: tensor[2, f16]):\n    gemm(C)\n', "x.cyp:3:5",
     "unknown function"),
    ('@task("t", Leaf)\ndef f(C: tensor[9, f16]):\n    clear(C)\n', "x.cyp:2:10",
     "bad type"),
    ('TaskMapping(instance="a", variant="a", proc=GPU, mems=[])\n', "x.cyp:1:45",
     "unknown processor"),
    ('TaskMapping(instance="a", variant="a", proc=HOST, mems=[DRAM])\n', "x.cyp:1:57",
     "unknown memory"),
    ('TaskMapping(instance="a", variant="a", proc=HOST, mems=[], speed=3)\n',
     "x.cyp:1:60", "bad mapping"),
    ("x = 1\n", "x.cyp:1:5", "unexpected value"),
    (('@task("t", Inner)\ndef f(C: tensor[2, f16]):\n    for i in range(4):\n'
     '        pass\n'), "x.cyp:3:14", "bad loop"),
])
def test_malformed_input_is_one_line_with_its_position(text: str, where: str,
                                                        prefix: str) -> None:
    with pytest.raises(BadInput) as caught:
        read_program(text, "x.cyp")
    assert caught.value.prefix == prefix
    assert caught.value.one_line().startswith(where + ": ")
    assert "\n" not in caught.value.one_line()
