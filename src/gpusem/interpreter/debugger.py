"""The one debugger interface (issue 25): what `gpusem step` asks of a machine's
debugging session, whatever the language. Bundl's small-step session
(`bundl/debug_commands.py` over `bundl/debug.py`) and AMIR's
(`amir/debug_commands.py` over `amir/debug.py`) implement it; the one shell
(`cli/debugger_shell.py`) reads a line, runs the named command and shows what it
returns, and never reads a machine.

A command answers with what to show: `Line`s of text (plain, or rich markup the
implementation wrote itself: never the user's text) and `Grid`s (a table). How a
session ends is an `Ending`: the exit code of a scripted session (issue 24, README's
table): 0 the machine ran to its end normally or is still running (the script
stopped it: a breakpoint, a count of steps), 1 it is stuck, deadlocked, trapped or
rejected by a check (a finding), 2 a step or memory budget ran out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from gpusem.calculus.errors import BadInput

Interrupted = Callable[[], bool]  # Ctrl-C was pressed: stop between steps


@dataclass(frozen=True, slots=True)
class Line:
    """One line to show; `markup`: `text` holds rich markup (the implementation's own
    words only: program text and cell names like `out[1]` are shown plain)."""

    text: str
    style: str | None = None
    markup: bool = False


@dataclass(frozen=True, slots=True)
class Grid:
    """A table: a header and rows of cells (cells may hold markup)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


Shown = Line | Grid


@dataclass(frozen=True)
class Command:
    """One debugger command: `run(arg, interrupted)` returns what to show (BadInput:
    a usage error, shown as one `error:` line). `doc`: "usage: what it does".
    `interruptible`: Ctrl-C stops it between steps (the shell traps SIGINT)."""

    run: Callable[[str, Interrupted], Sequence[Shown]]
    doc: str
    aliases: tuple[str, ...] = ()
    complete: Callable[[str], list[str]] | None = None
    interruptible: bool = False


# state -> exit code. running: a script that stops a machine early (a breakpoint, a
# count of steps) found nothing.
EXIT_CODES: Mapping[str, int] = {
    "running": 0, "terminated": 0, "accepted": 0,
    "stuck": 1, "deadlock": 1, "trap": 1, "rejected": 1,
    "budget": 2, "bad-input": 2,
}


@dataclass(frozen=True, slots=True)
class Ending:
    """Where a session stands: its state (a key of EXIT_CODES) and, when it did not
    end normally, one line saying why (`file:line:col: ...` where the error has one)."""

    state: str
    reason: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.state]


class Debugger(Protocol):
    """A debugging session as the shell sees it."""

    file: str

    def commands(self) -> Mapping[str, Command]:
        """Every command by its name (aliases in `Command.aliases`)."""
        ...

    def banner(self) -> Sequence[Shown]:
        """What an interactive session shows first."""
        ...

    def unknown(self, word: str) -> Sequence[Shown]:
        """The answer to a command nobody knows."""
        ...

    def ending(self) -> Ending:
        """How the session stands now (a scripted session exits with its code)."""
        ...

    def trace_to(self, sink: Callable[[str], object] | None) -> None:
        """Send one line per step taken from now on to `sink` (`--trace FILE`)."""
        ...

    @property
    def interrupt_note(self) -> str:
        """What Ctrl-C at the prompt shows (the session stays)."""
        ...


def delete_breakpoint(breakpoints: list[object], arg: str,
                      describe: Callable[[object], str]) -> list[Shown]:
    """`delete [N]`: remove breakpoint N, or all of them."""
    if not arg.strip():
        breakpoints.clear()
        return [Line("all breakpoints deleted")]
    args = ints(arg, "delete [N]")
    n = args[0] if len(args) == 1 else 0
    if not 1 <= n <= len(breakpoints):
        raise BadInput(f"no breakpoint {n}")
    return [Line(f"deleted breakpoint {n}: {describe(breakpoints.pop(n - 1))}")]


def ints(arg: str, usage: str) -> list[int]:
    try:
        return [int(x) for x in arg.split()]
    except ValueError:
        raise BadInput(f"usage: {usage}") from None


__all__ = ["EXIT_CODES", "Command", "Debugger", "Ending", "Grid", "Interrupted",
           "Line", "Shown", "delete_breakpoint", "ints"]
