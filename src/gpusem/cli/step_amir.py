"""`gpusem step FILE.gpuir -D N=...`: step through the AMIR program a GPU IR procedure
converts to (Exo-GPU Figure 5), one statement at a time (issue 6, the AMIR part).

`cli/step.py` dispatches here on the `.gpuir` suffix. The session is
`interpreter/amir/debug.Session`; this module only presents it, in the style of the
Bundl debugger (the standard library's `cmd`, readline history and completion,
`--commands "step 10; records buf"` for scripts, `--trace FILE` for the full trace).

After every step it shows the AMIR statement (printed form), the GPU IR line it came
from, the task ι, the loop values, the executing threads g_{s#}(σ, ι) and the changes
to the visibility records ρ. A failing check stops the machine and is reported as
`gpusem synccheck` reports it: the check, the variable and index, the timelines, and
both conflicting accesses with their source lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from gpusem.calculus.errors import BadInput
from gpusem.cli.common import open_output
from gpusem.cli.debugger_shell import DebuggerShell, ints
from rich.console import Console

if TYPE_CHECKING:
    from gpusem.calculus.gpuir.timelines import Rules

SHOW_EACH = 20        # `step N` shows every step up to this many, else the last
RECORD_GROUPS = 12    # `records VAR` shows this many cell groups unless `all`


class AmirDebugger(DebuggerShell):
    def __init__(self, session, source: str, file: str, console: Console):
        super().__init__(session, source, file, console)
        # the printed AMIR program and each statement's line, for `list`
        self._program: tuple[list[str], dict[int, int]] | None = None

    # ------------------------------------------------------------------ display

    def show_event(self, e) -> None:
        from gpusem.calculus.amir.printer import print_simple
        from gpusem.interpreter.amir.debug import threads_text

        loops = ", ".join(f"{k}={y}" for k, y in e.loops) or "-"
        who = threads_text(e.threads) if e.threads is not None else "no thread mapping"
        self.say(f"step {e.n}  {type(e.stmt).__name__}  task ι={e.task}  loops: "
                 f"{loops}  threads: {who}", "bold")
        self.say(f"  amir: {print_simple(e.stmt)}")
        self.show_line(e.stmt.origin, "  from ")
        for change in e.changes:
            self.say(f"  ρ: {change}", "cyan")

    def show_line(self, span, lead: str) -> None:
        line = span.line
        if 0 < line <= len(self.lines):
            self.say(f"{lead}{span.file}:{line}:  {self.lines[line - 1].strip()}")
        else:
            self.say(f"{lead}(no GPU IR line: inserted by the conversion)")

    def show_stop(self, stop) -> None:
        s = self.session
        if s.status == "rejected" and s.violation is not None:
            from gpusem.interpreter.amir.synccheck import diagnostic

            self.say(f"stopped: {s.violation.check} failed at step {s.steps}",
                     "bold red")
            self.say(diagnostic(s.violation, self.source, self.file))
        elif stop.reason:
            self.say(stop.reason, "bold red" if s.status == "error" else "bold")

    def _run(self, shown_stop, show_each: int) -> None:
        shown, stop = shown_stop
        extra = [e for e in shown if e.changes or e.violation is not None]
        for e in (extra or shown)[-show_each:]:
            self.show_event(e)
        self.show_stop(stop)

    # ----------------------------------------------------------------- commands

    def do_step(self, arg: str) -> None:
        """step [N]: execute N AMIR statements (default 1); shows each (the last of
        more than 20) with the ρ changes it made (Ctrl-C interrupts)."""
        args = ints(arg, "step [N]")
        if len(args) > 1 or (args and args[0] < 1):
            raise BadInput("usage: step [N] (N >= 1)")
        count = args[0] if args else 1
        shown, stop = self._interruptible(
            lambda stop: self.session.run(count, use_breaks=False, show=SHOW_EACH,
                                          interrupted=stop))
        if stop.reason != "interrupted":
            self._run((shown, stop), SHOW_EACH)

    do_s = do_step

    def do_next(self, arg: str) -> None:
        """next: execute statements until the next one comes from another GPU IR line
        (shows the last 20, with their ρ changes; Ctrl-C interrupts)."""
        if arg.strip():
            raise BadInput("usage: next")
        shown, stop = self._interruptible(
            lambda stop: self.session.next_line(SHOW_EACH, interrupted=stop))
        if stop.reason != "interrupted":
            self._run((shown, stop), SHOW_EACH)

    do_n = do_next

    def do_continue(self, arg: str) -> None:
        """continue: run to the failing check, a breakpoint or the end (Ctrl-C
        interrupts)."""
        shown, stop = self._interruptible(
            lambda stop: self.session.run(None, interrupted=stop))
        if stop.reason != "interrupted":
            self._run((shown, stop), 1)

    do_c = do_continue

    def _interruptible(self, go):
        """go(interrupted) with Ctrl-C turned into a clean stop (and `where`)."""
        shown, stop = self.interruptible(go)
        if stop.reason == "interrupted":
            self.say(f"interrupted at step {self.session.steps}", "bold")
            self.do_where("")
        return shown, stop

    def do_back(self, arg: str) -> None:
        """back [N]: undo N steps (default 1), from snapshots and deterministic
        replay."""
        args = ints(arg, "back [N]")
        undone = self.session.back(args[0] if args else 1)
        self.say(f"back {undone} step(s): now at step {self.session.steps}")

    def do_break(self, arg: str) -> None:
        """break LINE | CHECK | STATEMENT: stop after a statement from GPU IR line LINE,
        after a check of that kind (CheckReads, CheckMutates, CheckBarrier), or after
        any AMIR statement of that kind (Fence, Arrive, Await, RecordRead, ...)."""
        from gpusem.interpreter.amir.debug import CHECKS, STATEMENTS, Breakpoint

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
        self.say(f"breakpoint {len(self.session.breakpoints)}: {bp.describe()}")

    def do_records(self, arg: str) -> None:
        """records [VAR [all]]: the visibility records ρ(VAR), grouped by cells; with
        no VAR, every variable of ρ."""
        parts = arg.split()
        if not parts:
            for line in self.session.variables() or ["ρ is empty"]:
                self.say(line)
            return
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
        for line in lines:
            self.say(line)

    def do_where(self, arg: str) -> None:
        """where: the task ι, the loop values, and the next statement."""
        from gpusem.calculus.amir.printer import print_simple

        s = self.session
        loops = ", ".join(f"{k}={y}" for k, y in s.loops()) or "-"
        self.say(f"step {s.steps}, task ι={s.machine.task}, loops: {loops}")
        if s.status != "running":
            self.say(s.finished())
            return
        nxt = s.pending[0]
        self.say(f"next: {print_simple(nxt)}")
        self.show_line(nxt.origin, "  from ")

    def do_help(self, arg: str) -> None:
        """help [COMMAND]: the commands, or one command's usage."""
        if arg.strip():
            super().do_help(arg)
            return
        self.say("commands (Ctrl-C interrupts continue; EOF or quit leaves):")
        for name in ("step", "next", "continue", "back", "break", "delete", "records",
                     "where", "list", "help", "quit"):
            usage, _, text = (getattr(self, f"do_{name}").__doc__ or "").partition(":")
            self.say(f"  {usage.strip():<22} {' '.join(text.split())}")

    def do_list(self, arg: str) -> None:
        """list [N]: the GPU IR source and the AMIR program around the next statement
        (N lines either side, default 3), the next statement marked =>."""
        from gpusem.interpreter.amir.debug_show import program_lines

        args = ints(arg, "list [N]")
        n = args[0] if args else 3
        s = self.session
        if s.pending is None:
            self.say(s.finished() or "nothing left to run")
            return
        nxt = s.pending[0]
        line = nxt.origin.line
        if 0 < line <= len(self.lines):
            self.say(f"GPU IR {self.file}:")
            for k in range(max(1, line - n), min(len(self.lines), line + n) + 1):
                mark = "=>" if k == line else "  "
                self.say(f"{mark} {k:4d} | {self.lines[k - 1]}")
        if self._program is None:
            self._program = program_lines(s.prog)
        text, index = self._program
        at = index[id(nxt)]
        self.say("AMIR:")
        for k in range(max(0, at - n), min(len(text), at + n + 1)):
            self.say(f"{'=>' if k == at else '  '} {text[k]}")

    def default(self, line: str) -> None:
        self.say(f"unknown command: {line.split()[0]} (type help; commands: step, "
                 f"next, continue, back, break, delete, records, where, list, quit)")

    def complete_break(self, text, *_):
        from gpusem.interpreter.amir.debug import CHECKS, STATEMENTS

        return [c for c in (*CHECKS, *STATEMENTS) if c.startswith(text)]

    def complete_records(self, text, *_):
        return [v for v in self.session.machine.vars if v.startswith(text)]


