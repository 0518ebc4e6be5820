"""The local engine: a campaign's shards as processes of this machine (`--jobs`).

One shard runs in this process (no start-up cost, the caller's signal handlers apply).
Every shard shrinks its findings in a process of its own beside it
(`fuzz/shrinker.py`), so a finding never stops its shard's fuzzing (issue 31.1).
More are *spawned*, one process per shard (fresh interpreters that import what they
need), so neither the parent's threads and locks nor an initialised CUDA context can
leak into them. Each child writes its running counts into its own slots of a shared
array (`on_progress` gets them) and sends one message at the end: its Summary, or the
error that ended it. A child that exits without a message, or outlives its campaign's
hard stop by JOB_GRACE_S, is reported as a failed shard, never waited for forever.
Closing the generator (Ctrl-C, SIGTERM in the parent) stops every child: SIGTERM, on
which a child's campaign ends through its `finally` (what it found is on disk already).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections.abc import Iterator, Sequence
from queue import Empty
from typing import Any, Final

from gpusem.compiler.backends.lifetime import (
    die_with_parent,
    from_main_thread,
    kill_tree,
)
from gpusem.fuzz.campaign import Campaign, hard_stop_s
from gpusem.fuzz.engines.base import Engine, Progress, ShardEvent, ShardTask
from gpusem.fuzz.interrupts import raise_if_requested
from gpusem.fuzz.shrinker import ProcessShrinker
from gpusem.fuzz.summary import Summary, install_signal_handlers
from gpusem.fuzz.targets import RUNTIME_TARGETS, register_target

JOB_START: Final = "spawn"  # never fork: the parent may hold threads (rich), z3 or a CUDA context
JOB_GRACE_S = 120.0  # past a campaign's hard stop, before a silent job is given up
DRAIN_S = 15.0  # after Ctrl-C/SIGTERM: how long the shards get to send their summaries
STOP_S = 5.0  # a shard stopped mid-campaign: to run its `finally`s, then SIGKILL
# a shard that sent its summary: to exit by itself, then SIGKILL (issue 31.1: the
# command ends within ~5% of its budget). Its work is on disk and in the message
# already (its backend closed, its shrinker stopped); what is left is its
# interpreter's exit (~0.2 s on 2 cores): waiting longer only delays the command.
EXIT_S = 1.0
SLOTS = 5  # programs, invalid, skipped, findings, resumed (not this run's: its rate)


class LocalEngine(Engine):
    name = "local"

    def run(self, tasks: Sequence[ShardTask],
            on_progress: Progress | None = None) -> Iterator[ShardEvent]:
        if len(tasks) == 1:
            yield from _in_process(tasks[0], on_progress)
            return
        ctx = mp.get_context(JOB_START)
        counts = ctx.Array("q", SLOTS * len(tasks), lock=False)  # one writer per slot
        queue = ctx.Queue()
        parent = (os.getpid(), from_main_thread())  # shards die with this process
        procs = [ctx.Process(target=_child, name=f"gpusem-job{j}", args=(
            j, RUNTIME_TARGETS.get(t.spec["target_name"]), t, counts, queue, parent))
            for j, t in enumerate(tasks)]
        ended = False
        try:
            for p in procs:
                p.start()
            yield from _collect(tasks, procs, counts, queue, on_progress)
            ended = True
        finally:  # normal end: all have reported; Ctrl-C, SIGTERM, close(): stop them
            _stop(procs, EXIT_S if ended else STOP_S)


def _in_process(task: ShardTask, on_progress: Progress | None) -> Iterator[ShardEvent]:
    def tick(s: Summary) -> None:
        if on_progress is not None:
            on_progress(task, s)

    summary = Campaign(**task.spec, shard=task.shard, on_progress=tick,
                       shrinker=ProcessShrinker(task.spec["target_name"])).run()
    yield ShardEvent(task, "done", summary)


def _collect(tasks: Sequence[ShardTask], procs: list, counts: Any, queue: Any,
             on_progress: Progress | None) -> Iterator[ShardEvent]:
    pending = set(range(len(procs)))
    give_up = time.monotonic() + max(
        hard_stop_s(t.spec.get("budget_s", 60.0)) for t in tasks) + JOB_GRACE_S

    def take(msg: tuple) -> ShardEvent:
        kind, j, payload = msg
        pending.discard(j)
        if kind == "done":
            return ShardEvent(tasks[j], "done", payload)
        return ShardEvent(tasks[j], "failed", None, f"job {j} failed: {payload}")

    try:
        yield from _poll(procs, pending, counts, queue, tasks, take, give_up, on_progress)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM here: the shards stop and report
        for p in procs:
            if p.is_alive():
                p.terminate()  # a child's campaign takes SIGTERM as `Interrupted`
        deadline = time.monotonic() + DRAIN_S
        while pending and time.monotonic() < deadline:
            msg = _get_nowait(queue)
            if msg is not None:
                yield take(msg)
            elif all(p.exitcode is not None for p in procs):
                break
        raise


def _poll(procs: list, pending: set[int], counts: Any, queue: Any,
          tasks: Sequence[ShardTask], take: Any, give_up: float,
          on_progress: Progress | None) -> Iterator[ShardEvent]:
    while pending:
        raise_if_requested()  # Ctrl-C / SIGTERM here: _collect stops the shards
        try:
            yield take(queue.get(timeout=0.5))
        except Empty:
            pass
        if on_progress is not None:
            for j in pending:
                on_progress(tasks[j], _snapshot(counts, j))
        for j in sorted(pending):
            if procs[j].exitcode is None and time.monotonic() < give_up:
                continue
            while pending and (msg := _get_nowait(queue)) is not None:
                yield take(msg)  # a child's message is flushed before it exits
            if j in pending:
                pending.discard(j)
                yield ShardEvent(tasks[j], "failed", None, f"job {j} {_death(procs[j])}")


def _get_nowait(queue: Any) -> tuple | None:
    try:
        msg: tuple = queue.get(timeout=0.05)
        return msg
    except Empty:
        return None


def _death(proc: Any) -> str:
    code = proc.exitcode
    if code is None:
        return "did not finish by its campaign's hard stop (stopped)"
    if code < 0:
        return f"died ({signal.Signals(-code).name}) without a result"
    return f"exited with status {code} without a result"


def _stop(procs: list, grace_s: float = STOP_S) -> None:
    """SIGTERM (a child runs its `finally`s: backend workers closed), then SIGKILL
    after `grace_s` (one that reported ignores SIGTERM: it only exits)."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + grace_s
    for p in procs:
        if p.pid is None:
            continue  # never started
        p.join(max(0.1, deadline - time.monotonic()))
        if p.is_alive():
            kill_tree(p.pid)  # with its builds and its shrinker's
            p.join(1.0)


