"""The one debugger front end (`gpusem step`, `gpusem replay --step`): a command shell
over any session behind the debugger interface of `gpusem.api` (`Debugger`: Bundl's
small-step machine, AMIR's). It reads a line, runs the named command, shows what the
command returns, and never reads a machine: Ctrl-C during a long command is a clean
stop between steps, quit or end of input leaves, errors are one line.

A scripted session (`--commands "step 10; continue"`) ends with an honest exit code
(issue 24; docs/debugger.md): 0 the machine ran to its end, or the script stopped it
early (a breakpoint, a count of steps); 1 it is stuck, deadlocked, trapped or a check
rejected it; 2 a step or memory budget ran out, or a command of the script was
unknown or malformed. A nonzero exit says why in one line on stderr. An interactive
session exits 0: its person has seen every answer.
"""

from __future__ import annotations

import cmd
import signal
import sys
from collections.abc import Sequence

import click
from gpusem import api
from rich.console import Console
from rich.table import Table


class DebuggerShell(cmd.Cmd):
    prompt = "(gpusem) "
    intro: str | None = ""

    def __init__(self, debugger: api.Debugger, console: Console):
        super().__init__()
        self.debugger, self.console = debugger, console
        self.table = debugger.commands()
        self.names = {alias: name for name, c in self.table.items()
                      for alias in (name, *c.aliases)}
        self.failed: list[str] = []  # the first error of each failed command
        self._interrupt = False

    # --------------------------------------------------------------- showing

    def show(self, shown: Sequence[api.Shown]) -> None:
        for item in shown:
            if isinstance(item, api.Grid):
                table = Table(*item.columns)
                for row in item.rows:
                    table.add_row(*row)
                self.console.print(table)
            else:  # program text and cell names like `out[1]` are not markup
                self.console.print(item.text, markup=item.markup, highlight=False,
                                   style=item.style)

    def say(self, text: str) -> None:
        self.show([api.Line(text)])

    # --------------------------------------------------------------- commands

    def onecmd(self, line: str) -> bool:
        word, arg, line = self.parseline(line)
        if not line:
            return False  # an empty line repeats nothing and does not stop
        if word in ("quit", "q", "EOF"):
            if word == "EOF":
                self.console.print()
            return True
        name = self.names.get(word or "")
        try:
            if name is not None:
                command = self.table[name]
                self.show(self.interruptible(command.run, arg or "")
                          if command.interruptible else command.run(arg or "", _no))
            elif word == "help":
                self.help(arg or "")
            else:
                self.failed.append(f"unknown command: {line.split()[0]}")
                self.show(self.debugger.unknown(line.split()[0]))
        except api.GpusemError as err:
            self.failed.append(err.message)
            self.say(f"error: {err.message}")
        return False

    def interruptible(self, run, arg: str) -> Sequence[api.Shown]:
        """run(arg, interrupted), with Ctrl-C setting `interrupted()` instead of
        raising, so a long run stops cleanly between steps."""
        self._interrupt = False
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            return run(arg, lambda: self._interrupt)
        finally:
            signal.signal(signal.SIGINT, previous)

    def _on_sigint(self, *_) -> None:
        self._interrupt = True

    def help(self, arg: str) -> None:
        """The commands (as the standard library's `cmd` lists them), or one's usage."""
        if arg:
            command = self.table.get(self.names.get(arg, ""))
            self.say(command.doc if command else f"*** No help on {arg}")
            return
        self.stdout.write(f"{self.doc_leader}\n")
        self.print_topics(self.doc_header, sorted([*self.names, "help", "quit", "q"]),
                          15, 80)
        self.print_topics(self.undoc_header, ["EOF"], 15, 80)

    def completenames(self, text: str, *ignored) -> list[str]:
        return sorted(n for n in (*self.names, "help", "quit") if n.startswith(text))

    def completedefault(self, text: str, line: str, *ignored) -> list[str]:
        command = self.table.get(self.names.get(line.split()[0] if line else "", ""))
        if command is None or command.complete is None:
            return []
        return command.complete(text)


def _no() -> bool:
    return False


def run_session(debugger: api.Debugger, commands: str | None,
                opening: tuple[str, ...] = (), trace: str | None = None) -> None:
    """The session: `opening` commands first, shown (how `gpusem replay --step` opens
    the debugger at a bundle's divergence); then the script, or the prompt."""
    console = Console(highlight=False, soft_wrap=True)  # one line per message
    shell = DebuggerShell(debugger, console)
    sink = api.open_output(trace) if trace else None  # closed below
    if sink:
        debugger.trace_to(lambda line: sink.write(line + "\n"))
    scripted = [c.strip() for c in (commands or "").split(";") if c.strip()]
    try:
        if commands is None:
            shell.show(debugger.banner())
        for line in (*opening, *scripted):
            console.print(f"(gpusem) {line}", markup=False)
            if shell.onecmd(line):
                break
        else:
            if commands is None:
                _loop(shell)
    finally:
        if sink:
            sink.close()
    if commands is not None:
        _exit_scripted(shell, debugger)


def _loop(shell: DebuggerShell) -> None:
    """The interactive loop: Ctrl-C at the prompt drops the line (as in a shell)
    instead of leaving the debugger; EOF or `quit` leaves."""
    while True:
        try:
            shell.cmdloop()
            return
        except KeyboardInterrupt:
            shell.say(shell.debugger.interrupt_note)
            shell.intro = None


def _exit_scripted(shell: DebuggerShell, debugger: api.Debugger) -> None:
    """A script's exit code: a command it got wrong is bad input (2), whatever the
    machine did; else how the machine stands (`Debugger.ending`)."""
    if shell.failed:
        click.echo(f"{debugger.file}: --commands: {shell.failed[0]}", err=True)
        sys.exit(2)
    ending = debugger.ending()
    if ending.exit_code:
        click.echo(ending.reason, err=True)
        sys.exit(ending.exit_code)
