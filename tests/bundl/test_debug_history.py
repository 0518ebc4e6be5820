"""`back` in `gpusem step` is exact (issue 24): a reverse step lands in exactly the
configuration the forward run was in at that step, over generated programs.

The session keeps sparse snapshots that share the copies of threads not stepped since
the previous one, thins old ones out, and goes back by restoring the nearest earlier
snapshot and replaying (interpreter/bundl/debug.py). Here the spacing is shrunk to a
few steps so that generated programs (tens to hundreds of steps) cross many snapshots,
shared copies and thinnings; the whole configuration (every thread's term, context,
environment, barrier generations and Φ; every memory region, Ψ) and the global
memory are compared step by step.
"""

from __future__ import annotations

from itertools import pairwise

import pytest
from gpusem.fuzz.bundl.strategies.programs import programs
from gpusem.interpreter.bundl import debug
from gpusem.interpreter.bundl.debug import Session
from gpusem.interpreter.bundl.small_step import descend
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PROPERTY = settings(deadline=None, derandomize=True, database=None, max_examples=60,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


@pytest.fixture
def dense_snapshots(monkeypatch):
    monkeypatch.setattr(debug, "SNAPSHOT_EVERY", 3)
    monkeypatch.setattr(debug, "SNAPSHOT_RATIO", 1)
    monkeypatch.setattr(debug, "MAX_SNAPSHOTS", 4)


def _state(s: Session) -> str:
    """The whole configuration, structurally (by value, not by identity: a replayed
    step builds new but equal terms), as text (NaN equals NaN). Every thread is first
    descended to its redex: a scheduler's look at a thread (`blocked`) pushes its
    congruence frames without a step, so the same term may be held at two depths."""
    m, cfg = s.machine, s.machine.cfg
    for th in m.threads():
        descend(cfg, th)
    threads = [(th.focus, th.frames, th.persp, th.p, th.unit, th.env, th.m, th.waits,
                th.phi, th.allocs) for th in m.threads()]
    memory = ([r.cells for r in cfg.regions], cfg.globals, cfg.psi, cfg.phi,
              cfg.allocs)
    return repr((threads, memory, m.globals(), m.steps, s.status))


def test_back_restores_every_earlier_configuration_exactly(dense_snapshots):
    runs = []

    @settings(PROPERTY)
    @given(programs(), st.integers(0, 2**16), st.lists(st.integers(1, 40), min_size=1,
                                                      max_size=6))
    def check(prog, seed, backs):
        s = Session(prog, schedule=f"random:{seed}", max_steps=5_000)
        states = [_state(s)]
        while s.status == "running":
            if isinstance(s.step_once(), debug.Stop):
                break
            states.append(_state(s))
        schedule = list(s.history)
        assert len(states) == len(schedule) + 1
        runs.append(len(schedule))
        for n in backs:
            s.back(n)
            at = len(s.history)
            assert s.history == schedule[:at]
            assert _state(s) == states[at], f"back to step {at} differs"
            # forward again along the same schedule: the same states
            for k, thread in enumerate(schedule[at:at + n // 2], at + 1):
                s.step_once(thread)
                assert _state(s) == states[k], f"forward to step {k} differs"

    check()
    # not vacuous: a quarter of the runs cross ten snapshots, some cross dozens (a
    # third before issue 24 (Trust II) changed the generator's draws: 16 of 60 now)
    assert sum(r >= 30 for r in runs) >= len(runs) // 4 and max(runs) >= 100, runs


def test_snapshots_share_the_copies_of_threads_not_stepped(dense_snapshots):
    """Only the threads stepped since the previous snapshot are copied again."""
    from gpusem.calculus.bundl.parser import parse_program

    prog = parse_program("machine blocks = 1, threads = 8;\nglobal out : int[1];\n"
                         "main {\n  let x : int @ grid[1] = 0;\n  while true {\n"
                         "    x = x + 1;\n  }\n}\n", "loop.bundl")
    s = Session(prog, max_steps=10_000)
    for _ in range(40):
        s.step_once(0)  # only thread 0 moves
    snaps = [s.snapshots[k][0] for k in sorted(s.snapshots)]
    assert len(snaps) >= 3
    for older, newer in pairwise(snaps):
        assert newer[0] is not older[0]
        assert all(newer[i] is older[i] for i in range(1, 8))
    s.back(37)
    assert len(s.history) == 3
    assert s.machine.threads()[1].key() == snaps[0][1].key()


def test_a_continue_equals_stepping_one_by_one(dense_snapshots):
    """`run`'s loop for a plain `continue` (`Session._run_plain`: the step inlined,
    an event made only for the last KEEP steps) takes the steps, keeps the history
    and snapshots, stops for the reason, and returns the events that stepping one
    by one does (`_step_once`, what a trace or a breakpoint makes `run` use)."""
    stops: list[str] = []

    def event(e) -> tuple:
        return (e.rule, e.rules, e.thread, e.index, repr(e.persp), repr(e.redex),
                repr(e.after))

    @settings(PROPERTY)
    @given(programs(), st.sampled_from(["rr", "random:3"]),
           st.lists(st.one_of(st.none(), st.integers(1, 90)), min_size=1, max_size=3),
           st.sampled_from([60, 5_000]))
    def check(prog, schedule, counts, max_steps):
        plain = Session(prog, schedule=schedule, max_steps=max_steps)
        traced = Session(prog, schedule=schedule, max_steps=max_steps)
        lines: list[str] = []
        traced.trace_sink = lines.append  # `run` steps one by one (`_step_once`)
        for count in counts:
            got, why = plain.run(count)
            want, why_too = traced.run(count)
            assert (why.reason, why.taken) == (why_too.reason, why_too.taken)
            assert [event(e) for e in got] == [event(e) for e in want]
            assert plain.history == traced.history and len(lines) == len(traced.history)
            assert sorted(plain.snapshots) == sorted(traced.snapshots)
            assert _state(plain) == _state(traced)
            assert (plain.current, plain.error is None) == (traced.current,
                                                           traced.error is None)
            stops.append(why.reason.split(":")[0])
            if why.reason:
                break
        # the snapshots hold the same copies: going back lands in the same place
        assert plain.back(7) == traced.back(7) and _state(plain) == _state(traced)

    check()
    # not vacuous: runs that end by themselves, by the step budget, and cut by a count
    assert {"terminated", "budget", ""} <= set(stops), stops
