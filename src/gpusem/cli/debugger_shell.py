"""What the two step-through debuggers share (`gpusem step` on a `.bundl`: cli/step.py;
on a `.gpuir`: cli/step_amir.py): the command shell over a debugger session, Ctrl-C
during a run as a clean stop, quit / end of input, errors as one line, and breakpoint
deletion."""

from __future__ import annotations

import cmd
import signal

from gpusem.calculus.errors import BadInput, GpusemError
from rich.console import Console


class DebuggerShell(cmd.Cmd):
    prompt = "(gpusem) "
    intro: str | None = ""

    def __init__(self, session, source: str, file: str, console: Console):
        super().__init__()
        self.session, self.source, self.file = session, source, file
        self.lines = source.splitlines()
        self.console = console
        self._interrupt = False

    def say(self, text: str, style: str | None = None) -> None:
        """Plain text: program text and cell names like `out[1]` are not markup."""
        self.console.print(text, markup=False, highlight=False, style=style)

    def interruptible(self, go):
        """go(interrupted), with Ctrl-C setting `interrupted()` instead of raising, so a
        long run stops cleanly between steps."""
        self._interrupt = False
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            return go(lambda: self._interrupt)
        finally:
            signal.signal(signal.SIGINT, previous)

    def _on_sigint(self, *_):
        self._interrupt = True

    def onecmd(self, line: str):
        try:
            return super().onecmd(line)
        except GpusemError as err:
            self.say(f"error: {err.message}")
        return None

    def emptyline(self) -> bool:
        return False  # an empty line repeats nothing and does not stop

    def do_delete(self, arg: str) -> None:
        """delete [N]: remove breakpoint N, or all of them."""
        bps = self.session.breakpoints
        if not arg.strip():
            bps.clear()
            self.say("all breakpoints deleted")
            return
        args = ints(arg, "delete [N]")
        n = args[0] if len(args) == 1 else 0
        if not 1 <= n <= len(bps):
            raise BadInput(f"no breakpoint {n}")
        self.say(f"deleted breakpoint {n}: {bps.pop(n - 1).describe()}")

    def do_quit(self, arg: str) -> bool:
        """quit: leave the debugger."""
        return True

    do_q = do_quit

    def do_EOF(self, arg: str) -> bool:
        self.console.print()
        return True


def ints(arg: str, usage: str) -> list[int]:
    try:
        return [int(x) for x in arg.split()]
    except ValueError:
        raise BadInput(f"usage: {usage}") from None
