"""`gpusem step FILE.lcu`: the lambda-cu session (`debug.py`) behind the one debugger
interface (`interpreter/debugger.py`), and `open_session`, the check and the traced
run that make it.

Each step is one rule application of Sec 6.2, shown with its rule's name (the names
of `rules.py`, CPU-CMD ours), the redex's place and source text, and the lines the
program printed on it. The run's end is shown as `gpusem run` shows it: the value of
main, or the trap or stuck state with its rule, span and element.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import cast

from gpusem.calculus.errors import BadInput
from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.interpreter.debugger import (
    Command,
    Ending,
    Grid,
    Interrupted,
    Line,
    Shown,
    delete_breakpoint,
    ints,
)
from gpusem.interpreter.lambdacu.debug import Breakpoint, Event, Session, record
from gpusem.interpreter.lambdacu.rules import rule_set
from gpusem.typing_rules.lambdacu.wellformed import check_program

SHOW_EACH = 20  # `step N` shows every step up to this many, else the last
DEFAULT_MAX_STEPS = 1_000_000  # as `gpusem run`
ORDER = ("step", "continue", "back", "break", "delete", "where", "list", "rules",
         "help", "quit")


def open_session(source: str, file: str, rules: str = "fixed",
                 max_steps: int = DEFAULT_MAX_STEPS) -> Session:
    """Parse, check (IllTyped: rejected, as `gpusem run`), and trace the run."""
    checked = check_program(parse_program(source, file))
    return record(checked.program, rule_set(rules), max_steps, checked.elems)


class LambdacuDebugger:
    def __init__(self, session: Session, source: str, file: str, rules: str):
        self.session, self.file, self.rules = session, file, rules
        self.lines = source.splitlines()
        self.sink: Callable[[str], object] | None = None

    # ---------------------------------------------------------------- interface

    def commands(self) -> Mapping[str, Command]:
        return {
            "step": Command(self.step, "step [N]: apply N rules (default 1); shows "
                            "each (the last 20 of more) with its rule's name and "
                            "redex.", aliases=("s",)),
            "continue": Command(self.continue_, "continue: run to a breakpoint or the "
                                "end (a value, a trap, a stuck state or the step "
                                "budget).", aliases=("c",)),
            "back": Command(self.back, "back [N]: undo N steps (default 1)."),
            "break": Command(self.break_, "break RULE | LINE: stop after a rule of "
                             "that name (GPU-PRIM, SOAC-FILTER, ...) or after a rule "
                             "whose redex starts on source line LINE.",
                             complete=lambda text: [r for r in self.session.rules
                                                    if r.startswith(text)]),
            "delete": Command(self.delete, "delete [N]: remove breakpoint N, or all of "
                              "them."),
            "where": Command(self.where, "where: the last rule applied and what the "
                             "program printed so far."),
            "list": Command(self.list_, "list [N]: the source around the last redex "
                            "(N lines either side, default 3), its line marked =>."),
            "rules": Command(self.rules_, "rules: how often each rule of Sec 6.2 has "
                             "applied so far."),
            "help": Command(self.help, "help [COMMAND]: the commands, or one "
                            "command's usage."),
        }

    def banner(self) -> Sequence[Shown]:
        return [Line(f"gpusem step: {self.file}: lambda-cu, rules {self.rules}, "
                     f"{len(self.session.events)} rule applications. Type help."),
                *self.where("", _no)]

    def unknown(self, word: str) -> Sequence[Shown]:
        return [Line(f"unknown command: {word} (type help; commands: "
                     f"{', '.join(ORDER[:-2])}, quit)")]

    @property
    def interrupt_note(self) -> str:
        return "^C (quit or EOF leaves)"

    def trace_to(self, sink: Callable[[str], object] | None) -> None:
        self.sink = sink

    def ending(self) -> Ending:
        s = self.session
        state = s.state()
        if state in ("running", "terminated"):
            return Ending(state)
        assert s.error is not None
        return Ending(state, s.error.one_line())

    # ------------------------------------------------------------------ display

    def event(self, e: Event) -> list[Shown]:
        sp = e.span
        shown: list[Shown] = [Line(f"step {e.n}  {e.rule}  {sp}", "bold"),
                              Line(f"  {self.redex(e)}")]
        before = self.session.events[e.n - 2].printed if e.n > 1 else 0
        shown += [Line(f"  printed: {t}", "cyan")
                  for t in self.session.printed[before:e.printed]]
        return shown

    def redex(self, e: Event) -> str:
        """The redex's source text, on one line (cut at 100 characters)."""
        sp = e.span
        if not 0 < sp.line <= len(self.lines):
            return "(no source: the program as a whole)"
        text = "\n".join(self.lines[sp.line - 1: sp.end_line])
        if sp.end_line == sp.line:
            text = text[sp.column - 1: sp.end_column]
        else:
            text = text[sp.column - 1:]
        flat = " ".join(text.split())
        return flat if len(flat) <= 100 else flat[:97] + "..."

    def ran(self, taken: list[Event], show_each: int) -> list[Shown]:
        if self.sink is not None:
            for e in taken:
                self.sink(f"{e.n} {e.rule} {e.span} {self.redex(e)}")
        out: list[Shown] = []
        if len(taken) > show_each:
            hidden = taken[-show_each - 1]
            first = taken[0].n - 1
            before = self.session.events[first - 1].printed if first else 0
            out.append(Line(f"({len(taken) - show_each} earlier steps not shown)"))
            out += [Line(f"  printed: {t}", "cyan")
                    for t in self.session.printed[before:hidden.printed]]
        for e in taken[-show_each:]:
            out += self.event(e)
        return out + self.end_lines()

    def end_lines(self) -> list[Shown]:
        s = self.session
        if not s.finished:
            hit = s.at and any(b.hits(s.events[s.at - 1]) for b in s.breakpoints)
            return [Line(f"breakpoint at step {s.at}", "bold")] if hit else []
        if s.end == "terminated":
            return [Line(f"terminated after {len(s.events)} rule applications: "
                         f"main = {s.value}", "bold")]
        assert s.error is not None
        return [Line(f"{s.end} after {len(s.events)} rule applications: "
                     f"{s.error.one_line()}", "bold red")]

    # ----------------------------------------------------------------- commands

    def step(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        args = ints(arg, "step [N]")
        if len(args) > 1 or (args and args[0] < 1):
            raise BadInput("usage: step [N] (N >= 1)")
        if self.session.finished:
            return [Line("the run has ended"), *self.end_lines()]
        return self.ran(self.session.advance(args[0] if args else 1, False),
                        SHOW_EACH)

    def continue_(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        if arg.strip():
            raise BadInput("usage: continue")
        if self.session.finished:
            return [Line("the run has ended"), *self.end_lines()]
        return self.ran(self.session.advance(None), 1)

    def back(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        args = ints(arg, "back [N]")
        if len(args) > 1 or (args and args[0] < 1):
            raise BadInput("usage: back [N] (N >= 1)")
        undone = self.session.back(args[0] if args else 1)
        return [Line(f"back {undone} step(s): now at step {self.session.at}")]

    def break_(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        word = arg.strip()
        if word.isdigit():
            bp = Breakpoint("line", int(word))
        elif word in self.session.rules:
            bp = Breakpoint("rule", word)
        else:
            raise BadInput("usage: break RULE | LINE (RULE one of "
                           f"{', '.join(self.session.rules)})")
        self.session.breakpoints.append(bp)
        return [Line(f"breakpoint {len(self.session.breakpoints)}: {bp.describe()}")]

    def delete(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        return delete_breakpoint(cast(list[object], self.session.breakpoints), arg,
                                 lambda bp: cast(Breakpoint, bp).describe())

    def where(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        s = self.session
        if not s.at:
            shown: list[Shown] = [Line("step 0: no rule applied yet")]
        else:
            e = s.events[s.at - 1]
            shown = [Line(f"step {s.at}: {e.rule} at {e.span}"),
                     Line(f"  {self.redex(e)}")]
        shown += [Line(f"  printed: {t}") for t in s.printed_now()]
        return shown + (self.end_lines() if s.finished else [])

    def list_(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        args = ints(arg, "list [N]")
        if len(args) > 1 or (args and args[0] < 0):
            raise BadInput("usage: list [N] (N >= 0)")
        n = args[0] if args else 3
        s = self.session
        line = s.events[s.at - 1].span.line if s.at else 1
        if not 0 < line <= len(self.lines):
            line = 1
        return [Line(f"{'=>' if k == line else '  '} {k:4d} | {self.lines[k - 1]}")
                for k in range(max(1, line - n), min(len(self.lines), line + n) + 1)]

    def rules_(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        seen = self.session.seen()
        rows = tuple((r, str(seen[r])) for r in self.session.rules)
        return [Grid(("rule", "applied"), rows)]

    def help(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        commands = self.commands()
        if arg.strip():
            command = commands.get(arg.strip())
            return [Line(command.doc if command else f"*** No help on {arg.strip()}")]
        shown: list[Shown] = [Line("commands (EOF or quit leaves):")]
        for name in ORDER:
            doc = commands[name].doc if name in commands else "quit: leave the debugger."
            usage, _, text = doc.partition(":")
            shown.append(Line(f"  {usage.strip():<18} {' '.join(text.split())}"))
        return shown


def _no() -> bool:
    return False


__all__ = ["LambdacuDebugger", "open_session"]
