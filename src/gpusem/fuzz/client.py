"""The client side of a campaign: cut it into shard tasks, hand them to an engine
(`fuzz/engines/`), merge what comes back (`fuzz/engines/base.py` says who does what).

`--shard I/N` is this machine's part of a campaign; `--jobs J` splits it further into
J shards (I*J + j of N*J), so a campaign's rounds are the same however it is cut.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpusem.fuzz.bundle import recorded_attribution
from gpusem.fuzz.engines.base import Engine, ShardTask
from gpusem.fuzz.summary import Interrupted, Summary

Tick = Callable[[Summary], None]


def shard_tasks(spec: dict[str, Any], jobs: int) -> list[ShardTask]:
    """The tasks of this machine's part (`spec["shard"]`, I/N) cut `jobs` ways;
    `max_programs` is this part's total, shared out between the jobs (it was each
    job's, so `--jobs 2 --max-programs 10` checked 20: issue 32.12)."""
    i, n = spec.get("shard", (0, 1))
    rest = {k: v for k, v in spec.items() if k != "shard"}
    limit = rest.get("max_programs")
    tasks = []
    for j in range(jobs):
        mine = rest if limit is None else rest | {
            "max_programs": limit // jobs + (j < limit % jobs)}
        tasks.append(ShardTask(mine, (i * jobs + j, n * jobs)))
    return tasks


def run_campaign(spec: dict[str, Any], engine: Engine, jobs: int = 1,
                 on_tick: Tick | None = None) -> Summary:
    """Run `spec` (Campaign keyword arguments) as `jobs` shards on `engine`; the merged
    Summary. Failed shards are listed in `Summary.failed`; the others' results stand.
    `on_tick` gets the running totals (a Summary whose `found` counts findings)."""
    tasks = shard_tasks(spec, jobs)
    live: dict[ShardTask, Summary] = {}
    total = Summary()

    def tick() -> None:  # the shards done (total) and the running ones (live)
        if on_tick is not None:
            running = Summary()
            for part in [total, *live.values()]:
                running.merge(part)
            running.found += len(total.findings)
            on_tick(running)

    def progress(task: ShardTask, s: Summary) -> None:
        live[task] = s
        tick()

    events = engine.run(tasks, progress)
    try:
        for event in events:
            live.pop(event.task, None)
            if event.kind == "done" and event.summary is not None:
                total.merge(event.summary)
            else:
                total.failed.append(event.error or f"{event.task.label} failed")
            # done and running shards alike: a tick of `total` alone (the shards done
            # so far) dropped the progress line mid-way through the shards' ends
            # (stop 31: "205,422 programs, 3,353/min" between 805,752 and 808,342)
            tick()
    except KeyboardInterrupt as stop:  # the shards that reported are merged above
        total.interrupted = (stop.signal_name if isinstance(stop, Interrupted)
                             else "SIGINT")
    finally:
        close = getattr(events, "close", None)  # a generator: stops its shards
        if close is not None:
            close()
        engine.close()
    with_recorded_attribution(total)
    return total


def with_recorded_attribution(total: Summary) -> None:
    """Each finding without a verdict takes the one its bundle records by now. A
    class met by two shards at once is new in one and seen elsewhere in the other,
    which read the bundle before its writer had attributed it; the merge may keep
    the latter (`Summary.merge`: the smaller program, the first on a tie)."""
    for f in total.findings:
        if not f.attribution and f.bundle:
            f.attribution, f.cause = recorded_attribution(f.bundle)


def run_jobs(base: dict[str, Any], jobs: int, on_tick: Tick | None = None) -> Summary:
    """`run_campaign` on the local engine (processes of this machine)."""
    from gpusem.fuzz.engines.local import LocalEngine

    return run_campaign(base, LocalEngine(), max(1, jobs), on_tick)
