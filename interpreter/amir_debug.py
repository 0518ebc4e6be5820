"""The model behind `gpusem step FILE.gpuir`: a debugging session over the AMIR machine
(Exo-GPU Figures 21, 22 and 7, Appendix B), one statement at a time.

The machine (interpreter/amir_machine.Machine) stays the definition: the session walks
the structure itself (LoopStep / LoopDone and If-True / If-False of Figure 21, exactly
as `Machine._rule_loop` / `_rule_if` do: bounds evaluated once, the loop variable bound
in σ and restored after) and runs every non-compound statement through
`Machine.leaf`, the machine's own compiled rule. So a session run to the end reaches
the verdict `check_amir` reaches (tests pin it). No I/O here: cli/step_amir.py shows it.

A step is one execution of a non-compound statement (Alloc, Record*, Clear*, Check*,
Fence, Arrive, Await, IncTaskID, Free). When asked (`detail`), a step also reports
what it changed in ρ: the record added to or cleared from which cells, the records a
lift raised (and to whom, at which level), the barrier counts.

History and `back`: the machine is deterministic, so the session keeps snapshots of
the machine state (pickled: several times faster and smaller than a deep copy of its
object graph) and goes back by restoring the nearest earlier one and replaying.
Snapshots are spaced so that taking them costs at most 1/SNAPSHOT_RATIO of the stepping
time (and are a multiple of 256 steps apart), and the older half is thinned when there
are more than MAX_SNAPSHOTS: memory stays bounded and a short `back` replays little.

Conventions (paper -> Python): σ -> `machine.env`, ι -> `machine.task`,
ρ -> `machine.vars` (see amir_machine), g_{s#}(σ, ι) -> `Event.threads`.
"""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass

import numpy as np

from gpusem.calculus.amir import ast as A
from gpusem.calculus.amir.printer import print_access
from gpusem.calculus.errors import BadInput, BudgetExhausted, Trap
from gpusem.calculus.gpuir.timelines import QualTL

from .amir_checks import Violation
from .amir_ctrl import compile_b, compile_c, compile_threads, compile_window
from .amir_machine import DEFAULT_MAX_STEPS, Machine
from .amir_debug_show import (cell_name, cell_text, describe_event, ids_text,
                              levels_text, threads_text)
from .amir_records import ALL, Rec, Threads

SNAPSHOT_EVERY = 256
SNAPSHOT_RATIO = 8
MAX_SNAPSHOTS = 32
_NOT_STATE = ("prog", "body")  # shared, immutable (the AST) or unused (closures)
CHECKS = ("CheckReads", "CheckMutates", "CheckBarrier")
STATEMENTS = ("Alloc", "Free", "IncTaskID", "RecordRead", "RecordMutate", "ClearReads",
              "ClearMutates", "Fence", "Arrive", "Await")
_ACCESS = (A.RecordRead, A.RecordMutate, A.ClearReads, A.ClearMutates)
_LIFTS = (A.Fence, A.Arrive, A.Await)
_QUALS = list(QualTL)


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


@dataclass(frozen=True, slots=True)
class Event:
    """One executed statement: what ran, where, by whom, and (detail) its changes."""

    n: int                                   # step number, from 1
    stmt: A.AStmt
    task: int                                # ι when it ran
    loops: tuple[tuple[str, int], ...]       # enclosing loop values, outermost first
    threads: Threads | None                  # g_{s#}(σ, ι); None: no thread mapping
    changes: tuple[str, ...] = ()            # ρ changes (only when detail was asked)
    violation: Violation | None = None


@dataclass
class Stop:
    """Why a run of steps ended: "" (all requested steps taken) or a reason."""

    reason: str = ""
    breakpoint: Breakpoint | None = None


class _Frame:
    """One block being executed: its statements, the next index, and for a loop body
    the loop variable, its value, the exclusive bound, and the shadowed value."""

    __slots__ = ("body", "i", "bound", "var", "y", "hi", "saved")

    def __init__(self, body, bound, var=None, y=0, hi=0, saved=None):
        self.body, self.i, self.bound = body, 0, bound
        self.var, self.y, self.hi, self.saved = var, y, hi, saved

    def copy(self) -> _Frame:
        f = _Frame(self.body, self.bound, self.var, self.y, self.hi, self.saved)
        f.i = self.i
        return f