def _snapshot(counts: Any, j: int) -> Summary:
    programs, invalid, skipped, found, resumed = (
        counts[SLOTS * j + k] for k in range(SLOTS))
    return Summary(programs=programs, invalid=invalid, skipped=skipped, found=found,
                   resumed=resumed)


def _child(j: int, factory: Any, task: ShardTask, counts: Any, queue: Any,
           parent: tuple[int, bool] | None = None) -> None:
    """One shard. Ctrl-C goes to the whole process group: the parent alone handles it
    (children and their harness workers ignore SIGINT; a kernel worker killed by it
    would read as a crash finding). SIGTERM from the parent ends the campaign through
    its `finally`."""
    if parent is not None:  # a SIGKILLed campaign leaves no shard running
        die_with_parent(*parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    install_signal_handlers()  # SIGTERM: stop at the next program, not in workers
    if factory is not None:  # a target registered at run time in the parent
        register_target(task.spec["target_name"], factory)

    def progress(s: Summary) -> None:
        for k, v in enumerate((s.programs, s.invalid, s.skipped, s.finding_count,
                               s.resumed)):
            counts[SLOTS * j + k] = v

    try:
        summary = Campaign(**task.spec, shard=task.shard, on_progress=progress,
                           shrinker=ProcessShrinker(task.spec["target_name"])).run()
        # done: a second SIGTERM (the parent stopping stragglers) must not interrupt
        # the flush of the message below (the queue's feeder thread, at exit)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except SystemExit:
        raise
    except BaseException as err:  # reported to the parent, then re-raised
        queue.put(("error", j, f"{type(err).__name__}: {err}".replace("\n", " ")[:300]))
        raise
    queue.put(("done", j, summary))