def open_session(source: str, file: str, defines: dict[str, int], *,
                 proc_name: str | None = None, rules: str = "fixed",
                 max_steps: int = 200_000_000):
    """Front end (Sections 3-4), conversion (Figure 5), and a session on the result:
    the same pipeline as `gpusem synccheck`."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.interpreter.amir.debug import Session
    from gpusem.interpreter.amir.from_gpuir import convert
    from gpusem.typing_rules.gpuir.frontend import check_elements, check_proc

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
    amir = convert(proc, defines, rules=cast("Rules", rules), analysis=analysis)
    return Session(amir, defines, max_steps=max_steps)


def main(file: str, defines: tuple[str, ...], proc_name: str | None, rules: str,
         commands: str | None, trace: str | None, max_steps: int | None = None) -> None:
    """The `.gpuir` branch of `gpusem step`."""
    from gpusem.calculus.source import read_source
    from gpusem.cli.common import parse_defines
    from gpusem.typing_rules.gpuir.frontend import header_defines

    source = read_source(file)
    env = {**header_defines(source, file), **parse_defines(defines)}
    session = open_session(source, file, env, proc_name=proc_name, rules=rules,
                           **({} if max_steps is None else {"max_steps": max_steps}))
    console = Console(highlight=False, soft_wrap=True)
    sink = open_output(trace) if trace else None  # closed below
    if sink:
        session.trace_sink = lambda line: sink.write(line + "\n")
    debugger = AmirDebugger(session, source, file, console)
    try:
        if commands is not None:
            for line in commands.split(";"):
                if line.strip():
                    debugger.say(f"(gpusem) {line.strip()}")
                    if debugger.onecmd(line.strip()):
                        break
        else:
            sizes = ", ".join(f"{k}={v}" for k, v in env.items())
            debugger.say(f"gpusem step: {file}: AMIR of {session.prog.name}({sizes}), "
                         f"rules {rules}. Type help.")
            debugger.do_where("")
            while True:
                try:
                    debugger.cmdloop()
                    break
                except KeyboardInterrupt:   # at the prompt: drop the line, stay
                    debugger.say("^C (quit or EOF leaves)")
    finally:
        if sink:
            sink.close()