class Session:
    def __init__(self, prog: A.AProc, defines, *, max_steps: int = DEFAULT_MAX_STEPS):
        self.prog, self.max_steps = prog, max_steps
        self.machine = Machine(prog, defines, max_steps=max_steps)
        self.frames = [_Frame(prog.body, frozenset(prog.params))]
        self.steps = 0
        self.status = "running"  # running | accepted | rejected | error
        self.violation: Violation | None = None
        self.error: Exception | None = None
        self.breakpoints: list[Breakpoint] = []
        self.trace_sink = None  # callable(str) for --trace
        self.last: Event | None = None
        self._leaf: dict[int, object] = {}
        self._ctrl: dict[int, object] = {}
        self._stmts = {id(s): s for s in _leaves(prog.body)}
        self.pending = None
        self._advance()
        if self.pending is None:            # nothing to run (say, a zero-trip loop)
            self.status = "accepted"
        self._snap_cost, self._since = 0.0, time.perf_counter()
        self.snapshots: dict[int, tuple] = {}
        self._keep_snapshot()

    # ------------------------------------------------------------------ stepping

    def step_once(self, detail: bool = False) -> Event | Stop:
        if self.status != "running":
            return Stop(self.finished())
        s, bound = self.pending
        m = self.machine
        loops, task = self.loops(), m.task
        try:
            threads = self._threads(s, bound)
            before = self._before(s) if detail else None
            fn = self._leaf.get(id(s))
            if fn is None:
                fn = self._leaf[id(s)] = m.leaf(s, bound)
            violation = fn()
        except (Trap, BadInput) as err:
            self.status, self.error = "error", err
            return Stop(f"the machine stopped: {err.one_line()}")
        self.steps += 1
        m.stats.statements += 1
        changes = self._changes(s, bound, before) if detail else ()
        event = Event(self.steps, s, task, loops, threads, changes, violation)
        self.last = event
        if self.trace_sink is not None:
            self.trace_sink(describe_event(event))
        if violation is not None:
            self.status, self.violation = "rejected", violation
        else:
            self._advance_or_stop()
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
                rule="LoopStep")

    def finished(self) -> str:
        """Why the machine does not run any more (or "")."""
        match self.status:
            case "accepted":
                return (f"accepted: the program ended after {self.steps} AMIR "
                        f"statements and every check passed")
            case "rejected":
                return f"rejected: {self.violation.check} failed at step {self.steps}"
            case "error":
                return f"the machine stopped: {self.error.one_line()}"
        return ""

    def run(self, count: int | None, *, use_breaks: bool = True, show: int = 1,
            interrupted=lambda: False) -> tuple[list[Event], Stop]:
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
                        lo, hi = self._compiled(s, f.bound)
                        m, n = lo(env), hi(env)
                        if m < n:                                    # LoopStep
                            frames.append(_Frame(s.body, f.bound | {s.var}, s.var, m,
                                                 n, env.get(s.var)))
                            env[s.var] = m
                        # LoopDone: nothing to run
                    case A.Guard():
                        if self._compiled(s, f.bound)(env):       # If-True
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

    def _compiled(self, s, bound):
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

    def _threads(self, s, bound) -> Threads | None:
        if not hasattr(s, "threads"):
            return None
        mask = self._compiled(s, bound)(self.machine.env)
        return ALL if mask is None else (self.machine.task, mask)

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

    def _restore(self, snap: tuple) -> None:
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

    # ------------------------------------------------------------ ρ, for people

    def _before(self, s: A.AStmt):
        m = self.machine
        if isinstance(s, _ACCESS):
            v = m.vars.get(s.access.name)
            attr = "rd" if isinstance(s, (A.RecordRead, A.ClearReads)) else "mu"
            return attr, (None if v is None else getattr(v, attr).copy())
        if isinstance(s, _LIFTS):
            recs = {r.id: (r, dict(r.blocks), dict(r.p)) for r in self.live_records()}
            bars = {n: (v.arr.copy(), v.awt.copy()) for n, v in m.vars.items()
                    if v.arr is not None}
            return recs, bars
        return m.task

    def _changes(self, s: A.AStmt, bound, before) -> tuple[str, ...]:
        m = self.machine
        match s:
            case A.RecordRead() | A.RecordMutate() | A.ClearReads() | A.ClearMutates():
                return self._cell_changes(s, self.window_text(s, bound), *before)
            case A.Fence() | A.Arrive() | A.Await():
                return self._lift_changes(*before)
            case A.CheckReads() | A.CheckMutates() | A.CheckBarrier():
                return (f"check passed on {self.window_text(s, bound)}; ρ unchanged",)
            case A.Alloc(name=n):
                v = m.vars[n]
                shape = "".join(f"[0:{k}]" for k in v.shape)
                what = "(a, w) = (0, 0)" if v.arr is not None else "r = m = ∅"
                return (f"Alloc: ρ({n}{shape}) fresh: {what} on every cell",)
            case A.Free(name=n):
                return (f"Free: {n} dropped; its cells release their records",)
            case A.IncTaskID():
                return (f"ι: {before} -> {m.task}",)
        return ()

    def _cell_changes(self, s, window: str, attr: str, old) -> tuple[str, ...]:
        name = s.access.name
        v = self.machine.vars[name]
        new = getattr(v, attr)
        if old is None or old.shape != new.shape:
            grown = np.zeros(new.shape, dtype=new.dtype)
            if old is not None:
                grown[tuple(slice(0, k) for k in old.shape)] = old
            old = grown
        part = "r (reads)" if attr == "rd" else "m (mutates)"
        diff = old != new
        if not diff.any():
            what = "already empty" if isinstance(s, (A.ClearReads, A.ClearMutates)) \
                else "already holds this record"
            return (f"ρ({window}).{part[0]} unchanged ({what})",)
        out = []
        pairs = np.unique(np.stack([old[diff], new[diff]]), axis=1).T.tolist()
        for a, b in pairs:
            cells = cell_text(name, np.argwhere(diff & (old == a) & (new == b)),
                              v.shape)
            was = {r.id: r for r in self._set(a)}
            now = {r.id: r for r in self._set(b)}
            for rid in now.keys() - was.keys():
                out.append(f"ρ({cells}).{part}: + {self.describe_record(now[rid])}")
            for rid in was.keys() - now.keys():
                why = "cleared" if not now else "dropped (dominated by the new one)"
                out.append(f"ρ({cells}).{part}: - #{rid} {why}")
        return tuple(out)

    def _lift_changes(self, recs: dict, bars: dict) -> tuple[str, ...]:
        """What λ did, records with the same provenance and change grouped."""
        groups: dict[str, list[int]] = {}
        for rid, (r, blocks, p) in recs.items():
            for ts, lv in r.blocks.items():
                if blocks.get(ts) != lv:
                    groups.setdefault(f"lifted @IDS@ ({self.short_record(r)}): now "
                                      f"{levels_text(lv)} for {threads_text(ts)}",
                                      []).append(rid)
            for cell, a in r.p.items():
                if cell not in p:
                    bar = cell_name(cell[0][0], cell[1])
                    groups.setdefault(f"@IDS@ ({self.short_record(r)}) observed "
                                      f"{bar} arrive count {a}", []).append(rid)
        for r in self.live_records():
            if r.id not in recs:
                groups.setdefault(f"split off @IDS@ ({self.short_record(r)}) from its "
                                  f"family", []).append(r.id)
        out = [text.replace("@IDS@", ids_text(ids)) for text, ids in groups.items()]
        for n, (arr, awt) in bars.items():
            v = self.machine.vars.get(n)
            if v is None or v.arr is None or v.arr.shape != arr.shape:
                continue
            for idx in np.argwhere((v.arr != arr) | (v.awt != awt)).tolist():
                i = tuple(idx)
                out.append(f"{cell_name(n, i)}: (a, w) = ({arr[i]}, {awt[i]}) -> "
                           f"({v.arr[i]}, {v.awt[i]})")
        return tuple(out) or ("no record changed (λ(r) = r for every live record)",)

    def window_text(self, s, bound) -> str:
        """The cells statement s accesses now (W_{e#} under σ), as `buf[3]` or
        `buf[0:128]`; its printed access where the window cannot be evaluated."""
        acc = s.access
        v = self.machine.vars.get(acc.name)
        shape = v.shape if v is not None else (0,) * len(acc.coords)
        try:
            idx = compile_window(acc, bound, s.origin).raw(self.machine.env, shape)
        except (BadInput, IndexError, KeyError):
            return print_access(acc)
        parts = [str(i) if isinstance(i, int) else f"{i.start}:{i.stop}" for i in idx]
        return f"{acc.name}[{', '.join(parts)}]" if parts else acc.name

    def _set(self, sid: int) -> tuple[Rec, ...]:
        return self.machine.sets.sets[sid] or ()

    def live_records(self) -> list[Rec]:
        """Every record some cell of ρ holds, in creation order."""
        seen: dict[int, Rec] = {}
        for v in self.machine.vars.values():
            for arr in (v.rd, v.mu):
                for sid in np.unique(arr).tolist():
                    for r in self._set(sid):
                        seen.setdefault(r.id, r)
        return [seen[k] for k in sorted(seen)]

    def var_of(self, r: Rec) -> str:
        s = self._stmts.get(r.stmt)
        return s.access.name if s is not None else "?"

    def short_record(self, r: Rec) -> str:
        return f"{r.kind} of {self.var_of(r)} at line {r.origin.line}"

    def describe_record(self, r: Rec) -> str:
        fam = ", one record per thread" if r.own is not None else ""
        return (f"#{r.id} {r.kind} of {self.var_of(r)} at line {r.origin.line} by "
                f"{threads_text(r.who)} on {_QUALS[r.q].value}{fam}")

    def records(self, name: str) -> list[str]:
        """ρ restricted to one variable, grouped by record set, for `records VAR`."""
        v = self.machine.vars.get(name)
        if v is None:
            have = ", ".join(sorted(self.machine.vars)) or "none yet"
            raise BadInput(f"no variable {name} in ρ (have: {have})")
        out = [f"ρ({name}): shape {list(v.shape)}"]
        for attr, label in (("rd", "r (reads)"), ("mu", "m (mutates)")):
            arr = getattr(v, attr)
            flat = arr.reshape(-1)
            uniq, first = np.unique(flat, return_index=True)
            for sid in uniq[np.argsort(first)].tolist():   # in order of first cell
                cells = cell_text(name, np.argwhere(arr == sid), v.shape)
                recs = self._set(sid)
                out.append(f"  {label} {cells}: " + ("∅" if not recs else
                                                     f"{len(recs)} record(s)"))
                for r in recs:
                    out.append(f"    {self.describe_record(r)}")
                    for ts, lv in r.blocks.items():
                        out.append(f"      visible to {threads_text(ts)}: "
                                   f"{levels_text(lv)}")
                    if r.own is not None:
                        out.append(f"      each member sees itself: "
                                   f"{levels_text(r.own)}")
                    for cell, a in r.p.items():
                        out.append(f"      observed {cell_name(cell[0][0], cell[1])} "
                                   f"arrive count {a}")
        if v.arr is not None:                 # a barrier: its counts, cells grouped
            pairs = np.stack([v.arr, v.awt], axis=-1).reshape(-1, 2)
            for a, w in np.unique(pairs, axis=0).tolist():
                where = np.argwhere((v.arr == a) & (v.awt == w))
                out.append(f"  {cell_text(name, where, v.shape)}: (a, w) = ({a}, {w})"
                           + ("   arrives and awaits differ" if a != w else ""))
        return out


def _leaves(body):
    for s in body:
        if isinstance(s, (A.Loop, A.Guard)):
            yield from _leaves(s.body)
        elif isinstance(s, (A.RecordRead, A.RecordMutate)):
            yield s


__all__ = ["Breakpoint", "CHECKS", "Event", "STATEMENTS", "Session", "Stop",
           "describe_event", "threads_text"]
