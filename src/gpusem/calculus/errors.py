"""The error taxonomy shared by every judgment (STYLE 10-11).

Kept apart, because a user acts differently on each:
- `BadInput`: malformed source, unknown names, out-of-range sizes (CLI exit 2);
  `CannotRunHere`, a kind of it: this machine lacks what a run needs (a GPU);
- `IllTyped`: a static rule rejected the program (CLI exit 1);
- `Trap`: a runtime error the calculus itself defines (division by zero, out of bounds);
- `Stuck`: no rule applies (for a well-typed program, a soundness bug);
- `Deadlock`: every live thread waits on a barrier that can no longer open;
- `BudgetExhausted`: a step or time budget ran out (CLI exit 2).

Every error carries the rule or check that failed, the source span, and a message whose
lowercase prefix up to the first colon is stable, so tests match on it.
"""

from __future__ import annotations

from gpusem.calculus.span import NO_SPAN, Span


class GpusemError(Exception):
    """Base class: `rule` names the inference rule or check, `span` the source."""

    exit_code = 1

    def __init__(self, message: str, *, rule: str = "", span: Span = NO_SPAN):
        super().__init__(message)
        self.message = message
        self.rule = rule
        self.span = span

    @property
    def prefix(self) -> str:
        return self.message.split(":", 1)[0]

    def one_line(self) -> str:
        where = f"{self.span}: " if self.span is not NO_SPAN else ""
        rule = f"[{self.rule}] " if self.rule else ""
        return f"{where}{rule}{self.message}".replace("\n", " ")


class BadInput(GpusemError):
    exit_code = 2


class CannotRunHere(BadInput):
    """What was asked needs what this machine lacks (a GPU and its driver, an
    installed compiler under test): bad input to most verbs (exit 2), "cannot test"
    to `replay` (exit 125: `git bisect run` skips the commit)."""


class IllTyped(GpusemError):
    exit_code = 1


class Trap(GpusemError):
    exit_code = 1


class Stuck(GpusemError):
    exit_code = 1


class Deadlock(GpusemError):
    exit_code = 1


class BudgetExhausted(GpusemError):
    exit_code = 2
