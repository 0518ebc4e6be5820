"""The race verdict is a function of the program, not of what the process analysed
before (stop 28's finding G1, results/toolchain/FINDINGS.md).

z3 builds terms in one process-wide context by default; their ids, so the order of
z3's search, depended on the process's history, and a pair near its resource budget
was decided in one process and undecided in another. The program below (the H200
toolchain campaign's bundle) was proved race-free by a campaign worker, declined in a
fresh process, and analysed three times in one process gave undecided, undecided,
race-free. Each analysis now runs in a z3 context of its own (`race_context`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import z3
from gpusem.calculus.bundl.parser import parse_program
from gpusem.interpreter.bundl.reference import (
    fast_reference,
    outcome_difference,
    reference,
)
from gpusem.typing_rules.bundl.race import RLIMIT_PROGRAM, analyse
from gpusem.typing_rules.bundl.race_context import NeedsZ3, without_context

HERE = Path(__file__).parent
G1 = HERE / "data" / "race_history_g1.bundl"
EXAMPLES = [HERE.parents[1] / "examples" / "bundl" / name for name in (
    "block_reduce_shared.bundl", "async_copy_shared.bundl", "memcpy_global.bundl",
    "alloc_global_per_unit.bundl", "if_else_sign.bundl", "map_double.bundl")]


def _verdict(path: Path) -> tuple[bool, int, str]:
    report = analyse(parse_program(path.read_text(), path.name),
                     rlimit_total=RLIMIT_PROGRAM)
    return report.race_free, report.rlimit, report.describe()


def test_the_same_program_gets_the_same_verdict_and_units_whatever_ran_before():
    first = _verdict(G1)
    seen = [first]
    for example in EXAMPLES:  # other programs' terms in between
        _verdict(example)
        seen.append(_verdict(G1))
    assert len(EXAMPLES) >= 4
    assert all(v == first for v in seen), seen


def test_a_fresh_process_agrees_with_a_used_one():
    for example in EXAMPLES:
        _verdict(example)
    here = _verdict(G1)
    code = ("import sys; from pathlib import Path; sys.path[:0] = [sys.argv[1]]; "
            "from test_race_history import _verdict; "
            "print(repr(_verdict(Path(sys.argv[2]))))")
    out = subprocess.run([sys.executable, "-c", code, str(HERE), str(G1)],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == repr(here)


def test_attributions_second_path_agrees_with_the_first_on_g1():
    prog = parse_program(G1.read_text(), G1.name)
    full = reference(prog)
    fast = fast_reference(prog, prove_race_free=True)
    assert outcome_difference(fast, full) is None


def test_an_undecided_race_verdict_does_not_contradict_a_proof():
    """On the H200 the campaign's worker proved two programs race-free and
    attribution's second path found a pair undecided (z3's search near its budget
    differs with the process's state and z3's version): `second-reference` blamed
    gpusem. A proof stands against "undecided"; a race found (a witness) does not."""
    from dataclasses import replace

    example = EXAMPLES[0]
    full = reference(parse_program(example.read_text(), example.name))
    assert not full.racy and full.kind == "terminated"
    unsure = replace(full, racy=True, why="not proven race-free: ... (undecided by z3)",
                     fast=True, undecided=True)
    assert outcome_difference(unsure, full) is None
    assert outcome_difference(full, replace(unsure, fast=False)) is None
    raced = replace(unsure, undecided=False, why="schedules rr and x disagree")
    assert "race verdict" in (outcome_difference(raced, full) or "")
    # the memories are still compared when one side is only undecided
    name = next(iter(full.globals))
    cells = list(full.globals[name])
    cells[0] = cells[0] + 1 if not isinstance(cells[0], bool) else not cells[0]
    moved = replace(unsure, outcome=replace(
        unsure.outcome, globals={**full.globals, name: cells}))
    assert "memory" in (outcome_difference(moved, full) or "")


def test_a_walk_without_z3_is_refused_nothing_and_a_term_raises() -> None:
    """`without_context`: a block that makes no z3 object runs; one that would make a
    term raises NeedsZ3; the default context is back after either."""
    before = z3.main_ctx()
    with without_context():
        pass
    with pytest.raises(NeedsZ3), without_context():
        z3.BitVecVal(1, 32)
    assert z3.main_ctx() is before


def test_a_program_with_no_pair_is_decided_without_a_context(monkeypatch) -> None:
    """Reads of Global cells only: no pair to decide, no z3 context made (race.py's
    Note); a program with pairs gets one, and the verdict it always had."""
    made: list[object] = []
    init = z3.Context.__init__

    def counted(self, *args, **kws):
        made.append(self)
        init(self, *args, **kws)

    monkeypatch.setattr(z3.Context, "__init__", counted)
    reads = parse_program("machine blocks = 2, threads = 2;\n"
                          "global g : int[4] = iota;\n"
                          "main {\n  let v : int @ thread[1] = g[1];\n}\n", "reads")
    report = analyse(reads, rlimit_total=RLIMIT_PROGRAM)
    assert report.race_free and report.pairs == 0 and not made
    assert _verdict(G1)[0] == analyse(parse_program(G1.read_text(), G1.name),
                                      rlimit_total=RLIMIT_PROGRAM).race_free
    assert len(made) == 2


def test_an_analysis_frees_its_context_as_it_returns(monkeypatch):
    """Its walk's closures refer to the walk (a cycle holding z3 terms): unreleased,
    the context (~16 MB) lived on to the next garbage collection, and the next
    analysis made its own in fresh memory (issue 31.3: ~4,000 page faults each)."""
    import gc
    import weakref

    from gpusem.typing_rules.bundl import race_context

    made: list[weakref.ref] = []

    class Tracked(z3.Context):
        def __init__(self) -> None:
            super().__init__()
            made.append(weakref.ref(self))

    monkeypatch.setattr(race_context.z3, "Context", Tracked)
    shapes = sorted((HERE / "race_shapes").glob("*.bundl"))
    was = gc.isenabled()
    gc.disable()  # only reference counts free anything below
    try:
        for path in [G1, *EXAMPLES, *shapes]:
            before = len(made)
            analyse(parse_program(path.read_text(), path.name),
                    rlimit_total=RLIMIT_PROGRAM)
            assert all(ref() is None for ref in made[before:]), path.name
    finally:
        if was:
            gc.enable()
    assert len(made) > 10  # contexts were made and checked
