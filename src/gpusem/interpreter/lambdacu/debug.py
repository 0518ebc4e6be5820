"""The model of `gpusem step FILE.lcu`: a lambda-cu program's run under the rules of
Sec 6.2 (seed 002), one rule application at a time.

A session is the run's trace: every rule the interpreter applies (`Run.fire`), with
its redex's span and what the program had printed by then, in the order the rules'
derivations complete. The CPU rules (-->c) are small-step, so their order is the
program's; the GPU rules are big-step (GPU-LET, IDX-THUNK, the SOACs: a SOAC's
premises are its threads' derivations), so a SOAC-MAP comes after the IDX-THUNK and
GPU-* steps of every element it computed, and before the KERN-LET that binds it.
Note: the run is made once, when the session opens (bounded by the step budget),
and the session moves a cursor over it; lambda-cu is deterministic (no schedule), so
this trace is the one every run takes, and `back` is exact. The run's end (a value,
a trap, a stuck state or the budget) is the session's once the cursor reaches it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gpusem.calculus.errors import BudgetExhausted, GpusemError, Stuck, Trap
from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import show_value
from gpusem.calculus.span import Span
from gpusem.interpreter.lambdacu.machine import evaluate
from gpusem.interpreter.lambdacu.rules import OURS, RULES, RuleSet, Run


@dataclass(frozen=True, slots=True)
class Event:
    """Rule application `n` (1-based): the rule, its redex, and how many lines the
    program had printed once it applied."""

    n: int
    rule: str
    span: Span
    printed: int


@dataclass(frozen=True, slots=True)
class Breakpoint:
    kind: str  # "rule" | "line"
    value: str | int

    def describe(self) -> str:
        if self.kind == "rule":
            return f"after rule {self.value}"
        return f"after a rule whose redex starts on line {self.value}"

    def hits(self, e: Event) -> bool:
        return (e.rule == self.value if self.kind == "rule"
                else e.span.line == self.value)


@dataclass
class Session:
    events: list[Event]
    printed: list[str]
    # how the run ended: "terminated" with its value, or the error that stopped it
    end: str
    value: str = ""
    error: GpusemError | None = None
    at: int = 0  # events taken
    breakpoints: list[Breakpoint] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.at >= len(self.events)

    def state(self) -> str:
        """A key of the debugger's EXIT_CODES."""
        return self.end if self.finished else "running"

    def advance(self, count: int | None, use_breaks: bool = True) -> list[Event]:
        """Take `count` events (None: to the end or a breakpoint); the ones taken."""
        taken: list[Event] = []
        while not self.finished and (count is None or len(taken) < count):
            e = self.events[self.at]
            self.at += 1
            taken.append(e)
            if use_breaks and count is None and any(b.hits(e)
                                                     for b in self.breakpoints):
                break
        return taken

    def back(self, count: int) -> int:
        undone = min(count, self.at)
        self.at -= undone
        return undone

    def printed_now(self) -> list[str]:
        return self.printed[: self.events[self.at - 1].printed] if self.at else []

    def seen(self) -> Counter[str]:
        return Counter(e.rule for e in self.events[: self.at])

    @property
    def rules(self) -> tuple[str, ...]:
        return RULES + OURS


def record(program: ast.Program, rules: RuleSet, max_steps: int,
           elems: dict[int, tuple[str, ...]]) -> Session:
    """The run of a checked program, traced (the budget's, a trap's or a stuck
    state's error ends it)."""
    events: list[Event] = []
    printed: list[str] = []

    def on_fire(run: Run, rule: str, span: Span) -> None:
        printed[:] = run.printed
        events.append(Event(len(events) + 1, rule, span, len(run.printed)))

    try:
        res = evaluate(program, rules, max_steps, elems, on_fire=on_fire)
    except (Stuck, Trap, BudgetExhausted) as error:
        end = ("stuck" if isinstance(error, Stuck) else "trap"
               if isinstance(error, Trap) else "budget")
        return Session(events, list(printed), end, error=error)
    return Session(events, list(res.printed), "terminated",
                   value=show_value(res.value))


__all__ = ["Breakpoint", "Event", "Session", "record"]
