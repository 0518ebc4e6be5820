"""`gpusem step FILE`: the step-through semantic debugger (issue 6).

An interactive session (the standard library's `cmd`, with readline history and
completion) over `interpreter/bundl/debug.Session`. After every step it shows the rule
applied with its congruence chain (`S-Destruct-Grid > S-Group > S-Arr-Assn`), the
thread (t, b, p) and its perspective, and the redex before and after, marked in the
program text. `--commands "step 10; threads; mem global"` runs a script instead, and
`--trace FILE` writes the full rule trace.
"""

from __future__ import annotations

import json

import click
from gpusem.calculus.errors import BadInput
from gpusem.calculus.source import language_of, read_source
from gpusem.cli.common import open_output, write_output
from gpusem.cli.debugger_shell import DebuggerShell, ints
from rich.console import Console
from rich.markup import escape
from rich.table import Table


class Debugger(DebuggerShell):
    # ------------------------------------------------------------------ display

    def show_event(self, n: int, e) -> None:
        from gpusem.calculus.bundl.printer import print_expr, print_stmt

        t, b, p = e.thread
        self.console.print(f"[bold]step {n}[/] [cyan]{' > '.join(e.rules)}[/]  "
                           f"thread (t={t}, b={b}, p={p}) at [magenta]{e.persp}[/]")
        span = e.span
        if span is not None and 0 < span.line <= len(self.lines):
            text = self.lines[span.line - 1]
            end = span.end_column if span.end_line == span.line else len(text) + 1
            self.console.print(f"  {span.line:4d} | {text}", markup=False, highlight=False)
            self.console.print("       | " + " " * (span.column - 1)
                               + "^" * max(1, end - span.column), style="yellow")

        def show(node) -> str:
            try:
                return (print_expr(node) if not hasattr(node, "__dataclass_fields__")
                        or "Lit" in type(node).__name__ else print_stmt(node))
            except Exception:  # noqa: BLE001 - runtime forms the printer lacks
                return type(node).__name__
        after = show(e.after).strip().splitlines()
        self.console.print(f"  after: {after[0] if after else 'skip'}"
                           + (" ..." if len(after) > 1 else ""), markup=False)

    def show_stop(self, stop) -> None:
        if stop.reason:
            self.console.print(f"[bold red]{escape(stop.reason)}[/]")
        if self.session.status == "stuck" and self.session.error is not None:
            err = self.session.error
            self.console.print(f"  rule {getattr(err, 'rule', '?')}: "
                               f"{getattr(err, 'message', err)}", markup=False)

    def _run(self, events_stop, show_each: int = 20) -> None:
        events, stop = events_stop  # the last events of the run (a long one keeps few)
        taken = max(stop.taken, len(events))
        shown = events if taken <= show_each else events[-1:]
        if taken > show_each:
            self.console.print(f"({taken} steps; the last:)")
        for k, e in enumerate(shown):
            self.show_event(len(self.session.history) - len(shown) + k + 1, e)
        self.show_stop(stop)

    # ----------------------------------------------------------------- commands

    def do_step(self, arg: str) -> None:
        """step [N] [thread]: take N steps (default 1), of one thread if given."""
        args = ints(arg, "step [N] [thread]")
        count = args[0] if args else 1
        thread = args[1] if len(args) > 1 else None
        self._run(self.session.run(count, thread, use_breaks=False))

    def do_next(self, arg: str) -> None:
        """next: step the current thread until its redex is on another line."""
        self._run(self.session.next())

    def do_continue(self, arg: str) -> None:
        """continue: run until a breakpoint, the end, a stuck state or a deadlock
        (Ctrl-C interrupts)."""
        self._run(self.interruptible(
            lambda interrupted: self.session.run(None, interrupted=interrupted)), 1)

    do_c = do_continue

    def do_break(self, arg: str) -> None:
        """break RULE | LINE | thread T | write ARRAY[i]: stop when it happens."""
        bp = _parse_break(arg.strip())
        if bp.kind == "write":
            self.session.global_cell(*bp.value)  # validates the array and index
        self.session.breakpoints.append(bp)
        self.say(f"breakpoint {len(self.session.breakpoints)}: {bp.describe()}")

    def do_back(self, arg: str) -> None:
        """back [N]: undo N steps (default 1), from the recorded history."""
        args = ints(arg, "back [N]")
        undone = self.session.back(args[0] if args else 1)
        self.console.print(f"back {undone} step(s): now at step {len(self.session.history)}")

    def do_threads(self, arg: str) -> None:
        """threads: every thread's state (running, spinning, stuck, done)."""
        from gpusem.interpreter.bundl.small_step import blocked

        m = self.session.machine
        table = Table("index", "t", "b", "p", "perspective", "state", "at line")
        for i, th in enumerate(m.threads()):
            if th.terminated:
                state = "done"
            elif self.session.status == "stuck" and i == self.session.current:
                state = "[red]stuck[/]"
            else:
                state = "spinning" if blocked(m.cfg, th) else "running"
            line = getattr(getattr(th.focus, "span", None), "line", "")
            table.add_row(str(i), str(th.t), str(th.b), str(th.p), str(th.persp), state,
                          str(line or ""))
        self.console.print(table)

    def do_mem(self, arg: str) -> None:
        """mem [global | local T | shared B]: the memories Σ, η(T) or σ(B)."""
        parts = arg.split()
        kind = parts[0] if parts else "global"
        m = self.session.machine
        if kind == "global":
            for name, values in m.globals().items():
                self.console.print(f"{name} = {values}", markup=False)
            return
        if kind not in ("local", "shared") or len(parts) != 2:
            raise BadInput("usage: mem [global | local T | shared B]")
        (which,) = ints(parts[1], "mem local T | shared B")
        if kind == "local":
            threads = m.threads()
            if not 0 <= which < len(threads):
                raise BadInput(f"no thread {which}")
            for name, binding in threads[which].env.items():
                self.console.print(f"{name} @ {binding.persp} = "
                                   f"{_value(m, binding.value)}", markup=False)
            return
        shown = False
        for reg in m.cfg.regions:
            if reg.space.value == "Shared" and reg.owner == which:
                self.console.print(f"{reg.name} = {list(reg.cells)}", markup=False)
                shown = True
        if not shown:
            self.console.print(f"block {which} has no shared allocation yet")

    def do_sync(self, arg: str) -> None:
        """sync: the synchronisation map Ψ and the deferred computations Φ."""
        cfg = self.session.machine.cfg
        self.console.print("Ψ (counters):" if cfg.psi else "Ψ: empty")
        for key, value in sorted(cfg.psi.items(), key=repr):
            self.console.print(f"  {key} -> {value}", markup=False)
        phi = {k: v for th in self.session.machine.threads() for k, v in th.phi.items()}
        phi |= cfg.phi
        self.console.print("Φ (deferred):" if phi else "Φ: empty")
        for key, stmts in phi.items():
            self.console.print(f"  {key}: {len(stmts)} deferred", markup=False)

    def do_schedule(self, arg: str) -> None:
        """schedule rr | random:SEED | replay FILE: how the next thread is chosen."""
        from gpusem.interpreter.bundl.debug import Scheduler

        parts = arg.split()
        if not parts:
            raise BadInput("usage: schedule rr | random:SEED | replay FILE")
        replay = None
        if parts[0] == "replay":
            if len(parts) != 2:
                raise BadInput("usage: schedule replay FILE")
            replay = _read_schedule(parts[1])
        self.session.scheduler = Scheduler.parse(parts[0], replay)
        self.say(f"schedule: {arg.strip()}")

    def do_save(self, arg: str) -> None:
        """save FILE: write the schedule so far (thread indices), for `schedule replay`."""
        if not arg.strip():
            raise BadInput("usage: save FILE")
        write_output(arg.strip(), json.dumps({"schedule": self.session.history}) + "\n")
        self.say(f"saved {len(self.session.history)} steps to {arg.strip()}")

    def default(self, line: str) -> None:
        self.say(f"unknown command: {line.split()[0]} (type help)")

    def complete_break(self, text, *_):
        from gpusem.interpreter.bundl.debug_rules import RULES

        return [r for r in (*RULES, "thread", "write") if r.startswith(text)]

    def complete_mem(self, text, *_):
        return [w for w in ("global", "local", "shared") if w.startswith(text)]

    def complete_schedule(self, text, *_):
        return [w for w in ("rr", "random:", "replay") if w.startswith(text)]


