"""The Bundl machine judgment L, S, Σ, P, Ψ, Φ ⇝ L', S', Σ', P', Ψ', Φ' (S-Program).

Appendix A.3.1 of the Prism paper (seed 004) and Figure 15: the pool P of B × T threads,
each started at (Grid, 1) with p = 0; a scheduler picks which thread steps next (the
nondeterminism of S-Program). Schedulers: round-robin, seeded random, and exhaustive
exploration of all interleavings with state hashing.

Conventions (paper -> Python):
  P(t, b)              -> `Machine.threads()[t]` (t grid-wide: the "simplified" id)
  L(t)                 -> the thread's environment and its Local regions
  S(b), Σ              -> `Config.regions` with space Shared (owner b) / Global
  Ψ, Φ                 -> `Config.psi`, `Config.phi`
Outcomes: terminated (every P(t, b) = skip), stuck (a thread has no rule; names the
rule, thread (t, b, p), perspective, cell), deadlock (every live thread spins in
`wait`), budget (the step budget ran out).

Note: a thread spinning in S-Sync-Wait-Spin does not change the configuration, so the
schedulers do not count spins as steps and treat such a thread as not enabled; "every
live thread only spins" is a deadlock. See errata ("spinning is not a step").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gpusem.calculus.bundl.ast import Program, Skip, Stmt
from gpusem.calculus.bundl.limits import check_limits
from gpusem.calculus.bundl.perspective import MachineShape, Perspective
from gpusem.calculus.errors import GpusemError, Trap
from gpusem.calculus.span import Span
from gpusem.interpreter.bundl.config import (
    Config,
    ConfigSnapshot,
    Frame,
    SeqFrame,
    Term,
    ThreadState,
)
from gpusem.interpreter.bundl.plug import plug
from gpusem.interpreter.bundl.small_step import blocked, chain, step_thread
from gpusem.interpreter.bundl.values import GlobalMemory, located

# The preservation hook `check(machine, index)` (see `Machine`).
Check = Callable[["Machine", int], None]
MachineSnapshot = tuple[list[ThreadState], ConfigSnapshot, int]


class StepEvent:
    """One S-Program step: the rule applied to thread (t, b, p), the context around
    it (`frames`; `chain`: their congruence rules, outermost first), the redex before
    and the subterm after. Slotted, and the chain named only when asked: a debugger
    `continue` makes one per step and shows a few (issue 24)."""

    __slots__ = ("after", "frames", "index", "persp", "redex", "rule", "thread")

    def __init__(self, rule: str, frames: tuple[Frame, ...],
                 thread: tuple[int, int, int], index: int, persp: Perspective,
                 redex: Term, after: Term):
        self.rule, self.frames, self.thread, self.index = rule, frames, thread, index
        self.persp, self.redex, self.after = persp, redex, after

    @property
    def chain(self) -> tuple[str, ...]:
        return chain(self.frames)

    @property
    def rules(self) -> tuple[str, ...]:
        return chain(self.frames) + (self.rule,)

    @property
    def span(self) -> Span | None:
        """The redex's source span (before the step)."""
        return getattr(self.redex, "span", None)

@dataclass
class Outcome:
    kind: str  # terminated | stuck | deadlock | budget
    globals: GlobalMemory
    steps: int
    rule: str = ""
    message: str = ""
    thread: tuple[int, int, int] | None = None  # (t, b, p) of the failing thread
    persp: Perspective | None = None  # its code perspective
    cell: str | None = None  # the memory cell involved, e.g. "σ[b=0] s[3]"
    error: Exception | None = None
    trap: bool = False
    # exhaustive: the distinct final memories
    final_memories: list[GlobalMemory] = field(default_factory=list)
    bad_schedule: list[int] | None = None  # exhaustive: thread indices to replay
    states: int = 0  # exhaustive: distinct states explored
    exprs: int = 0  # big-step: evaluated expressions (one per lane)

    @property
    def ok(self) -> bool:
        return self.kind == "terminated"


