"""fuzz/gc_tuning.campaign_gc (issue 31.3): a campaign runs with the start-up heap
frozen and young collections every YOUNG_THRESHOLD allocations, and hands the
process its own collector settings back afterwards."""

from __future__ import annotations

import gc
import resource
import sys
from typing import ClassVar

import pytest
from hypothesis import strategies as st

from gpusem.fuzz.campaign import Campaign
from gpusem.fuzz.gc_tuning import YOUNG_THRESHOLD, campaign_gc, keep_freed_memory
from gpusem.fuzz.targets import CheckResult, register_target


def test_within_frozen_and_rare_young_collections_after_restored() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with campaign_gc():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > frozen
        junk: list = []
        junk.append(junk)  # cyclic garbage is still collected
        del junk
        assert gc.collect() >= 1
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's mallopt")
def test_freed_memory_is_kept_for_the_next_race_context() -> None:
    """The second of two z3 contexts made one after the other faults (almost) none of
    its ~16 MB in again: the first one's memory stayed in the heap."""
    import z3

    assert keep_freed_memory()
    z3.Context()  # made and freed: its memory is now free heap
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    z3.Context()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before < 500


class _Seen:
    thresholds: ClassVar[set[tuple[int, ...]]] = set()


class GcToy:
    """Records the collector's thresholds each check runs under."""

    name = "gctoy"
    properties = ("compile",)
    backends = ("cpu",)

    def __init__(self, backend: str = "cpu") -> None:
        self.backend = backend

    def strategy(self, prop):
        return st.integers(0, 9)

    def size(self, program) -> int:
        return 1

    def check(self, program, prop="compile") -> CheckResult:
        _Seen.thresholds.add(gc.get_threshold())
        return CheckResult("pass")

    def close(self) -> None:
        pass


register_target("gctoy", GcToy)


def test_a_campaign_checks_under_campaign_gc(tmp_path) -> None:
    before = gc.get_threshold()
    Campaign(target_name="gctoy", budget_s=30, seed=1, out_dir=str(tmp_path),
             max_programs=20, round_size=10).run()
    assert _Seen.thresholds == {(YOUNG_THRESHOLD, *before[1:])}
    assert gc.get_threshold() == before
