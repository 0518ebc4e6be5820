"""The race verdict does not depend on the machine's load (issue 24).

The oracle's race analysis had wall-clock budgets (300 ms a pair, 1.5 s a program):
on a loaded machine a program the analysis proves race-free on an idle one was
declined as undecided. Its budgets are now z3 resource units (`rlimit`), which count
the solver's own steps. Here time runs ten seconds per look at the clock: the verdict
is the same as with the real clock, and so are the units.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

from gpusem.calculus.bundl.parser import parse_program
from gpusem.interpreter.bundl.reference import unproven_race_freedom
from gpusem.typing_rules.bundl.race import RLIMIT_PROGRAM, analyse

EXAMPLE = Path(__file__).parents[2] / "examples" / "bundl" / "block_reduce_shared.bundl"


def test_a_slow_clock_does_not_change_the_oracle_verdict(monkeypatch):
    prog = parse_program(EXAMPLE.read_text(), EXAMPLE.name)
    idle = analyse(prog, rlimit_total=RLIMIT_PROGRAM)
    assert idle.race_free and 0 < idle.rlimit < RLIMIT_PROGRAM
    ticks = itertools.count()
    monkeypatch.setattr(time, "monotonic", lambda: 10.0 * next(ticks))
    monkeypatch.setattr(time, "perf_counter", lambda: 10.0 * next(ticks))
    assert unproven_race_freedom(prog) is None
    loaded = analyse(prog, rlimit_total=RLIMIT_PROGRAM)
    # z3 counts its own steps: the clock does not enter; and each analysis has a z3
    # context of its own (race_context), so the count is the same to the unit (it
    # moved with the process's history before: 4159 then 4166)
    assert loaded.race_free and loaded.rlimit == idle.rlimit


def test_the_resource_budget_still_bounds_a_program():
    prog = parse_program(EXAMPLE.read_text(), EXAMPLE.name)
    report = analyse(prog, rlimit_total=1)  # spent before the second pair
    assert not report.race_free and report.undecided == 1
    assert "resource budget exhausted" in report.describe()
