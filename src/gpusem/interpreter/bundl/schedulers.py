"""The schedulers of the Bundl machine: which thread of the pool P takes the next step
of S-Program (Appendix A.3.1 of the Prism paper, seed 004). The rule leaves the choice
open; each scheduler here is one way to make it:

  rr              round-robin: each live thread one step per round, in thread order
  random:SEED     a uniformly chosen runnable thread (seeded: replayable)
  greedy[-reverse] each thread runs until it blocks, in (reverse) thread order (the
                  order of the cpu harness's first fibre schedules)
  exhaustive      every interleaving, with a partial-order reduction (`explore`)

Note: a thread spinning in S-Sync-Wait-Spin does not change the configuration, so the
schedulers do not count spins as steps; "every live thread only spins" is a deadlock
(errata "spinning is not a step").
"""

from __future__ import annotations

import random as _random
from typing import cast

import numpy as np
from gpusem.calculus.budgets import MemoryGuard, step_budget
from gpusem.calculus.bundl.ast import Program, Skip, SyncWait
from gpusem.calculus.errors import BadInput, Stuck, Trap
from gpusem.interpreter.bundl.config import ThreadState
from gpusem.interpreter.bundl.explore import explore
from gpusem.interpreter.bundl.machine import (
    Check,
    Machine,
    Outcome,
    deadlock_error,
    where,
)
from gpusem.interpreter.bundl.small_step import step_thread

SCHEDULES = ("rr", "random:SEED", "greedy", "greedy-reverse", "exhaustive")


def check_schedule(schedule: str) -> None:
    """BadInput unless `schedule` names one of SCHEDULES (checked before anything
    runs, also where a run ignores it, as the big-step evaluator does)."""
    if schedule in ("rr", "greedy", "greedy-reverse", "exhaustive"):
        return
    if schedule.startswith("random:"):
        seed = schedule.split(":", 1)[1]
        if seed.isascii() and seed.isdigit() and len(seed) <= 20:
            return
        raise BadInput(f"bad schedule: {schedule} (expected random:SEED)")
    raise BadInput(f"unknown schedule: {schedule} (expected rr, random:SEED, greedy, "
                   "greedy-reverse or exhaustive)")


def run_program(prog: Program, schedule: str = "rr", max_steps: int = 1_000_000,
                rules: str = "fixed", *, blocks: int | None = None,
                threads: int | None = None, check: Check | None = None,
                seen: set[str] | None = None) -> Outcome:
    """Run `prog` to an outcome under `schedule` (rr | random:SEED | exhaustive).
    `seen`: a set that receives the name of every rule applied (coverage.py).
    Every schedule stops at `max_steps` steps and at the memory budget (outcome
    `budget`, naming the statement the last step ran)."""
    check_schedule(schedule)
    m = Machine(prog, rules, blocks=blocks, threads=threads, check=check)
    m.cfg.seen = seen
    guard = MemoryGuard(prog.span.file)
    with np.errstate(all="ignore"):
        if schedule == "rr":
            return _run_rr(m, max_steps, guard)
        if schedule.startswith("random:"):
            try:
                seed = int(schedule.split(":", 1)[1])
            except ValueError:
                raise BadInput(f"bad schedule: {schedule} (expected random:SEED)"
                               ) from None
            return _run_random(m, max_steps, seed, guard)
        if schedule in ("greedy", "greedy-reverse"):
            return _run_greedy(m, max_steps, guard,
                               reverse=schedule == "greedy-reverse")
        if schedule == "exhaustive":
            return explore(m, max_steps, guard=guard)
    raise BadInput(f"unknown schedule: {schedule} (expected rr, random:SEED, greedy, "
                   "greedy-reverse or exhaustive)")


def _deadlock(m: Machine, live: list[int]) -> Outcome:
    ths = m.threads()
    # every live thread spins in S-Sync-Wait-Spin: its focus is a `wait`
    where = ", ".join(f"t={ths[i].t} at wait {cast(SyncWait, ths[i].focus).label}"
                      for i in live[:4])
    err = deadlock_error(f"deadlock: {len(live)} live threads all wait ({where}"
                          f"{', ...' if len(live) > 4 else ''})", ths[live[0]])
    return m.outcome("deadlock", err)


