"""The legality rules of seed 001 Sec. 3.2-3.3 (typing_rules/cypress, and the rules on
the instantiated tree in interpreter/cypress/tree.py): Fig. 5 is legal, and each
mutant of it that breaks one rule is rejected by that rule, naming its line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpusem.calculus.cypress.inputs import header_inputs, make_inputs
from gpusem.calculus.cypress.reader import read_program
from gpusem.interpreter.cypress.tree import check_tree, task_tree
from gpusem.typing_rules.cypress import check_program

ROOT = Path(__file__).resolve().parents[2]
GEMM = (ROOT / "examples/cypress/gemm.cyp").read_text()


def _mutant(*edits: tuple[str, str]) -> str:
    text = GEMM
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def _static_rules(text: str) -> list[str]:
    return [e.rule for e in check_program(read_program(text, "m.cyp"))]


def _tree_rules(text: str) -> list[str]:
    program = read_program(text, "m.cyp")
    arrays, scalars = make_inputs(header_inputs(text) or "")
    return [e.rule for e in check_tree(task_tree(program, arrays, scalars))]


def test_fig5_is_legal() -> None:
    assert _static_rules(GEMM) == []
    assert _tree_rules(GEMM) == []


MUTANTS = [
    ("Variant-Signature", [("def gemm_thread(C: tensor[2, f16]", "def gemm_thread(C: tensor[2, f32]")]),
    ("Privilege-Names", [('@task("clear", Leaf, writes=["C"])', '@task("clear", Leaf, writes=["X"])')]),
    ("Inner-Body", [('    launch("clear", Cacc)\n', "    clear(Cacc)\n")]),
    ("Leaf-Body", [("    mma(C, A, B)\n", '    launch("gemm", C, A, B)\n')]),
    ("Leaf-Privilege", [("    copy(S, D)\n", "    copy(D, S)\n")]),
    ("Names-Bound", [("Cp[i, j], Ap[i, 0]", "Cp[i, j], Aq[i, 0]")]),
    ("Mapping-Entrypoint", [("entrypoint=True, ", "")]),
    ("Mapping-Variant", [('variant="gemm_thread", proc=THREAD', 'variant="gemm_leaf", proc=THREAD')]),
    ("Mapping-Mems", [("mems=[REGISTER, SHARED, SHARED]", "mems=[REGISTER, SHARED]")]),
    ("Mapping-Visible", [('mems=[GLOBAL, GLOBAL, GLOBAL], tunables={"W": 64}', 'mems=[REGISTER, GLOBAL, GLOBAL], tunables={"W": 64}')]),
    ("Mapping-None", [("mems=[REGISTER, SHARED, SHARED]", "mems=[NONE, SHARED, SHARED]")]),
    ("Mapping-None", [("mems=[GLOBAL, GLOBAL, GLOBAL], tunables={\"U\"", "mems=[GLOBAL, SHARED, GLOBAL], tunables={\"U\"")]),
    ("Mapping-Tunables", [('tunables={"W": 64}', 'tunables={"W": 64, "X": 1}')]),
    ("Mapping-Tunables", [('"PIECES": 32, "PROC": THREAD', '"PIECES": 32, "PROC": 3')]),
    ("Mapping-Calls", [('calls=["gemm_thread"]', 'calls=["gemm_thread", "gemm_warp"]')]),
    ("Mapping-Calls", [('calls=["gemm_block"]', 'calls=["gemm_blok"]')]),
    ("Mapping-Processor", [('instance="gemm_thread", variant="gemm_thread", proc=THREAD', 'instance="gemm_thread", variant="gemm_thread", proc=WARP')]),
    ("Launch-Signature", [("launch(\"gemm\", Cp[i], Ap[i], Bp[i])", "launch(\"gemm\", Cp[i], Ap[i])")]),
    ("Launch-Privilege", [('@task("copy", Inner, reads=["S"], writes=["D"])\ndef copy_tile', '@task("copy", Inner, reads=["S", "D"])\ndef copy_tile')]),
    ("Prange-NonInterference", [("launch(\"gemm\", Cp[i, 0], Ap[i, 0], B)", "launch(\"gemm\", Cp[0, 0], Ap[i, 0], B)")]),
    ("WarpSpecialize-Block", [('proc=WARP,\n                mems=[NONE, SHARED, SHARED], tunables={"PIECES": 32', 'proc=WARP, warpspecialize=True,\n                mems=[NONE, SHARED, SHARED], tunables={"PIECES": 32')]),
    ("Pipeline-Loop", [('calls=["gemm_warp"])', 'calls=["gemm_warp"], pipeline=2)')]),
]


@pytest.mark.parametrize("rule, edits", MUTANTS, ids=[f"{r}-{i}" for i, (r, _) in enumerate(MUTANTS)])
def test_each_rule_rejects_its_mutant(rule: str, edits: list[tuple[str, str]]) -> None:
    rules = _static_rules(_mutant(*edits))
    assert rule in rules, rules


def test_every_static_message_cites_its_line() -> None:
    for rule, edits in MUTANTS:
        for e in check_program(read_program(_mutant(*edits), "m.cyp")):
            # Names-Bound is ours (the reading would trap), the others are the paper's
            assert re.search(r"\bl\.\d+", e.message) or e.rule == "Names-Bound", (rule, e.message)


def test_memory_visibility() -> None:
    text = _mutant(("mems=[NONE, SHARED, SHARED], tunables={\"WGS\": 2}",
                    "mems=[NONE, REGISTER, SHARED], tunables={\"WGS\": 2}"))
    assert _static_rules(text) == ["Mapping-Visible"]


def test_shared_memory_bound() -> None:
    """Fig. 5's 3-deep pipeline of 256x64 and 64x256 f16 tiles takes 192 KiB; a 4-deep
    one (256 KiB) does not fit in 227 KiB, and W = 32 at depth 4 (128 KiB) does."""
    assert _tree_rules(_mutant(("pipeline=3", "pipeline=4"))) == ["Shared-Bound"]
    assert _tree_rules(_mutant(("pipeline=3", "pipeline=4"),
                               ('tunables={"W": 64}', 'tunables={"W": 32}'))) == []


def test_prange_capacity() -> None:
    text = _mutant(('"PIECES": 32, "PROC": THREAD', '"PIECES": 64, "PROC": THREAD'))
    # 64 lanes do not exist; the partition itself has only 32 pieces, so the reading
    # traps too, but the capacity rule names the mapping's error first
    assert "Prange-Capacity" in _tree_rules(text.replace(
        "    for i in prange(PIECES):\n        launch(\"gemm\", Cp[i], Ap[i], Bp[i])",
        "    for i in prange(PIECES):\n        launch(\"gemm\", Cp[i % 32], Ap[i % 32], Bp[i % 32])"))


def test_prange_write_not_indexed_by_the_loop() -> None:
    text = _mutant(("launch(\"clear\", Cp[i, 0])", "launch(\"clear\", Cp[0, 0])"))
    assert _static_rules(text) == ["Prange-NonInterference"]
