"""The model behind `gpusem step`: a debugging session over the Bundl machine.

The small-step machine (bundl/machine.Machine) is the living definition; the session
only drives it and remembers what happened, so the debugger shows exactly the rule
trace the semantics produces (STYLE 14). No I/O here: `debug_commands.py` puts it
behind the one debugger interface (`interpreter/debugger.py`), `cli/` shows it.

History and `back`: every step records which thread moved; snapshots of the
configuration are kept now and then, and going back N steps restores the nearest
earlier snapshot and replays the recorded steps up to the target. Steps are
deterministic given the thread, so the replayed configuration is the one left.

Note: what recording costs (issue 24: it made `continue` 30x slower than `run`). A
step changes only the thread that moved and the shared configuration (`step_thread`
takes nothing else), so a snapshot copies only the threads stepped since the last one
and shares the older copies (a snapshot is never mutated: `restore` copies out of
it). Snapshots are spaced by what they cost, not by a clock: at least SNAPSHOT_EVERY
steps apart and at least SNAPSHOT_RATIO steps per unit copied (a thread, or
CELLS_PER_UNIT memory cells), so copying costs a bounded share of a step whatever
the machine's size; when more than MAX_SNAPSHOTS are kept the older half is thinned,
so memory stays bounded and a short `back` still replays little.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from gpusem.calculus.budgets import MemoryGuard, step_budget
from gpusem.calculus.bundl.ast import Program, Skip, SyncWait
from gpusem.calculus.errors import BadInput, GpusemError, Stuck, Trap
from gpusem.interpreter.bundl.config import Term, ThreadState
from gpusem.interpreter.bundl.machine import (
    Machine,
    MachineSnapshot,
    StepEvent,
    where,
)
from gpusem.interpreter.bundl.small_step import ENTER, blocked, step_thread
from gpusem.interpreter.bundl.values import Ptr, Value

# What a `write` breakpoint watches: a cell of a global array.
Cell = tuple[str, int]

SNAPSHOT_EVERY = 256  # the fewest steps between two snapshots
SNAPSHOT_RATIO = 16  # the fewest steps between two snapshots per unit they copy
# (16, not 8: on 1,024 threads the copies were a fifth of a `continue`, whose
# history bench read 2.67-2.91x `run` in the suite's benchmark run, 2.10-2.25x at
# 16; a `back` replays at most twice as many steps)
CELLS_PER_UNIT = 512  # memory cells copied about as fast as one thread state
MAX_SNAPSHOTS = 64
INTERRUPT_EVERY = 64
KEEP = 64  # the events `run` returns: the last ones (a long `continue` keeps no more)
DEFAULT_MAX_STEPS = 1_000_000  # as `gpusem run`


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """`break RULE`, `break LINE`, `break thread T` or `break write A[i]`."""

    kind: str  # rule | line | thread | write
    value: str | int | Cell  # rule name | line | thread index | (array, index)

    def describe(self) -> str:
        match self.kind:
            case "write":
                cell = cast(Cell, self.value)
                return f"write {cell[0]}[{cell[1]}]"
            case _:
                return f"{self.kind} {self.value}"


@dataclass
class Stop:
    """Why a run of steps ended: None (all requested steps taken) or a reason.
    `taken`: the steps the run took (`run` returns only the last KEEP events)."""

    reason: str = ""
    breakpoint: Breakpoint | None = None
    taken: int = 0


@dataclass
class Scheduler:
    """Which thread steps next: round-robin, seeded random, or a recorded replay."""

    kind: str = "rr"
    seed: int = 0
    replay: list[int] = field(default_factory=list)
    cursor: int = 0
    rng: random.Random = field(default_factory=random.Random)

    @staticmethod
    def parse(text: str, replay: list[int] | None = None) -> Scheduler:
        if text == "rr":
            return Scheduler("rr")
        if text.startswith("random:"):
            try:
                seed = int(text.split(":", 1)[1])
            except ValueError:
                raise BadInput(f"bad schedule: {text} (expected random:SEED)") from None
            return Scheduler("random", seed, rng=random.Random(seed))
        if text == "replay":
            return Scheduler("replay", replay=list(replay or []))
        raise BadInput(f"unknown schedule: {text} (expected rr, random:SEED or replay FILE)")

    def choose(self, machine: Machine) -> int | None:
        threads, cfg = machine.threads(), machine.cfg
        n = len(threads)
        if self.kind == "rr":  # round-robin from the cursor: O(1) when threads run
            cursor = self.cursor
            for k in range(n):
                i = cursor + k if cursor + k < n else cursor + k - n
                th = threads[i]
                # a redex that is no congruence and no `wait` cannot block: the
                # common case, decided without `blocked` (which descends first)
                kind = type(th.focus)
                if (kind not in ENTER and kind is not SyncWait
                        and kind is not Skip) or (not th.terminated
                                                  and not blocked(cfg, th)):
                    self.cursor = i + 1 if i + 1 < n else 0
                    return i
            return None

        def runnable(i: int) -> bool:
            th = threads[i]
            return not th.terminated and not blocked(cfg, th)

        if self.kind == "replay":
            while self.cursor < len(self.replay):
                i = self.replay[self.cursor]
                self.cursor += 1
                if 0 <= i < n and runnable(i):
                    return i
            return None
        live = [i for i in range(n) if runnable(i)]  # random
        return self.rng.choice(live) if live else None


class Session:
    def __init__(self, prog: Program, rules: str = "fixed", blocks: int | None = None,
                 threads: int | None = None, schedule: str = "rr",
                 max_steps: int = DEFAULT_MAX_STEPS):
        self.prog, self.rules, self.max_steps = prog, rules, max_steps
        self.guard = MemoryGuard(prog.span.file, every=256)
        self.machine = Machine(prog, rules, blocks=blocks, threads=threads)
        self.scheduler = Scheduler.parse(schedule)
        self.history: list[int] = []
        self.snapshots: dict[int, MachineSnapshot] = {}
        self._dirty: set[int] = set()  # threads stepped since the last snapshot
        self._live = 0  # threads not terminated (a step can end only its own)
        self._last_snapshot = 0  # the step of the newest snapshot
        self._next_snapshot = SNAPSHOT_EVERY  # no snapshot is due before this step
        self._cfg_units = 0  # what copying the shared configuration costs, in units
        self._keep_snapshot(full=True)
        self.breakpoints: list[Breakpoint] = []
        self.status = "running"  # running | terminated | stuck | deadlock | budget
        self.error: Exception | None = None
        self.current: int | None = None
        # the last step's event (`where` shows its redex); set when a command ends,
        # not per step: a long `continue` keeps no events (speed, issue 24)
        self.last_event: StepEvent | None = None
        self.trace_sink: Callable[[str], object] | None = None  # for --trace

    # ------------------------------------------------------------------ stepping

    def step_once(self, thread: int | None = None) -> StepEvent | Stop:
        """One step of `thread` (None: the scheduler's choice), or why none."""
        with np.errstate(all="ignore"):
            out = self._step_once(thread)
        if not isinstance(out, Stop):
            self.last_event = out
        return out

    def _step_once(self, thread: int | None) -> StepEvent | Stop:
        """`step_once` inside np.errstate (a loop of steps enters it once)."""
        if self.status != "running":
            return self._halted()
        m = self.machine
        if thread is None:
            thread = self.scheduler.choose(m)
            if thread is None:
                return self._no_thread()
        elif not 0 <= thread < len(m.threads()):
            raise BadInput(f"no thread {thread} (0 .. {len(m.threads()) - 1})")
        elif m.threads()[thread].terminated:
            return Stop(f"thread {thread} has terminated")
        self._dirty.add(thread)  # before the step: a stuck step may have moved it
        try:
            event = m.step_quietly(thread)
        except (Stuck, Trap) as err:
            self.status, self.error = "stuck", err
            return Stop(f"stuck: {getattr(err, 'message', err)}")
        self._recorded(thread)
        if self.trace_sink is not None:
            self.trace_sink(describe_event(len(self.history), event))
        return event

    def _recorded(self, thread: int) -> None:
        """After a step of `thread`: its history, snapshot and budgets."""
        self.current = thread
        history = self.history
        history.append(thread)
        steps = len(history)
        ended = self.machine.threads()[thread].terminated
        if ended:
            self._live -= 1
        if steps >= self._next_snapshot:
            self._snapshot_due()
        if ended and self._live == 0:
            self.status = "terminated"
        elif steps >= self.max_steps or steps % self.guard.every == 0:
            self._budgets(thread)

    def _run_plain(self, count: int | None, interrupted: Callable[[], bool],
                   ) -> tuple[list[StepEvent], Stop]:
        """`run` where nothing watches a step (the scheduler's choice, no breakpoint,
        no trace, no machine check: a `continue`): `_step_once`'s steps, history,
        snapshots and budgets, with `Machine.step_quietly`, `_recorded` and the
        round-robin's common choice (the thread at the cursor can step) inlined, and
        an event made only for the last KEEP steps, the ones returned (issue 24's
        bound: history stepping at most 3x `gpusem run`;
        tests/bundl/test_debug_history.py checks that it equals stepping one by one)."""
        m, sched = self.machine, self.scheduler
        cfg, threads, choose = m.cfg, m.threads(), sched.choose
        n, rr, history, dirty = len(threads), sched.kind == "rr", self.history, \
            self._dirty
        max_steps, every = self.max_steps, self.guard.every
        kept: deque[tuple[str, list[Any], ThreadState, int, Term]] = deque(maxlen=KEEP)
        taken, why, last = 0, Stop(), None
        while count is None or taken < count:
            if taken % INTERRUPT_EVERY == 0 and interrupted():
                why = Stop("interrupted")
                break
            if self.status != "running":
                why = self._halted()
                break
            thread: int | None = sched.cursor if rr else None
            if thread is not None:  # Scheduler.choose's first look, inlined
                th = threads[thread]
                kind = type(th.focus)
                if (kind in ENTER or kind is SyncWait or kind is Skip) and (
                        th.terminated or blocked(cfg, th)):
                    thread = None  # not this one: the scheduler's search
                else:
                    sched.cursor = thread + 1 if thread + 1 < n else 0
            if thread is None:
                thread = choose(m)
                if thread is None:
                    why = self._no_thread()
                    break
                th = threads[thread]
            dirty.add(thread)  # before the step: a stuck step may have moved it
            trace: list[Any] = []
            try:
                rule = step_thread(cfg, th, trace)
            except (Stuck, Trap) as err:
                self.status, self.error = "stuck", err
                why = Stop(f"stuck: {getattr(err, 'message', err)}")
                break
            if not rule.endswith("Spin"):
                m.steps += 1
            # `_recorded`, inlined
            last = thread
            history.append(thread)
            steps = len(history)
            ended = th.terminated
            if ended:
                self._live -= 1
            if steps >= self._next_snapshot:
                self._snapshot_due()
            if ended and self._live == 0:
                self.status = "terminated"
            elif steps >= max_steps or steps % every == 0:
                self._budgets(thread)
            taken += 1
            kept.append((rule, trace, th, thread, th.focus))
            if self.status == "budget":
                why = self._halted()
                break
        if last is not None:
            self.current = last
        events = [StepEvent(rule, trace[0], (th.t, th.b, trace[3]), thread, trace[2],
                            trace[1], after) for rule, trace, th, thread, after in kept]
        why.taken = taken
        if events:
            self.last_event = events[-1]
        return events, why

    def _snapshot_due(self) -> None:
        """Keep a snapshot once the steps since the last one pay for its copies
        (SNAPSHOT_RATIO steps per unit), else look again when they would."""
        cost = SNAPSHOT_RATIO * (len(self._dirty) + self._cfg_units)
        since = len(self.history) - self._last_snapshot
        if since >= cost:
            self._keep_snapshot()
        else:
            self._next_snapshot = self._last_snapshot + cost

    def _keep_snapshot(self, full: bool = False) -> None:
        """A snapshot now: fresh copies of the threads stepped since the last one,
        the others shared with it (Note in the module docstring)."""
        m, steps = self.machine, len(self.history)
        threads = m.threads()
        if full or not self.snapshots:
            copies = [th.copy() for th in threads]
        else:
            copies = list(self.snapshots[self._last_snapshot][0])
            for i in self._dirty:
                copies[i] = threads[i].copy()
        cfg = m.cfg.snapshot()
        self.snapshots[steps] = (copies, cfg, m.steps)
        self._dirty.clear()
        self._last_snapshot = steps
        self._next_snapshot = steps + SNAPSHOT_EVERY
        self._cfg_units = len(cfg[0]) + sum(len(r.cells) for r in cfg[0]
                                            ) // CELLS_PER_UNIT
        self._live = sum(not th.terminated for th in threads)
        if len(self.snapshots) > MAX_SNAPSHOTS:
            # thin out the older half (every other one, never the first): recent
            # history stays dense, so the common short `back` replays little
            keys = sorted(self.snapshots)
            for k in keys[1:len(keys) // 2:2]:
                del self.snapshots[k]

    def _budgets(self, thread: int) -> None:
        """The step and memory budgets (a `continue` on a program that never ends
        stops, naming the statement it reached: found only when one runs out)."""
        m, steps = self.machine, len(self.history)
        err = None
        if steps >= self.max_steps:
            span = where(m, m.threads()[thread])
            err = step_budget(self.max_steps, "steps", span, "S-Program")
        elif steps % self.guard.every == 0 and self.guard.exceeded() is not None:
            err = self.guard.exceeded(where(m, m.threads()[thread]), "S-Program")
        if err is not None:
            self.status, self.error = "budget", err

    def _halted(self) -> Stop:
        if self.status == "budget" and isinstance(self.error, GpusemError):
            return Stop(f"budget: {self.error.one_line()}")
        return Stop(f"the machine is {self.status}")

    def _no_thread(self) -> Stop:
        if all(th.terminated for th in self.machine.threads()):
            self.status = "terminated"
            return Stop("terminated: every thread is skip")
        if self.scheduler.kind == "replay":
            return Stop("the replayed schedule is exhausted")
        self.status = "deadlock"
        return Stop("deadlock: every live thread spins in wait")

    def run(self, count: int | None, thread: int | None = None, use_breaks: bool = True,
            interrupted: Callable[[], bool] = lambda: False,
            ) -> tuple[list[StepEvent], Stop]:
        """Up to `count` steps (None: until something stops it); the last KEEP events
        and why it stopped (with the number of steps taken)."""
        if (thread is None and not (use_breaks and self.breakpoints)
                and self.trace_sink is None and self.machine.check is None):
            with np.errstate(all="ignore"):
                return self._run_plain(count, interrupted)
        events: deque[StepEvent] = deque(maxlen=KEEP)
        taken = 0

        def stop(why: Stop) -> tuple[list[StepEvent], Stop]:
            why.taken = taken
            if events:
                self.last_event = events[-1]
            return list(events), why
        step_once, keep = self._step_once, events.append
        breaks = use_breaks and bool(self.breakpoints)
        with np.errstate(all="ignore"):
            while count is None or taken < count:
                # Ctrl-C is looked for every INTERRUPT_EVERY steps (a fraction of a
                # millisecond apart): a call per step costs a tenth of a step
                if taken % INTERRUPT_EVERY == 0 and interrupted():
                    return stop(Stop("interrupted"))
                before = self._watched_values() if breaks else None
                out = step_once(thread)
                if isinstance(out, Stop):
                    return stop(out)
                taken += 1
                keep(out)
                if before is not None:
                    hit = self._hit(out, before)
                    if hit is not None:
                        return stop(Stop(f"breakpoint: {hit.describe()}", hit))
                if self.status == "budget":
                    return stop(self._halted())
        return stop(Stop())

    def next(self) -> tuple[list[StepEvent], Stop]:
        """Step the current thread until its redex is on another source line (gdb's
        `next`), or it blocks or ends."""
        thread = self.current if self.current is not None else self.scheduler.choose(
            self.machine)
        if thread is None:
            return [], self._no_thread()
        events: list[StepEvent] = []
        start_line = None
        while True:
            th = self.machine.threads()[thread]
            if th.terminated or blocked(self.machine.cfg, th):
                return events, Stop(f"thread {thread} "
                                    f"{'ended' if th.terminated else 'waits'}")
            out = self.step_once(thread)
            if isinstance(out, Stop):
                return events, out
            events.append(out)
            line = out.span.line if out.span else None
            start_line = start_line if start_line is not None else line
            if line is not None and line != start_line:
                return events, Stop()

    def back(self, n: int) -> int:
        """Undo `n` steps; returns how many were undone."""
        before = len(self.history)
        target = max(0, before - n)
        base = max(k for k in self.snapshots if k <= target)
        replay = self.history[base:target]
        self.machine.restore(self.snapshots[base])
        self.history = self.history[:base]
        self.snapshots = {k: v for k, v in self.snapshots.items() if k <= base}
        self._dirty.clear()
        self._last_snapshot, self._next_snapshot = base, base + SNAPSHOT_EVERY
        self._live = sum(not th.terminated for th in self.machine.threads())
        self.status, self.error = "running", None
        sink, self.trace_sink = self.trace_sink, None
        with np.errstate(all="ignore"):
            for thread in replay:
                self._step_once(thread)
        self.trace_sink = sink
        self.current = self.history[-1] if self.history else None
        self.last_event = None  # not kept across a reverse step: `where` shows the focus
        return before - len(self.history)

    # --------------------------------------------------------------- breakpoints

    def _watched_values(self) -> dict[Breakpoint, Value]:
        return {bp: self.global_cell(*cast(Cell, bp.value)) for bp in self.breakpoints
                if bp.kind == "write"}

    def _hit(self, event: StepEvent, before: dict[Breakpoint, Value],
             ) -> Breakpoint | None:
        for bp in self.breakpoints:
            match bp.kind:
                case "rule" if bp.value in event.rules:
                    return bp
                case "line" if event.span is not None and event.span.line == bp.value:
                    return bp
                case "thread" if event.index == bp.value:
                    return bp
                case "write" if (self.global_cell(*cast(Cell, bp.value))
                                 != before.get(bp)):
                    return bp
        return None

    def global_cell(self, name: str, index: int) -> Value:
        cfg = self.machine.cfg
        if name not in cfg.globals:
            raise BadInput(f"no global array {name}")
        ptr = cast(Ptr, cfg.globals[name].value)  # a global is an array
        if not 0 <= index < ptr.length:
            raise BadInput(f"index out of range: {name}[{index}] (length {ptr.length})")
        return cfg.regions[ptr.region].cells[ptr.off + index]


def describe_event(n: int, e: StepEvent) -> str:
    t, b, p = e.thread
    where = f" line {e.span.line}" if e.span is not None and e.span.line else ""
    return f"{n:6d} {' > '.join(e.rules)}  (t={t}, b={b}, p={p}) at {e.persp}{where}"