class Machine:
    """A configuration (L, S, Σ, P, Ψ, Φ) and its stepping API (for `run` and `step`).

    `check` (optional) is called as check(machine, index) after every step: the
    preservation hook (see bundl/preservation)."""

    def __init__(self, prog: Program, rules: str = "fixed", *,
                 blocks: int | None = None, threads: int | None = None,
                 check: Check | None = None):
        B = blocks if blocks is not None else prog.machine.blocks
        T = threads if threads is not None else prog.machine.threads
        check_limits(prog, blocks, threads)  # B, T and the arrays fit the budgets
        self.prog = prog
        self.shape = MachineShape(B, T)
        self.cfg = Config(prog, self.shape, rules)
        self._threads = [ThreadState(b * T + t, b, prog.main)
                         for b in range(B) for t in range(T)]
        self.steps = 0
        self.check = check

    # -- inspection
    def threads(self) -> list[ThreadState]:
        return self._threads

    def live(self) -> list[int]:
        return [i for i, th in enumerate(self._threads) if not th.terminated]

    def enabled_threads(self) -> list[int]:
        cfg = self.cfg
        return [i for i, th in enumerate(self._threads)
                if not th.terminated and not blocked(cfg, th)]

    def term(self, index: int) -> Stmt:
        """The paper's P(t, b): the thread's whole current statement."""
        return plug(self.cfg, self._threads[index])

    def globals(self) -> GlobalMemory:
        return self.cfg.global_memory()

    # -- stepping
    def step(self, index: int) -> StepEvent:
        with np.errstate(all="ignore"):
            return self.step_quietly(index)

    def step_quietly(self, index: int) -> StepEvent:
        """`step`, for a caller that already ignores NumPy's floating-point warnings
        (`np.errstate(all="ignore")`): a loop of steps enters that context once."""
        th = self._threads[index]
        trace: list[Any] = []
        rule = step_thread(self.cfg, th, trace)
        if not rule.endswith("Spin"):
            self.steps += 1
        if self.check is not None:
            self.check(self, index)
        return StepEvent(rule, trace[0], (th.t, th.b, trace[3]), index, trace[2],
                         trace[1], th.focus)

    def snapshot(self) -> MachineSnapshot:
        return ([th.copy() for th in self._threads], self.cfg.snapshot(), self.steps)

    def restore(self, snap: MachineSnapshot) -> None:
        threads, cfg, steps = snap
        self._threads = [th.copy() for th in threads]
        self.cfg.restore(cfg)
        self.steps = steps

    def key(self) -> tuple[object, ...]:
        return (tuple(th.key() for th in self._threads), self.cfg.key())

    def outcome(self, kind: str, err: Exception | None = None, **kw: Any) -> Outcome:
        out = Outcome(kind, self.globals(), self.steps, **kw)
        if err is not None:
            out.error = err
            out.rule = getattr(err, "rule", "")
            out.message = getattr(err, "message", str(err))
            out.thread = getattr(err, "thread", None)
            out.persp = getattr(err, "persp", None)
            out.cell = getattr(err, "cell", None)
            out.trap = isinstance(err, Trap)
        return out


def where(m: Machine, th: ThreadState) -> Span:
    """The statement `th` is at, or (a thread that has ended) the program: where a
    budget ran out (issue 15: budget messages name the file and the statement)."""
    candidates: list[object] = [th.focus]
    for frame in reversed(th.frames):  # the innermost enclosing statement
        if isinstance(frame, SeqFrame) and 0 <= frame.i < len(frame.stmts):
            candidates.append(frame.stmts[frame.i])
        candidates.extend(getattr(frame, f.name) for f in dataclasses.fields(frame))
    for node in candidates:
        span = getattr(node, "span", None)
        if isinstance(span, Span) and span.line:
            return span
    return m.prog.span


def deadlock_error(message: str, th: ThreadState) -> GpusemError:
    from gpusem.calculus.errors import Deadlock
    err = Deadlock(message, rule="S-Sync-Wait-Spin",
                   span=getattr(th.focus, "span", None) or Skip().span)
    loc = located(err)
    loc.thread = (th.t, th.b, th.p)
    loc.persp = th.persp
    loc.cell = None
    return err
