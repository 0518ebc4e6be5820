"""`gpusem step FILE.bundl`: the Bundl session (`debug.py`) behind the one debugger
interface (`interpreter/debugger.py`). Each command drives the session and says what
to show: after every step the rule applied with its congruence chain
(`S-Destruct-Grid > S-Group > S-Arr-Assn`), the thread (t, b, p) and its perspective,
and the redex before and after, marked in the program text (STYLE 14: the session
steps, this only presents its trace).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import cast

from gpusem.calculus.bundl.ast import Expr, Stmt
from gpusem.calculus.bundl.printer import print_expr, print_stmt
from gpusem.calculus.errors import BadInput, GpusemError, Trap
from gpusem.calculus.source import read_source
from gpusem.interpreter.bundl.debug import Breakpoint, Scheduler, Session, Stop
from gpusem.interpreter.bundl.debug_rules import EXPR_RULES, RULES
from gpusem.interpreter.bundl.machine import StepEvent
from gpusem.interpreter.bundl.small_step import blocked
from gpusem.interpreter.bundl.values import Ptr, Value
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

SHOW_EACH = 20  # `step N` shows every step up to this many, else the last


class BundlDebugger:
    def __init__(self, session: Session, source: str, file: str, schedule: str,
                 write: Callable[[str, str], None]):
        self.session, self.file, self.schedule_name = session, file, schedule
        self.lines = source.splitlines()
        self.write = write  # the one writer of user-named files (`save`)

    # ---------------------------------------------------------------- interface

    def commands(self) -> Mapping[str, Command]:
        return {
            "step": Command(self.step, "step [N] [thread]: take N steps (default 1), "
                            "of one thread if given."),
            "next": Command(self.next, "next: step the current thread until its redex "
                            "is on another line."),
            "continue": Command(self.continue_, "continue: run until a breakpoint, the "
                                "end, a stuck state or a deadlock (Ctrl-C interrupts).",
                                aliases=("c",), interruptible=True),
            "break": Command(self.break_, "break RULE | LINE | thread T | write "
                             "ARRAY[i]: stop when it happens.",
                             complete=lambda text: [r for r in (*RULES, "thread", "write")
                                                    if r.startswith(text)]),
            "back": Command(self.back, "back [N]: undo N steps (default 1), from the "
                            "recorded history."),
            "threads": Command(self.threads, "threads: every thread's state (running, "
                               "spinning, stuck, done)."),
            "mem": Command(self.mem, "mem [global | local T | shared B]: the memories "
                           "Σ, η(T) or σ(B).",
                           complete=lambda text: [w for w in ("global", "local", "shared")
                                                  if w.startswith(text)]),
            "sync": Command(self.sync, "sync: the synchronisation map Ψ and the deferred "
                            "computations Φ."),
            "schedule": Command(self.schedule, "schedule rr | random:SEED | replay FILE: "
                                "how the next thread is chosen.",
                                complete=lambda text: [w for w in ("rr", "random:",
                                                                   "replay")
                                                       if w.startswith(text)]),
            "save": Command(self.save, "save FILE: write the schedule so far (thread "
                            "indices), for `schedule replay`."),
            "delete": Command(self.delete, "delete [N]: remove breakpoint N, or all of "
                              "them."),
            "where": Command(self.where, "where: the step, the current thread (t, b, "
                             "p), its perspective and the line of its redex."),
            "list": Command(self.list_, "list [N]: the source around the current "
                            "thread's redex (N lines either side, default 3), its line "
                            "marked =>."),
            "print": Command(self.print_, "print NAME | NAME[i]: a variable of the "
                             "current thread (η), else a global array (Σ), or one "
                             "cell of it.", aliases=("p",)),
        }

    def banner(self) -> Sequence[Shown]:
        s, m = self.session, self.session.machine
        return [Line(f"gpusem step: {self.file}: {len(m.threads())} threads "
                     f"(B={m.shape.blocks}, T={m.shape.threads}), rules {s.rules}, "
                     f"schedule {self.schedule_name}. Type help.")]

    def unknown(self, word: str) -> Sequence[Shown]:
        return [Line(f"unknown command: {word} (type help)")]

    @property
    def interrupt_note(self) -> str:
        return "^C"

    def trace_to(self, sink: Callable[[str], object] | None) -> None:
        self.session.trace_sink = sink

    def ending(self) -> Ending:
        s = self.session
        error = s.error
        match s.status:
            case "stuck" if isinstance(error, Trap):
                return Ending("trap", error.one_line())
            case "stuck" if isinstance(error, GpusemError):
                return Ending("stuck", error.one_line())
            case "stuck":
                return Ending("stuck", f"{self.file}: stuck: {error}")
            case "deadlock":
                return Ending("deadlock", f"{self.file}: deadlock: every live thread "
                              "spins in wait")
            case "budget" if isinstance(error, GpusemError):
                return Ending("budget", error.one_line())
        return Ending(s.status)

    # ------------------------------------------------------------------ display

    def event(self, n: int, e: StepEvent) -> list[Shown]:
        t, b, p = e.thread
        shown: list[Shown] = [Line(f"[bold]step {n}[/] [cyan]{' > '.join(e.rules)}[/]"
                                   f"  thread (t={t}, b={b}, p={p}) at "
                                   f"[magenta]{e.persp}[/]", markup=True)]
        span = e.span
        if span is not None and 0 < span.line <= len(self.lines):
            text = self.lines[span.line - 1]
            end = span.end_column if span.end_line == span.line else len(text) + 1
            shown.append(Line(f"  {span.line:4d} | {text}"))
            shown.append(Line("       | " + " " * (span.column - 1)
                              + "^" * max(1, end - span.column), style="yellow"))
        after = _show(e.after).strip().splitlines()
        shown.append(Line(f"  after: {after[0] if after else 'skip'}"
                          + (" ..." if len(after) > 1 else "")))
        return shown

    def stop(self, stop: Stop) -> list[Shown]:
        shown: list[Shown] = []
        if stop.reason:
            shown.append(Line(stop.reason, style="bold red"))
        if self.session.status == "stuck" and self.session.error is not None:
            err = self.session.error
            shown.append(Line(f"  rule {getattr(err, 'rule', '?')}: "
                              f"{getattr(err, 'message', err)}"))
        return shown

    def ran(self, events: list[StepEvent], stop: Stop, show_each: int = SHOW_EACH
            ) -> list[Shown]:
        """The last events of a run (a long one keeps few) and why it stopped."""
        taken = max(stop.taken, len(events))
        last = events if taken <= show_each else events[-1:]
        shown: list[Shown] = []
        if taken > show_each:
            shown.append(Line(f"({taken} steps; the last:)"))
        for k, e in enumerate(last):
            shown += self.event(len(self.session.history) - len(last) + k + 1, e)
        return shown + self.stop(stop)

    # ----------------------------------------------------------------- commands

    def step(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        args = ints(arg, "step [N] [thread]")
        count = args[0] if args else 1
        thread = args[1] if len(args) > 1 else None
        return self.ran(*self.session.run(count, thread, use_breaks=False))

    def next(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        return self.ran(*self.session.next())

    def continue_(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        return self.ran(*self.session.run(None, interrupted=interrupted), show_each=1)

    def break_(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        bp = parse_break(arg.strip())
        if bp.kind == "write":
            self.session.global_cell(*cast(tuple[str, int], bp.value))  # validates
        elif bp.kind == "line" and bp.value not in self.code_lines():
            raise BadInput(f"no statement on line {bp.value} of {self.file} (lines "
                           f"with one: {_ranges(sorted(self.code_lines()))})")
        elif bp.kind == "thread" and not 0 <= cast(int, bp.value) < len(
                self.session.machine.threads()):
            raise BadInput(f"no thread {bp.value} (threads 0.."
                           f"{len(self.session.machine.threads()) - 1})")
        self.session.breakpoints.append(bp)
        return [Line(f"breakpoint {len(self.session.breakpoints)}: {bp.describe()}")]

    def back(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        args = ints(arg, "back [N]")
        undone = self.session.back(args[0] if args else 1)
        return [Line(f"back {undone} step(s): now at step {len(self.session.history)}")]

    def threads(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        s = self.session
        m = s.machine
        rows: list[tuple[str, ...]] = []
        for i, th in enumerate(m.threads()):
            if th.terminated:
                state = "done"
            elif s.status == "stuck" and i == s.current:
                state = "[red]stuck[/]"
            else:
                state = "spinning" if blocked(m.cfg, th) else "running"
            line = getattr(getattr(th.focus, "span", None), "line", "")
            rows.append((str(i), str(th.t), str(th.b), str(th.p), str(th.persp), state,
                         str(line or "")))
        return [Grid(("index", "t", "b", "p", "perspective", "state", "at line"),
                     tuple(rows))]

    def mem(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        parts = arg.split()
        kind = parts[0] if parts else "global"
        m = self.session.machine
        if kind == "global":
            return [Line(f"{name} = {values}") for name, values in m.globals().items()]
        if kind not in ("local", "shared") or len(parts) != 2:
            raise BadInput("usage: mem [global | local T | shared B]")
        (which,) = ints(parts[1], "mem local T | shared B")
        if kind == "local":
            threads = m.threads()
            if not 0 <= which < len(threads):
                raise BadInput(f"no thread {which}")
            return [Line(f"{name} @ {binding.persp} = {self.value(binding.value)}")
                    for name, binding in threads[which].env.items()]
        shown: list[Shown] = [Line(f"{reg.name} = {list(reg.cells)}")
                              for reg in m.cfg.regions
                              if reg.space.value == "Shared" and reg.owner == which]
        return shown or [Line(f"block {which} has no shared allocation yet")]

    def sync(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        m = self.session.machine
        cfg = m.cfg
        shown: list[Shown] = [Line("Ψ (counters):" if cfg.psi else "Ψ: empty")]
        shown += [Line(f"  {key} -> {value}")
                  for key, value in sorted(cfg.psi.items(), key=repr)]
        phi = {k: v for th in m.threads() for k, v in th.phi.items()}
        phi |= cfg.phi
        shown.append(Line("Φ (deferred):" if phi else "Φ: empty"))
        shown += [Line(f"  {key}: {len(stmts)} deferred") for key, stmts in phi.items()]
        return shown

    def schedule(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        parts = arg.split()
        if not parts:
            raise BadInput("usage: schedule rr | random:SEED | replay FILE")
        replay = None
        if parts[0] == "replay":
            if len(parts) != 2:
                raise BadInput("usage: schedule replay FILE")
            replay = read_schedule(parts[1])
        self.session.scheduler = Scheduler.parse(parts[0], replay)
        return [Line(f"schedule: {arg.strip()}")]

    def save(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        if not arg.strip():
            raise BadInput("usage: save FILE")
        self.write(arg.strip(), json.dumps({"schedule": self.session.history}) + "\n")
        return [Line(f"saved {len(self.session.history)} steps to {arg.strip()}")]

    def delete(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        return delete_breakpoint(cast(list[object], self.session.breakpoints), arg,
                                 lambda bp: cast(Breakpoint, bp).describe())

    def code_lines(self) -> set[int]:
        """The lines a step can stop on: those of main's and the functions'
        statements and expressions."""
        prog = self.session.prog
        return {line for root in (prog.main, *(f.body for f in prog.fns))
                for line in _lines_of(root)}

    def _focus(self) -> tuple[int | None, int]:
        """The current thread (None before the first step) and the line of the
        redex it last stepped (0 when there is none)."""
        s = self.session
        threads = s.machine.threads()
        i = s.current
        if i is None or not 0 <= i < len(threads):
            return None, 0
        # the redex of its last step (the thread's focus is the whole term around it)
        last = s.last_event if s.last_event and s.last_event.index == i else None
        span = last.span if last is not None else getattr(threads[i].focus, "span",
                                                           None)
        return i, getattr(span, "line", 0) or 0

    def where(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        s = self.session
        i, line = self._focus()
        head = f"step {len(s.history)}, {s.status}"
        if i is None:
            return [Line(f"{head}: no thread has stepped yet (the schedule "
                         f"{self.schedule_name} picks the first)")]
        th = s.machine.threads()[i]
        shown: list[Shown] = [Line(f"{head}: thread {i} (t={th.t}, b={th.b}, p={th.p}) "
                                   f"at {th.persp}" + (" (done)" if th.terminated
                                                       else ""))]
        if 0 < line <= len(self.lines):
            shown.append(Line(f"  {line:4d} | {self.lines[line - 1]}"))
        return shown

    def list_(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        args = ints(arg, "list [N]")
        n = args[0] if args else 3
        _, line = self._focus()
        if not line:  # before the first step: the start of main
            line = min(_lines_of(self.session.prog.main), default=1)
        lo, hi = max(1, line - n), min(len(self.lines), line + n)
        return [Line(f"{'=>' if k == line else '  '} {k:4d} | {self.lines[k - 1]}")
                for k in range(lo, hi + 1)]

    def print_(self, arg: str, interrupted: Interrupted) -> list[Shown]:
        text = arg.strip()
        name, bracket, rest = text.partition("[")
        name = name.strip()
        if not name or (bracket and not rest.endswith("]")):
            raise BadInput("usage: print NAME | NAME[i]")
        index = None
        if bracket:
            (index,) = ints(rest[:-1], "print NAME[i]") or (None,)
            if index is None:
                raise BadInput("usage: print NAME | NAME[i]")
        i, _ = self._focus()
        m = self.session.machine
        if i is not None and name in m.threads()[i].env:
            binding = m.threads()[i].env[name]
            value = binding.value
            if index is None:
                return [Line(f"{name} @ {binding.persp} = {self.value(value)}")]
            if not isinstance(value, Ptr):
                raise BadInput(f"{name} is not an array: {self.value(value)}")
            if not 0 <= index < value.length:
                raise BadInput(f"index out of range: {name}[{index}] (length "
                               f"{value.length})")
            reg = m.cfg.regions[value.region]
            return [Line(f"{name}[{index}] = {reg.cells[value.off + index]!r}")]
        if name in m.globals():
            if index is None:
                return [Line(f"{name} = {m.globals()[name]}")]
            return [Line(f"{name}[{index}] = "
                         f"{self.session.global_cell(name, index)!r}")]
        where = f"thread {i}" if i is not None else "any thread (none has stepped)"
        raise BadInput(f"no variable {name} in {where} nor a global array")

    def value(self, value: Value) -> str:
        if isinstance(value, Ptr):
            reg = self.session.machine.cfg.regions[value.region]
            return f"<{reg.name}+{value.off}, {value.length}>"
        return repr(value)


def _show(node: object) -> str:
    try:
        if not hasattr(node, "__dataclass_fields__") or "Lit" in type(node).__name__:
            return print_expr(cast(Expr, node))
        return print_stmt(cast(Stmt, node))
    except Exception:  # noqa: BLE001 - runtime forms the printer lacks
        return type(node).__name__


def _lines_of(node: object) -> set[int]:
    """The source lines of `node` and every node below it that has a span."""
    out: set[int] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, tuple | list):
            todo.extend(n)
            continue
        fields = getattr(n, "__dataclass_fields__", None)
        if fields is None:
            continue
        line = getattr(getattr(n, "span", None), "line", 0)
        if line:
            out.add(line)
        todo.extend(getattr(n, f) for f in fields if f != "span")
    return out


def _ranges(lines: list[int]) -> str:
    """1, 2, 3, 5 -> "1-3, 5"."""
    parts: list[str] = []
    for k in lines:
        if parts and parts[-1].split("-")[-1] == str(k - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{k}"
        else:
            parts.append(str(k))
    return ", ".join(parts)


def parse_break(arg: str) -> Breakpoint:
    parts = arg.split()
    if not parts:
        raise BadInput("usage: break RULE | LINE | thread T | write ARRAY[i]")
    if parts[0] == "thread" and len(parts) == 2 and parts[1].isdigit():
        return Breakpoint("thread", int(parts[1]))
    if (parts[0] == "write" and len(parts) == 2 and parts[1].endswith("]")
            and "[" in parts[1]):
        name, _, index = parts[1][:-1].partition("[")
        if index.isdigit():
            return Breakpoint("write", (name, int(index)))
    if len(parts) == 1 and parts[0].isdigit():
        return Breakpoint("line", int(parts[0]))
    if len(parts) == 1 and parts[0].startswith(("S-", "E-")):
        if parts[0] not in (*RULES, *EXPR_RULES):  # else it never fires
            close = [r for r in (*RULES, *EXPR_RULES) if r.startswith(parts[0][:4])]
            raise BadInput(f"unknown rule: {parts[0]} (rules like it: "
                           f"{', '.join(close[:8]) or 'none'}; `help break`)")
        return Breakpoint("rule", parts[0])
    raise BadInput("usage: break RULE | LINE | thread T | write ARRAY[i]")


def read_schedule(path: str) -> list[int]:
    try:
        data = json.loads(read_source(path))
        return [int(i) for i in data["schedule"]]
    except (ValueError, KeyError, TypeError, RecursionError) as err:
        raise BadInput(f"cannot read schedule {path}: {err}") from None


__all__ = ["BundlDebugger", "parse_break", "read_schedule"]
