"""The race analysis on the shapes whose barriers it once missed (issue 14, item 3) and
the uniform stores it once took for races (issue 24, item 1: `uniform_*`), and the
loop iterations, copies and Local arrays it once could not see through (issue 24, item
3: `loop_same_run_*`, `copy_back_*`, `local_zero_*`, `local_last_write_*`,
`constant_if_*`), and the branches of a uniform `if` (issue 24, Trust II:
`uniform_branch_*`, `exact_branch_*`; a region allocated in a counted loop,
`loop_alloc_*`; seed 3's nine, errata 8e-8h: `own_write_next_run_*`, a soundness fix
whose `_race` the analysis called race-free, `own_write_any_site_*`,
`unwritten_initial_*`, `loop_read_*`), as
data: `race_shapes/*.bundl`, each `// NAME: race yes|no` with a `why`, in pairs: a
race-free program the analysis used to call racy (a false exclusion from the compiler
oracle) and a real race of the same shape, which it must still report. The truth of
every file is established independently, by exhaustive exploration of all its
interleavings (one final memory, or several).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.interpreter.bundl.schedulers import run_program
from gpusem.typing_rules.bundl.race import analyse
from gpusem.typing_rules.bundl.stmt import check_program

SHAPES = sorted((Path(__file__).parent / "race_shapes").glob("*.bundl"))


def _racy(path: Path) -> bool:
    m = re.search(r"^// \w+: race (yes|no)$", path.read_text(), re.M)
    assert m, f"{path.name}: header `// NAME: race yes|no`"
    return m.group(1) == "yes"


def test_every_shape_comes_in_pairs():
    names = {p.stem for p in SHAPES}
    assert len(SHAPES) >= 10
    for stem in names:
        base = stem.rsplit("_", 1)[0]
        assert {f"{base}_ok", f"{base}_race"} <= names, stem


@pytest.mark.parametrize("path", SHAPES, ids=lambda p: p.stem)
def test_analysis_verdict_matches_exhaustive_exploration(path):
    prog = parse_program(path.read_text(), path.name)
    check_program(prog)
    every = run_program(prog, "exhaustive", max_steps=1_000_000)
    assert every.kind == "terminated", every.message
    truly_racy = len(every.final_memories) > 1
    assert truly_racy == _racy(path), every.final_memories  # the header is true
    report = analyse(prog)
    assert report.race_free != truly_racy, report.describe()


COUNTED = """machine blocks = 1, threads = 2;
global out : int[1];
main {
  let i : int @ grid[1] = 0;
  while i < 3 {
    alloc v : int[2] in Local;
    LINE
    i = i + 1;
  }
}
"""


@pytest.mark.parametrize(("line", "bounds"), [
    ("out[0] = 1;", ("i", 0, 3)),  # a header (alloc) in the body: its scope is not it
    ("let i : int @ grid[1] = 5;", None),  # shadowed: the last line is another i's
    ("i = i + 2;", None),  # assigned elsewhere too
])
def test_counted_loops_are_recognised_exactly(line, bounds):
    from gpusem.typing_rules.bundl.race_order import counted, flatten

    prog = parse_program(COUNTED.replace("LINE", line), "counted.bundl")
    items = flatten(prog.main)
    assert counted(items, 1) == bounds


FRESH = """machine blocks = 1, threads = 2;
global out : int[2];
main {
  let i : int @ grid[1] = 0;
  while i < 2 {
    OPEN
    alloc v : int[1] in Global;
    v[0] = i + 1;
    CLOSE
    i = i + 1;
  }
}
"""


@pytest.mark.parametrize(("open_", "close", "race_free"), [
    ("", "", True),  # Fresh-Region-Per-Iteration: iterations store into two regions
    # a guard between the loop and the alloc: a thread that skips an iteration's
    # alloc meets its peer's run of another iteration in one region, so the
    # iterations' regions stay merged (this one always takes the branch, but the
    # analysis cannot tell: a condition that reads memory)
    ("if out[1] >= 0 {", "}", False),
    # an uncounted loop is a guard too: its runs per iteration are not known
    ("let j : int @ grid[1] = 0; while j < out[1] + 1 { j = j + 1;", "}", False),
])
def test_fresh_region_per_iteration_only_without_a_guard(open_, close, race_free):
    prog = parse_program(FRESH.replace("OPEN", open_).replace("CLOSE", close),
                         "fresh.bundl")
    check_program(prog)
    assert analyse(prog).race_free is race_free
