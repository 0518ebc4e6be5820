"""scripts/campaign_stages.py's exclusive stage clock (issue 31.3): a stage's time is
its own, less the stages it calls, so the stages and the campaign's rest add up to the
campaign's CPU."""

from __future__ import annotations

from types import SimpleNamespace

from tests.script_module import load_script


def test_nested_stages_are_counted_once():
    stages = load_script("campaign_stages")
    now = [0.0]  # a CPU clock the "work" below advances

    def work(seconds: float, inner=None) -> None:
        now[0] += seconds
        if inner is not None:
            inner()

    clock = stages.ExclusiveClock(lambda live: now[0])
    ns = SimpleNamespace(outer=lambda: work(1.0, ns.inner), inner=lambda: work(0.25),
                         other=lambda: work(0.5, ns.inner))
    clock.wrap(ns, "outer", "launch")
    clock.wrap(ns, "inner", lambda: "confirm" if clock.inside("launch") else "audit")
    clock.wrap(ns, "other", "generate")
    ns.again = lambda: work(0.125, ns.inner)  # an audit that calls inner: one call
    clock.wrap(ns, "again", "audit")
    ns.outer()
    ns.other()
    ns.inner()
    ns.again()
    assert clock.spent == {"launch": 1.0, "confirm": 0.25, "generate": 0.5,
                           "audit": 0.875}
    assert sum(clock.spent.values()) == now[0]
    assert clock.calls == {"launch": 1, "confirm": 1, "generate": 1, "audit": 3}
