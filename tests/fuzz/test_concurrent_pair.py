"""The concurrent-pair classifier (interpreter/bundl/concurrent.py, issue 24: "every
class still declined is a real race") on the race shapes: every `_race` twin has a
reachable configuration where two threads are about to make conflicting accesses that
do not commute, and no `_ok` twin has one anywhere in its state space. A classifier
that took every conflicting footprint for a race (equal-value writes included) fails
the `_ok` twins; one that never found a pair fails the `_race` twins.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.interpreter.bundl.concurrent import concurrent_pair
from gpusem.interpreter.bundl.machine import Machine

SHAPES = sorted((Path(__file__).parent / "race_shapes").glob("*.bundl"))
RACES = [p for p in SHAPES if p.stem.endswith("_race")]
OKS = [p for p in SHAPES if p.stem.endswith("_ok")]


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
    m = Machine(prog)
    for i in v.pair.schedule:
        m.enabled_threads()
        m.step(i)
    assert set(v.pair.threads) <= set(m.enabled_threads())


@pytest.mark.parametrize("path", OKS, ids=lambda p: p.stem)
def test_ok_twin_has_no_concurrent_pair(path):
    v = concurrent_pair(parse_program(path.read_text(), path.name))
    assert v.kind == "no-pair", (v.kind, v.pair, v.message)
    assert v.states > 1
