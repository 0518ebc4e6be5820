"""The model behind `gpusem step FILE.gpuir`: a debugging session over the AMIR machine
(Exo-GPU Figures 21, 22 and 7, Appendix B), one statement at a time.

The machine (interpreter/amir/machine.Machine) stays the definition: the session walks
the structure itself (LoopStep / LoopDone and If-True / If-False of Figure 21, exactly
as `Machine._rule_loop` / `_rule_if` do: bounds evaluated once, the loop variable bound
in σ and restored after) and runs every non-compound statement through
`Machine.leaf`, the machine's own compiled rule. So a session run to the end reaches
the verdict `check_amir` reaches (tests pin it). No I/O here: amir/debug_commands.py puts it behind the one debugger interface.

A step is one execution of a non-compound statement (Alloc, Record*, Clear*, Check*,
Fence, Arrive, Await, IncTaskID, Free). When asked (`detail`), a step also reports
what it changed in ρ: the record added to or cleared from which cells, the records a
lift raised (and to whom, at which level), the barrier counts (computed by
interpreter/amir/debug_rho.py; text helpers in amir/debug_show.py).

History and `back`: the machine is deterministic, so the session keeps snapshots of
the machine state (pickled: several times faster and smaller than a deep copy of its
object graph) and goes back by restoring the nearest earlier one and replaying.
Snapshots are spaced so that taking them costs at most 1/SNAPSHOT_RATIO of the stepping
time (and are a multiple of 256 steps apart), and the older half is thinned when there
are more than MAX_SNAPSHOTS: memory stays bounded and a short `back` replays little.

Conventions (paper -> Python): σ -> `machine.env`, ι -> `machine.task`,
ρ -> `machine.vars` (see amir/machine), g_{s#}(σ, ι) -> `Event.threads`.
"""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass
from typing import Callable, Mapping, cast

from gpusem.calculus.amir import ast as A
from gpusem.calculus.errors import BadInput, BudgetExhausted, GpusemError, Trap
from gpusem.interpreter.amir.checks import Violation
from gpusem.interpreter.amir.ctrl import (
    BFn,
    CFn,
    ThreadsFn,
    compile_b,
    compile_c,
    compile_threads,
)
from gpusem.interpreter.amir.debug_rho import Rho
from gpusem.interpreter.amir.debug_show import Event, describe_event, threads_text
from gpusem.interpreter.amir.machine import DEFAULT_MAX_STEPS, Machine
from gpusem.interpreter.amir.records import ALL, Threads

SNAPSHOT_EVERY = 256
SNAPSHOT_RATIO = 8
MAX_SNAPSHOTS = 32
_NOT_STATE = ("prog", "body")  # shared, immutable (the AST) or unused (closures)
CHECKS = ("CheckReads", "CheckMutates", "CheckBarrier")
STATEMENTS = ("Alloc", "Free", "IncTaskID", "RecordRead", "RecordMutate", "ClearReads",
              "ClearMutates", "Fence", "Arrive", "Await")

# The statements with a thread mapping, and what `_compiled` makes of a statement.
Threaded = (A.RecordRead | A.RecordMutate | A.Fence | A.Arrive | A.Await | A.CheckReads
            | A.CheckMutates)
Ctrl = tuple[CFn, CFn] | BFn | ThreadsFn
Pending = tuple[A.AStmt, frozenset[str]]     # the next statement and its bound names


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """`break LINE` (a GPU IR source line) or `break CHECK` (a check kind)."""

    kind: str  # line | check | statement (any other AMIR statement kind)
    value: object

    def describe(self) -> str:
        return f"{self.kind} {self.value}"

    def matches(self, s: A.AStmt) -> bool:
        if self.kind == "line":
            return s.origin.line == self.value
        return type(s).__name__ == self.value


@dataclass
class Stop:
    """Why a run of steps ended: "" (all requested steps taken) or a reason."""

    reason: str = ""
    breakpoint: Breakpoint | None = None


class _Frame:
    """One block being executed: its statements, the next index, and for a loop body
    the loop variable, its value, the exclusive bound, and the shadowed value."""

    __slots__ = ("body", "i", "bound", "var", "y", "hi", "saved")

    def __init__(self, body: tuple[A.AStmt, ...], bound: frozenset[str],
                 var: str | None = None, y: int = 0, hi: int = 0,
                 saved: int | None = None):
        self.body, self.i, self.bound = body, 0, bound
        self.var, self.y, self.hi, self.saved = var, y, hi, saved

    def copy(self) -> _Frame:
        f = _Frame(self.body, self.bound, self.var, self.y, self.hi, self.saved)
        f.i = self.i
        return f


# A snapshot: the pickled machine state, frames, pending, steps, status, violation,
# error (see `_keep_snapshot`).
Snapshot = tuple[bytes, list[_Frame], Pending | None, int, str, Violation | None,
                 GpusemError | None]