def _over(m: Machine, steps: int, max_steps: int, guard: MemoryGuard,
          th: ThreadState) -> Outcome | None:
    """The `budget` outcome once `steps` reach `max_steps` or (checked every
    MemoryGuard.EVERY steps) the memory budget is exhausted; the error's span is the
    statement thread `th` is at (after its last step)."""
    err = None
    if steps >= max_steps:
        err = step_budget(max_steps, "steps", where(m, th), "S-Program")
    elif steps % guard.every == 0:
        err = guard.exceeded(where(m, th), "S-Program")
    if err is None:
        return None
    m.steps = steps
    return m.outcome("budget", err)


def _run_rr(m: Machine, max_steps: int, guard: MemoryGuard) -> Outcome:
    """Round-robin: each live thread takes one step per round, in thread order."""
    cfg, ths = m.cfg, m.threads()
    live = [th for th in ths if not th.terminated]
    steps, check, every = 0, m.check, guard.every
    while live:
        progressed = False
        for th in live:
            try:
                rule = step_thread(cfg, th)
            except (Stuck, Trap) as err:
                m.steps = steps
                return m.outcome("stuck", err)
            if rule != "S-Sync-Wait-Spin":
                progressed = True
                steps += 1
                if check is not None:
                    m.steps = steps
                    check(m, th.t)
                # `_over`'s two tests, inlined: it is called only where one may hold
                if (steps >= max_steps or not steps % every) and (
                        over := _over(m, steps, max_steps, guard, th)):
                    return over
        live = [th for th in live if not th.terminated]
        if not progressed and live:
            m.steps = steps
            return _deadlock(m, [th.t for th in live])
    m.steps = steps
    return m.outcome("terminated")


def _run_greedy(m: Machine, max_steps: int, guard: MemoryGuard,
                reverse: bool) -> Outcome:
    """Each thread runs until it blocks or ends, in thread order (or reversed): the
    order the cpu harness's first schedules use, so the races they expose are seen by
    the compiler oracle's sampling too."""
    cfg = m.cfg
    order = m.threads()[::-1] if reverse else m.threads()
    steps, every = 0, guard.every
    while live := [th for th in order if not th.terminated]:
        progressed = False
        for th in live:
            # `not th.terminated`, inlined (it is tested once a step)
            while th.frames or type(th.focus) is not Skip:
                try:
                    rule = step_thread(cfg, th)
                except (Stuck, Trap) as err:
                    m.steps = steps
                    return m.outcome("stuck", err)
                if rule == "S-Sync-Wait-Spin":
                    break
                progressed, steps = True, steps + 1
                if (steps >= max_steps or not steps % every) and (
                        over := _over(m, steps, max_steps, guard, th)):
                    return over
        if not progressed:
            m.steps = steps
            return _deadlock(m, [th.t for th in live])
    m.steps = steps
    return m.outcome("terminated")


def _run_random(m: Machine, max_steps: int, seed: int, guard: MemoryGuard) -> Outcome:
    """Seeded random: a uniformly chosen runnable thread steps. A thread found spinning
    sleeps until some counter of Ψ reaches zero (`cfg.wakeups` changes)."""
    rng = _random.Random(seed)
    cfg, ths = m.cfg, m.threads()
    runnable = [th for th in ths if not th.terminated]
    sleeping: list[ThreadState] = []
    steps, wake, check, every = 0, cfg.wakeups, m.check, guard.every
    # rng.randrange(n) for n >= 1 is rng._randbelow(n) after checking its argument
    # (CPython's random.py): the same draws, for a third of this loop's time
    below = rng._randbelow  # type: ignore[attr-defined]
    while runnable or sleeping:
        if cfg.wakeups != wake:
            wake = cfg.wakeups
            runnable.extend(sleeping)
            sleeping.clear()
        if not runnable:
            m.steps = steps
            return _deadlock(m, [th.t for th in sleeping])
        j = below(len(runnable))
        th = runnable[j]
        try:
            rule = step_thread(cfg, th)
        except (Stuck, Trap) as err:
            m.steps = steps
            return m.outcome("stuck", err)
        if rule == "S-Sync-Wait-Spin":
            sleeping.append(th)
        else:
            steps += 1
            if check is not None:
                m.steps = steps
                check(m, th.t)
            if (steps >= max_steps or not steps % every) and (
                    over := _over(m, steps, max_steps, guard, th)):
                return over
            if th.frames or type(th.focus) is not Skip:  # not th.terminated
                continue
        runnable[j] = runnable[-1]
        runnable.pop()
    m.steps = steps
    return m.outcome("terminated")