def _loop(debugger: Debugger) -> None:
    """The interactive loop: Ctrl-C at the prompt drops the line (as in a shell)
    instead of leaving the debugger; EOF or `quit` leaves."""
    while True:
        try:
            debugger.cmdloop()
            return
        except KeyboardInterrupt:
            debugger.console.print("^C")
            debugger.intro = None


def _parse_break(arg: str):
    from gpusem.interpreter.bundl.debug import Breakpoint

    parts = arg.split()
    if not parts:
        raise BadInput("usage: break RULE | LINE | thread T | write ARRAY[i]")
    if parts[0] == "thread" and len(parts) == 2 and parts[1].isdigit():
        return Breakpoint("thread", int(parts[1]))
    if parts[0] == "write" and len(parts) == 2 and parts[1].endswith("]") and "[" in parts[1]:
        name, _, index = parts[1][:-1].partition("[")
        if index.isdigit():
            return Breakpoint("write", (name, int(index)))
    if len(parts) == 1 and parts[0].isdigit():
        return Breakpoint("line", int(parts[0]))
    if len(parts) == 1 and parts[0].startswith(("S-", "E-")):
        return Breakpoint("rule", parts[0])
    raise BadInput("usage: break RULE | LINE | thread T | write ARRAY[i]")


def _value(machine, value) -> str:
    from gpusem.interpreter.bundl.values import Ptr

    if isinstance(value, Ptr):
        reg = machine.cfg.regions[value.region]
        return f"<{reg.name}+{value.off}, {value.length}>"
    return repr(value)


