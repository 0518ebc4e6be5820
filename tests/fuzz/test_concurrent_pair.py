"""The concurrent-pair classifier (interpreter/bundl/concurrent.py, issue 24: "every
class still declined is a real race") on the race shapes: every `_race` twin has a
reachable configuration where two threads are about to make conflicting accesses that
do not commute, and no `_ok` twin has one anywhere in its state space. A classifier
that took every conflicting footprint for a race (equal-value writes included) fails
the `_ok` twins; one that never found a pair fails the `_race` twins. Where the
search runs out, priority schedules may still find a pair (a program of seed 1).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.interpreter.bundl.concurrent import concurrent_pair
from gpusem.interpreter.bundl.machine import Machine

SHAPES = sorted((Path(__file__).parent / "race_shapes").glob("*.bundl"))
RUN_AHEAD = Path(__file__).parent / "data" / "concurrent_run_ahead.bundl"
RACES = [p for p in SHAPES if p.stem.endswith("_race")]
OKS = [p for p in SHAPES if p.stem.endswith("_ok")]


def _replays_to_both_enabled(prog, pair) -> bool:
    m = Machine(prog)
    for i in pair.schedule:
        m.enabled_threads()
        m.step(i)
    return set(pair.threads) <= set(m.enabled_threads())


def test_priority_schedules_find_a_pair_the_search_runs_out_on():
    """Seed 1's store of the next loop run against a copy of this one: the search
    alone gives up; priority schedules (one thread run ahead, then stopped) find a
    conflicting pair whose orders differ, and its schedule replays."""
    prog = parse_program(RUN_AHEAD.read_text(), RUN_AHEAD.name)
    assert concurrent_pair(prog, 2000, probe_transitions=0).kind == "unknown"
    v = concurrent_pair(prog, 2000, probe_transitions=20_000)
    assert v.kind == "race", (v.kind, v.message)
    assert v.pair is not None and v.pair.cell.startswith("g1[")
    assert sorted(v.pair.kinds) == ["r", "w"]  # the store and the copy out of g1
    assert _replays_to_both_enabled(prog, v.pair)


def test_shapes_are_there():
    assert len(RACES) == len(OKS) >= 18


@pytest.mark.parametrize("path", RACES, ids=lambda p: p.stem)
def test_race_twin_has_a_concurrent_pair(path):
    prog = parse_program(path.read_text(), path.name)
    v = concurrent_pair(prog)
    assert v.kind == "race", (v.kind, v.message)
    assert v.pair is not None and v.pair.threads[0] != v.pair.threads[1]
    assert "w" in v.pair.kinds
    # the witness schedule replays to a configuration where both threads are enabled
    assert _replays_to_both_enabled(prog, v.pair)


@pytest.mark.parametrize("path", OKS, ids=lambda p: p.stem)
def test_ok_twin_has_no_concurrent_pair(path):
    v = concurrent_pair(parse_program(path.read_text(), path.name))
    assert v.kind == "no-pair", (v.kind, v.pair, v.message)
    assert v.states > 1