class Session:
    def __init__(self, prog: A.AProc, defines: Mapping[str, int], *,
                 max_steps: int = DEFAULT_MAX_STEPS):
        self.prog, self.max_steps = prog, max_steps
        self.machine = Machine(prog, defines, max_steps=max_steps)
        self.frames = [_Frame(prog.body, frozenset(prog.params))]
        self.steps = 0
        self.status = "running"  # running | accepted | rejected | error
        self.violation: Violation | None = None
        self.error: GpusemError | None = None
        self.breakpoints: list[Breakpoint] = []
        self.trace_sink: Callable[[str], object] | None = None  # for --trace
        self.last: Event | None = None
        self._leaf: dict[int, Callable[[], Violation | None]] = {}
        self._ctrl: dict[int, Ctrl] = {}
        self.rho = Rho(self)  # ρ for people: `records`, a step's changes
        self.pending: Pending | None = None
        self._advance()
        if self.pending is None:            # nothing to run (say, a zero-trip loop)
            self.status = "accepted"
        self._snap_cost, self._since = 0.0, time.perf_counter()
        self.snapshots: dict[int, Snapshot] = {}
        self._keep_snapshot()

    # ------------------------------------------------------------------ stepping

    def step_once(self, detail: bool = False) -> Event | Stop:
        if self.status != "running":
            return Stop(self.finished())
        assert self.pending is not None                  # running: a next statement
        s, bound = self.pending
        m = self.machine
        loops, task = self.loops(), m.task
        try:
            threads = self._threads(s, bound)
            before = self.rho.before(s) if detail else None
            fn = self._leaf.get(id(s))
            if fn is None:
                fn = self._leaf[id(s)] = m.leaf(s, bound)
            violation = fn()
        except (Trap, BadInput) as err:
            self.status, self.error = "error", err
            return Stop(f"the machine stopped: {err.one_line()}")
        self.steps += 1
        m.stats.statements += 1
        changes = self.rho.changes(s, bound, before) if detail else ()
        event = Event(self.steps, s, task, loops, threads, changes, violation)
        self.last = event
        if self.trace_sink is not None:
            self.trace_sink(describe_event(event))
        if violation is not None:
            self.status, self.violation = "rejected", violation
        else:
            self._advance_or_stop()
        if self.status == "running" and self.steps & 255 == 0:
            budget = m.guard.exceeded(s.origin, "LoopStep")  # the memory budget
            if budget is not None:
                self.status, self.error = "error", budget
        if self.steps & 255 == 0 and time.perf_counter() - self._since \
                > SNAPSHOT_RATIO * self._snap_cost:
            self._keep_snapshot()
        return event

    def _advance_or_stop(self) -> None:
        try:
            self._advance()
        except BadInput as err:
            self.status, self.error = "error", err
            return
        if self.pending is None:
            self.status = "accepted"
        elif self.steps >= self.max_steps:
            self.status = "error"
            self.error = BudgetExhausted(
                f"step budget exhausted: more than {self.max_steps} statements",
                rule="LoopStep", span=self.pending[0].origin)

    def finished(self) -> str:
        """Why the machine does not run any more (or "")."""
        match self.status:
            case "accepted":
                return (f"accepted: the program ended after {self.steps} AMIR "
                        f"statements and every check passed")
            case "rejected":
                assert self.violation is not None
                return f"rejected: {self.violation.check} failed at step {self.steps}"
            case "error":
                assert self.error is not None
                return f"the machine stopped: {self.error.one_line()}"
        return ""

    def run(self, count: int | None, *, use_breaks: bool = True, show: int = 1,
            interrupted: Callable[[], bool] = lambda: False
            ) -> tuple[list[Event], Stop]:
        """Up to `count` steps (None: until the end, a failing check or a breakpoint).
        The ρ changes are computed for the last `show` steps of a counted run and for
        a step that hits a breakpoint; only those events are returned, plus the last."""
        shown: list[Event] = []
        taken = 0
        while count is None or taken < count:
            if taken & 255 == 255 and interrupted():
                return shown, Stop("interrupted")
            if self.status != "running":
                return shown, Stop(self.finished())
            assert self.pending is not None              # running: a next statement
            hit = self._hit(self.pending[0]) if use_breaks else None
            detail = hit is not None or (count is not None and count - taken <= show)
            out = self.step_once(detail)
            if isinstance(out, Stop):
                return shown, out
            taken += 1
            if detail or out.violation is not None or self.status != "running":
                shown.append(out)
            if hit is not None:
                return shown, Stop(f"breakpoint: {hit.describe()}", hit)
        return shown, Stop(self.finished() if self.status != "running" else "")

    def next_line(self, keep: int = 20, interrupted: Callable[[], bool] = lambda: False
                  ) -> tuple[list[Event], Stop]:
        """gdb's `next` at GPU IR granularity: execute statements until the next one
        comes from another GPU IR line (a loop over this line runs to its end). The
        last `keep` events are returned, with their ρ changes."""
        if self.status != "running":
            return [], Stop(self.finished())
        assert self.pending is not None                  # running: a next statement
        line = self.pending[0].origin.line
        shown: list[Event] = []
        while True:
            if len(shown) & 255 == 255 and interrupted():
                return shown[-keep:], Stop("interrupted")
            out = self.step_once(detail=True)
            if isinstance(out, Stop):
                return shown[-keep:], out
            shown.append(out)
            if len(shown) > 4 * keep:
                del shown[:-keep]
            if self.status != "running":
                return shown[-keep:], Stop(self.finished())
            assert self.pending is not None              # running: a next statement
            if self.pending[0].origin.line != line:
                return shown[-keep:], Stop()

    def _hit(self, s: A.AStmt) -> Breakpoint | None:
        for bp in self.breakpoints:
            if bp.matches(s):
                return bp
        return None

    # ------------------------------------------------------------ the structure

    def _advance(self) -> None:
        """Move to the next non-compound statement: LoopStep / LoopDone, If-True /
        If-False (Figure 21), as the machine runs them. `pending` is None at the end."""
        frames, env = self.frames, self.machine.env
        while frames:
            f = frames[-1]
            if f.i < len(f.body):
                s = f.body[f.i]
                f.i += 1
                match s:
                    case A.Loop():
                        lo, hi = cast(tuple[CFn, CFn], self._compiled(s, f.bound))
                        m, n = lo(env), hi(env)
                        if m < n:                                    # LoopStep
                            frames.append(_Frame(s.body, f.bound | {s.var}, s.var, m,
                                                 n, env.get(s.var)))
                            env[s.var] = m
                        # LoopDone: nothing to run
                    case A.Guard():
                        if cast(BFn, self._compiled(s, f.bound))(env):  # If-True
                            frames.append(_Frame(s.body, f.bound))
                        # If-False: no effect
                    case _:
                        self.pending = (s, f.bound)
                        return
                continue
            if f.var is not None and f.y + 1 < f.hi:                 # LoopStep
                f.y += 1
                env[f.var] = f.y
                f.i = 0
                continue
            frames.pop()
            if f.var is not None:                # the loop variable goes out of scope
                if f.saved is None:
                    env.pop(f.var, None)
                else:
                    env[f.var] = f.saved
        self.pending = None

    def _compiled(self, s: A.Loop | A.Guard | Threaded, bound: frozenset[str]) -> Ctrl:
        fn = self._ctrl.get(id(s))
        if fn is None:
            if isinstance(s, A.Loop):
                fn = (compile_c(s.lo, bound, s.origin),
                      compile_c(s.hi, bound, s.origin))
            elif isinstance(s, A.Guard):
                fn = compile_b(s.cond, bound, s.origin)
            else:
                fn = compile_threads(s.threads, bound, s.origin)
            self._ctrl[id(s)] = fn
        return fn

    def _threads(self, s: A.AStmt, bound: frozenset[str]) -> Threads | None:
        if not hasattr(s, "threads"):
            return None
        compiled = self._compiled(cast(Threaded, s), bound)
        mask = cast(ThreadsFn, compiled)(self.machine.env)
        return ALL if mask is None else (self.machine.task, mask)

    def records(self, name: str) -> list[str]:
        """ρ(name), grouped by cells (`records VAR`)."""
        return self.rho.records(name)

    def variables(self) -> list[str]:
        """Every variable of ρ with a summary (`records`)."""
        return self.rho.variables()

    def loops(self) -> tuple[tuple[str, int], ...]:
        return tuple((f.var, f.y) for f in self.frames if f.var is not None)

    # ------------------------------------------------------------------ history

    def _keep_snapshot(self) -> None:
        start = time.perf_counter()
        m = self.machine
        state = {k: v for k, v in m.__dict__.items() if k not in _NOT_STATE}
        self.snapshots[self.steps] = (pickle.dumps(state, pickle.HIGHEST_PROTOCOL),
                                      [f.copy() for f in self.frames], self.pending,
                                      self.steps, self.status, self.violation,
                                      self.error)
        if len(self.snapshots) > MAX_SNAPSHOTS:
            # thin out the older half (every other one): recent history stays dense,
            # so the common short `back` replays little
            keys = sorted(self.snapshots)
            for k in keys[1:len(keys) // 2:2]:
                del self.snapshots[k]
        self._since = time.perf_counter()
        self._snap_cost = self._since - start

    def _restore(self, snap: Snapshot) -> None:
        blob, frames, self.pending, self.steps, self.status, self.violation, \
            self.error = snap
        old = self.machine
        m = Machine.__new__(Machine)
        m.__dict__.update(pickle.loads(blob))
        m.prog, m.body = old.prog, old.body
        self.machine = m
        self.frames = [f.copy() for f in frames]
        self._leaf = {}  # compiled leaves close over the machine they were made for
        self._since = time.perf_counter()

    def back(self, n: int) -> int:
        """Undo `n` steps (from the nearest snapshot, replaying); returns how many."""
        before = self.steps
        target = max(0, before - n)
        base = max(k for k in self.snapshots if k <= target)
        self._restore(self.snapshots[base])
        self.snapshots = {k: v for k, v in self.snapshots.items() if k <= base}
        sink, self.trace_sink = self.trace_sink, None
        try:
            while self.steps < target and self.status == "running":
                self.step_once()
        finally:
            self.trace_sink = sink
        self.last = None
        return before - self.steps

__all__ = ["Breakpoint", "CHECKS", "Event", "STATEMENTS", "Session", "Stop",
           "describe_event", "threads_text"]