def _read_schedule(path: str) -> list[int]:
    try:
        data = json.loads(read_source(path))
        return [int(i) for i in data["schedule"]]
    except (ValueError, KeyError, TypeError, RecursionError) as err:
        raise BadInput(f"cannot read schedule {path}: {err}") from None


@click.command("step")
@click.argument("file", type=click.Path())
@click.option("--blocks", type=int, help="Override the program's B.")
@click.option("--threads", type=int, help="Override the program's T.")
@click.option("--rules", type=click.Choice(["fixed", "paper"]), default="fixed",
              show_default=True)
@click.option("--schedule", default="rr", show_default=True,
              help="rr | random:SEED")
@click.option("--commands", help='Run these ";"-separated commands, then exit.')
@click.option("--trace", type=click.Path(), help="Write the full rule trace here.")
@click.option("-D", "defines", multiple=True, metavar="NAME=INT",
              help=".gpuir: control values (over the file's `# defines:` header).")
@click.option("--proc", "proc_name", default=None, metavar="NAME",
              help=".gpuir: the procedure to step (default: the file's last one).")
@click.option("--max-steps", type=int, default=None,
              help="Step budget of the session (default: as `run`, 1000000 for a "
              ".bundl; as `synccheck`, 200000000 AMIR statements for a .gpuir).")
def command(file: str, blocks, threads, rules: str, schedule: str, commands, trace,
            defines, proc_name, max_steps):
    """Step through FILE's meaning: a .bundl file under the small-step semantics, rule
    by rule; a .gpuir file as its AMIR program (-D N=...), statement by statement."""
    if max_steps is not None and max_steps <= 0:
        raise BadInput(f"--max-steps out of range: {max_steps}")
    if language_of(file) == "gpuir":  # the AMIR debugger (cli/step_amir.py)
        from gpusem.cli.step_amir import main as step_amir

        step_amir(file, defines, proc_name, rules, commands, trace, max_steps)
        return
    if language_of(file) != "bundl":
        raise BadInput(f"step: only .bundl and .gpuir files: {file}")
    debug_bundl(read_source(file), file, commands=commands, trace=trace, rules=rules,
                blocks=blocks, threads=threads, schedule=schedule, max_steps=max_steps)


def debug_bundl(source: str, file: str, *, commands: str | None = None,
                trace: str | None = None, rules: str = "fixed", blocks=None,
                threads=None, schedule: str = "rr", opening: tuple[str, ...] = (),
                max_steps: int | None = None):
    """A debugging session over `source`; `opening` commands run first and are shown
    (how `gpusem replay --step` opens the debugger at a bundle's divergence)."""
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.interpreter.bundl.debug import Session

    session = Session(parse_program(source, file), rules, blocks, threads, schedule,
                      **({} if max_steps is None else {"max_steps": max_steps}))
    console = Console(highlight=False, soft_wrap=True)  # one line per message
    sink = open_output(trace) if trace else None  # closed below
    if sink:
        session.trace_sink = lambda line: sink.write(line + "\n")
    debugger = Debugger(session, source, file, console)
    scripted = [c.strip() for c in (commands or "").split(";") if c.strip()]
    try:
        if commands is None:
            m = session.machine
            console.print(f"gpusem step: {escape(file)}: {len(m.threads())} threads "
                          f"(B={m.shape.blocks}, T={m.shape.threads}), rules "
                          f"{rules}, schedule {schedule}. Type help.")
        for line in (*opening, *scripted):
            console.print(f"(gpusem) {line}", markup=False)
            if debugger.onecmd(line):
                return
        if commands is None:
            _loop(debugger)
    finally:
        if sink:
            sink.close()
