"""`gpusem step FILE.gpuir -D N=...`: the AMIR session (`debug.py`) behind the one
debugger interface (`interpreter/debugger.py`), and `open_session`, the pipeline that
makes it (the front end of Sections 3-4, the conversion of Figure 5: the same as
`gpusem synccheck`).

After every step a command shows the AMIR statement (printed form), the GPU IR line
it came from, the task ι, the loop values, the executing threads g_{s#}(σ, ι) and the
changes to the visibility records ρ. A failing check stops the machine and is shown
as `gpusem synccheck` shows it: the check, the variable and index, the timelines, and
both conflicting accesses with their source lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import cast

from gpusem.calculus.amir.printer import print_simple
from gpusem.calculus.errors import BadInput, BudgetExhausted, Trap
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.calculus.gpuir.timelines import Rules
from gpusem.calculus.span import Span
from gpusem.interpreter.amir.debug import CHECKS, STATEMENTS, Breakpoint, Session, Stop
from gpusem.interpreter.amir.debug_show import Event, program_lines, threads_text
from gpusem.interpreter.amir.from_gpuir import convert
from gpusem.interpreter.amir.machine import DEFAULT_MAX_STEPS
from gpusem.interpreter.amir.synccheck import diagnostic
from gpusem.interpreter.debugger import (
    Command,
    Ending,
    Interrupted,
    Line,
    Shown,
    delete_breakpoint,
    ints,
)
from gpusem.typing_rules.gpuir.frontend import check_elements, check_proc

SHOW_EACH = 20        # `step N` shows every step up to this many, else the last
RECORD_GROUPS = 12    # `records VAR` shows this many cell groups unless `all`
ORDER = ("step", "next", "continue", "back", "break", "delete", "records", "where",
         "list", "help", "quit")


def open_session(source: str, file: str, defines: Mapping[str, int], *,
                 proc_name: str | None = None, rules: str = "fixed",
                 max_steps: int = DEFAULT_MAX_STEPS) -> Session:
    """Front end (Sections 3-4), conversion (Figure 5), and a session on the result."""
    procs = parse_module(source, file).procs
    proc = procs[-1]
    if proc_name is not None:
        named = [p for p in procs if p.name == proc_name]
        if not named:
            raise BadInput(f"{file}: no procedure named {proc_name} (have: "
                           f"{', '.join(p.name for p in procs)})")
        proc = named[0]
    missing = [p.name for p in proc.ctrl_params if p.name not in defines]
    if missing:
        raise BadInput(f"{file}: missing definition: {', '.join(missing)} has no "
                       f"value (pass -D {missing[0]}=...)")
    check_elements(proc, defines)
    analysis = check_proc(proc, dict(defines))
    amir = convert(proc, defines, rules=cast(Rules, rules), analysis=analysis)
    return Session(amir, defines, max_steps=max_steps)


class AmirDebugger:
    def __init__(self, session: Session, source: str, file: str,
                 defines: Mapping[str, int], rules: str):
        self.session, self.source, self.file = session, source, file
        self.lines = source.splitlines()
        self.defines, self.rules = dict(defines), rules
        # the printed AMIR program and each statement's line, for `list`
        self._program: tuple[list[str], dict[int, int]] | None = None

    # ---------------------------------------------------------------- interface

    def commands(self) -> Mapping[str, Command]:
        return {
            "step": Command(self.step, "step [N]: execute N AMIR statements (default "
                            "1); shows each (the last of more than 20) with the ρ "
                            "changes it made (Ctrl-C interrupts).", aliases=("s",),
                            interruptible=True),
            "next": Command(self.next, "next: execute statements until the next one "
                            "comes from another GPU IR line (shows the last 20, with "
                            "their ρ changes; Ctrl-C interrupts).", aliases=("n",),
                            interruptible=True),
            "continue": Command(self.continue_, "continue: run to the failing check, a "
                                "breakpoint or the end (Ctrl-C interrupts).",
                                aliases=("c",), interruptible=True),
            "back": Command(self.back, "back [N]: undo N steps (default 1), from "
                            "snapshots and deterministic replay."),
            "break": Command(self.break_, "break LINE | CHECK | STATEMENT: stop after a "
                             "statement from GPU IR line LINE, after a check of that "
                             "kind (CheckReads, CheckMutates, CheckBarrier), or after "
                             "any AMIR statement of that kind (Fence, Arrive, Await, "
                             "RecordRead, ...).",
                             complete=lambda text: [c for c in (*CHECKS, *STATEMENTS)
                                                    if c.startswith(text)]),
            "delete": Command(self.delete, "delete [N]: remove breakpoint N, or all of "
                              "them."),
            "records": Command(self.records, "records [VAR [all]]: the visibility "
                               "records ρ(VAR), grouped by cells; with no VAR, every "
                               "variable of ρ.",
                               complete=lambda text: [v for v in self.session.machine.vars
                                                      if v.startswith(text)]),
            "where": Command(self.where, "where: the task ι, the loop values, and the "
                             "next statement."),
            "list": Command(self.list_, "list [N]: the GPU IR source and the AMIR "
                            "program around the next statement (N lines either side, "
                            "default 3), the next statement marked =>."),
            "help": Command(self.help, "help [COMMAND]: the commands, or one command's "
                            "usage."),
        }

    def banner(self) -> Sequence[Shown]:
        sizes = ", ".join(f"{k}={v}" for k, v in self.defines.items())
        return [Line(f"gpusem step: {self.file}: AMIR of {self.session.prog.name}"
                     f"({sizes}), rules {self.rules}. Type help."), *self.where("", _no)]

    def unknown(self, word: str) -> Sequence[Shown]:
        return [Line(f"unknown command: {word} (type help; commands: step, next, "
                     f"continue, back, break, delete, records, where, list, quit)")]

    @property
    def interrupt_note(self) -> str:
        return "^C (quit or EOF leaves)"

    def trace_to(self, sink: Callable[[str], object] | None) -> None:
        self.session.trace_sink = sink

    def ending(self) -> Ending:
        s = self.session
        if s.status == "rejected" and s.violation is not None:
            v = s.violation
            return Ending("rejected", f"{v.span.file}:{v.span.line}:{v.span.column}: "
                          f"rejected: {v.check} failed at step {s.steps}")
        if s.status == "error" and s.error is not None:
            state = ("budget" if isinstance(s.error, BudgetExhausted)
                     else "trap" if isinstance(s.error, Trap) else "bad-input")
            return Ending(state, s.error.one_line())
        return Ending("running" if s.status == "running" else "accepted")

    # ------------------------------------------------------------------ display

    def event(self, e: Event) -> list[Shown]:
        loops = ", ".join(f"{k}={y}" for k, y in e.loops) or "-"
        who = threads_text(e.threads) if e.threads is not None else "no thread mapping"
        return [Line(f"step {e.n}  {type(e.stmt).__name__}  task ι={e.task}  loops: "
                     f"{loops}  threads: {who}", "bold"),
                Line(f"  amir: {print_simple(e.stmt)}"),
                self.source_line(e.stmt.origin, "  from "),
                *(Line(f"  ρ: {change}", "cyan") for change in e.changes)]

    def source_line(self, span: Span, lead: str) -> Line:
        line = span.line
        if 0 < line <= len(self.lines):
            return Line(f"{lead}{span.file}:{line}:  {self.lines[line - 1].strip()}")
        return Line(f"{lead}(no GPU IR line: inserted by the conversion)")

    def stop(self, stop: Stop) -> list[Shown]:
        s = self.session
        if s.status == "rejected" and s.violation is not None:
            return [Line(f"stopped: {s.violation.check} failed at step {s.steps}",
                         "bold red"),
                    Line(diagnostic(s.violation, self.source, self.file))]
        if stop.reason:
            return [Line(stop.reason, "bold red" if s.status == "error" else "bold")]
        return []

    def ran(self, shown: list[Event], stop: Stop, show_each: int) -> list[Shown]:
        if stop.reason == "interrupted":   # Ctrl-C: a clean stop, and `where`
            return [Line(f"interrupted at step {self.session.steps}", "bold"),
                    *self.where("", _no)]
        extra = [e for e in shown if e.changes or e.violation is not None]
        out: list[Shown] = []
        for e in (extra or shown)[-show_each:]:
            out += self.event(e)
        return out + self.stop(stop)

    # ----------------------------------------------------------------- commands

    def step(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        args = ints(arg, "step [N]")
        if len(args) > 1 or (args and args[0] < 1):
            raise BadInput("usage: step [N] (N >= 1)")
        count = args[0] if args else 1
        return self.ran(*self.session.run(count, use_breaks=False, show=SHOW_EACH,
                                          interrupted=interrupted), SHOW_EACH)

    def next(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        if arg.strip():
            raise BadInput("usage: next")
        return self.ran(*self.session.next_line(SHOW_EACH, interrupted=interrupted),
                        SHOW_EACH)

    def continue_(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        return self.ran(*self.session.run(None, interrupted=interrupted), 1)

    def back(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        args = ints(arg, "back [N]")
        undone = self.session.back(args[0] if args else 1)
        return [Line(f"back {undone} step(s): now at step {self.session.steps}")]

    def break_(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        word = arg.strip()
        if word.isdigit():
            bp = Breakpoint("line", int(word))
        elif word in CHECKS:
            bp = Breakpoint("check", word)
        elif word in STATEMENTS:
            bp = Breakpoint("statement", word)
        else:
            raise BadInput(f"usage: break LINE | {' | '.join(CHECKS)} | an AMIR "
                           f"statement ({', '.join(STATEMENTS)})")
        self.session.breakpoints.append(bp)
        return [Line(f"breakpoint {len(self.session.breakpoints)}: {bp.describe()}")]

    def delete(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        return delete_breakpoint(cast(list[object], self.session.breakpoints), arg,
                                 lambda bp: cast(Breakpoint, bp).describe())

    def records(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        parts = arg.split()
        if not parts:
            return [Line(t) for t in self.session.variables() or ["ρ is empty"]]
        if len(parts) > 2 or (len(parts) == 2 and parts[1] != "all"):
            raise BadInput("usage: records [VAR [all]]")
        lines = self.session.records(parts[0])
        groups = [i for i, t in enumerate(lines) if t.startswith("  ") and
                  not t.startswith("   ")]
        if len(parts) == 1 and len(groups) > RECORD_GROUPS:
            cut = groups[RECORD_GROUPS]
            rest = len(groups) - RECORD_GROUPS
            more = f"  ... {rest} more cell groups (records {parts[0]} all)"
            lines = [*lines[:cut], more]
        return [Line(t) for t in lines]

    def where(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        s = self.session
        loops = ", ".join(f"{k}={y}" for k, y in s.loops()) or "-"
        shown: list[Shown] = [Line(f"step {s.steps}, task ι={s.machine.task}, "
                                   f"loops: {loops}")]
        if s.status != "running" or s.pending is None:
            return [*shown, Line(s.finished())]
        nxt = s.pending[0]
        return [*shown, Line(f"next: {print_simple(nxt)}"),
                self.source_line(nxt.origin, "  from ")]

    def help(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        commands = self.commands()
        if arg.strip():
            command = commands.get(arg.strip())
            return [Line(command.doc if command else f"*** No help on {arg.strip()}")]
        shown: list[Shown] = [Line("commands (Ctrl-C interrupts continue; EOF or quit "
                                   "leaves):")]
        for name in ORDER:
            doc = commands[name].doc if name in commands else "quit: leave the debugger."
            usage, _, text = doc.partition(":")
            shown.append(Line(f"  {usage.strip():<22} {' '.join(text.split())}"))
        return shown

    def list_(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        args = ints(arg, "list [N]")
        n = args[0] if args else 3
        s = self.session
        if s.pending is None:
            return [Line(s.finished() or "nothing left to run")]
        nxt = s.pending[0]
        line = nxt.origin.line
        shown: list[Shown] = []
        if 0 < line <= len(self.lines):
            shown.append(Line(f"GPU IR {self.file}:"))
            for k in range(max(1, line - n), min(len(self.lines), line + n) + 1):
                mark = "=>" if k == line else "  "
                shown.append(Line(f"{mark} {k:4d} | {self.lines[k - 1]}"))
        if self._program is None:
            self._program = program_lines(s.prog)
        text, index = self._program
        at = index[id(nxt)]
        shown.append(Line("AMIR:"))
        shown += [Line(f"{'=>' if k == at else '  '} {text[k]}")
                  for k in range(max(0, at - n), min(len(text), at + n + 1))]
        return shown


def _no() -> bool:
    return False


__all__ = ["AmirDebugger", "open_session"]
