"""The running totals a campaign's progress gets (`client.run_campaign`'s `on_tick`)
never fall while shards end: a shard that ends is counted with the ones still
running. Before (stop 31, a 16-shard toolchain campaign's log): as shards ended the
tick carried only the ended ones' totals ("205,422 programs, 3,353/min" between
805,752 and 808,342)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gpusem.fuzz.client import run_campaign
from gpusem.fuzz.engines.base import Engine, ShardEvent, ShardTask
from gpusem.fuzz.summary import Summary


class ScriptedEngine(Engine):
    """Three shards: each reports running counts, then they end one by one."""

    name = "scripted"

    def run(self, tasks: Sequence[ShardTask], on_progress=None) -> Iterator[ShardEvent]:
        for step in (1, 2):
            for t in tasks:
                on_progress(t, Summary(programs=100 * step, resumed=50))
        for t in tasks:
            yield ShardEvent(t, "done", Summary(programs=300, resumed=50))

    def close(self) -> None:
        pass


def test_the_running_totals_never_fall_as_shards_end() -> None:
    ticks: list[tuple[int, int]] = []
    total = run_campaign({"target_name": "toy", "prop": "compile"}, ScriptedEngine(),
                         jobs=3, on_tick=lambda s: ticks.append((s.programs, s.resumed)))
    assert total.programs == 900
    programs = [p for p, _ in ticks]
    assert programs == sorted(programs), programs  # 600 -> 300 before the fix
    assert ticks[-1] == (900, 150)
    assert len(ticks) == 6 + 3
