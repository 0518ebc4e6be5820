"""Issue 25 item 4: the one debugger front end drives any session behind the
interface of `gpusem.api` (`Debugger`): here a counter machine of twelve lines that
knows nothing of Bundl or AMIR. The shell shows what commands return, counts a
script's bad commands, and exits with the session's ending."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence

import pytest
from gpusem import api
from gpusem.cli.debugger_shell import DebuggerShell, run_session
from rich.console import Console


class Counter:
    """Counts to `limit`; at `stuck_at` no rule applies."""

    file = "counter.toy"
    interrupt_note = "^C"

    def __init__(self, limit: int = 3, stuck_at: int | None = None) -> None:
        self.n, self.limit, self.stuck_at = 0, limit, stuck_at
        self.sink: Callable[[str], object] | None = None

    def commands(self) -> Mapping[str, api.Command]:
        return {"step": api.Command(self.step, "step: count one", aliases=("s",)),
                "show": api.Command(lambda arg, stop: [api.Grid(("n",),
                                                                ((str(self.n),),))],
                                    "show: the counter")}

    def step(self, arg: str, interrupted) -> Sequence[api.Shown]:
        if arg:
            raise api.BadInput("usage: step")
        if self.n != self.stuck_at and self.n < self.limit:
            self.n += 1
            if self.sink:
                self.sink(f"n={self.n}")
        return [api.Line(f"n = {self.n}")]

    def banner(self) -> Sequence[api.Shown]:
        return [api.Line("counter")]

    def unknown(self, word: str) -> Sequence[api.Shown]:
        return [api.Line(f"unknown command: {word}")]

    def ending(self) -> api.Ending:
        if self.n == self.stuck_at:
            return api.Ending("stuck", f"{self.file}:1:1: stuck at {self.n}")
        return api.Ending("terminated" if self.n == self.limit else "running")

    def trace_to(self, sink: Callable[[str], object] | None) -> None:
        self.sink = sink


def scripted(debugger: Counter, commands: str, capsys, trace: str | None = None):
    code = 0
    try:
        run_session(debugger, commands, trace=trace)
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_script_runs_every_command_and_shows_its_answers(capsys, tmp_path):
    trace = tmp_path / "trace.txt"
    code, out, err = scripted(Counter(), "s; step; show; step", capsys, str(trace))
    assert (code, err) == (0, "")
    assert "(gpusem) s\nn = 1\n(gpusem) step\nn = 2\n" in out and "│ 2 │" in out
    assert trace.read_text() == "n=1\nn=2\nn=3\n"


@pytest.mark.parametrize("commands,limit,stuck,code,err", [
    ("step", 3, None, 0, ""),                     # stopped early: nothing found
    ("step; step; step", 2, 1, 1, "counter.toy:1:1: stuck at 1\n"),
    ("step; frobnicate; step; step", 3, None, 2,
     "counter.toy: --commands: unknown command: frobnicate\n"),
    ("step x; step; step; step", 3, None, 2, "counter.toy: --commands: usage: step\n"),
])
def test_a_script_exits_with_the_sessions_ending(capsys, commands, limit, stuck, code,
                                                 err):
    got = scripted(Counter(limit, stuck), commands, capsys)
    assert (got[0], got[2]) == (code, err)


def test_quit_ends_the_script_and_help_lists_the_commands(capsys):
    code, out, _ = scripted(Counter(), "help; quit; step", capsys)
    assert code == 0 and "show" in out and "n = 1" not in out
    shell = DebuggerShell(Counter(), Console(file=io.StringIO()))
    assert shell.completenames("s") == ["s", "show", "step"]
