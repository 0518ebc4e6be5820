"""The robustness campaign's runner (issue 15, "What to build" 5): one `gpusem` command
run in this process, as `tests/golden/goldens.py` runs them, and its classification.

A run fails when
  - an exception other than SystemExit escapes `gpusem.cli.main.main`, the exit code
    is 3 ("internal error", a bug of gpusem) or stderr shows a traceback (`traceback`);
  - the exit code is outside {0, 1, 2} (`bad-exit`);
  - it runs past its deadline (`hang`: every interpreter has step and memory budgets,
    so nothing may run for long);
  - the input is known to be invalid and the exit code is 0 (`exit-0-on-invalid`);
  - it exits 2 without saying why in one line (`silent-2`);
  - it ran out of memory under the default element and thread budgets
    (`out-of-memory`: a static check missed a size);
  - (the driver) the worker process died during it (`crash`: killed by the kernel,
    a segfault, an exception past the campaign).
The deadline is SIGALRM raising `Hang`, a BaseException that no `except Exception`
swallows; a hang inside C code that never returns to Python is the campaign driver's
business (scripts/robust_campaign.py kills and restarts its worker).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

FAILURES = ("traceback", "bad-exit", "hang", "exit-0-on-invalid", "silent-2",
            "out-of-memory", "crash")


class Hang(BaseException):
    """The deadline of one run passed."""


@dataclass
class Input:
    """One command: `argv` after `gpusem`, where the token FILE is the program file
    (written with `content` and `suffix` before the run, unless `path` names another
    path), and whether it is known to be invalid (`why`)."""

    argv: list[str]
    content: bytes = b""
    suffix: str = ".bundl"
    path: str | None = None
    why: str = ""              # non-empty: invalid, exit 0 is a failure; says why
    origin: str = ""           # the generator or mutator that made it
    verb: str = ""

    @property
    def invalid(self) -> bool:
        return bool(self.why)


@dataclass
class Outcome:
    code: int | None
    stdout: str
    stderr: str
    failure: str = ""          # one of FAILURES, or "" (a pass)
    detail: str = ""
    seconds: float = 0.0


@dataclass
class Tally:
    """What a campaign saw: runs per verb and exit code, failures with a reproducer."""

    runs: int = 0
    by_code: dict[str, int] = field(default_factory=dict)
    by_verb: dict[str, int] = field(default_factory=dict)
    by_origin: dict[str, int] = field(default_factory=dict)
    seconds_by_verb: dict[str, float] = field(default_factory=dict)
    invalid: int = 0
    failures: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAILURES, 0))
    examples: list[dict] = field(default_factory=list)  # the first few of each kind
    seconds: float = 0.0

    def add(self, inp: Input, out: Outcome, keep: int = 5) -> None:
        self.runs += 1
        self.seconds += out.seconds
        self.by_verb[inp.verb] = self.by_verb.get(inp.verb, 0) + 1
        self.seconds_by_verb[inp.verb] = round(
            self.seconds_by_verb.get(inp.verb, 0.0) + out.seconds, 3)
        self.by_code[str(out.code)] = self.by_code.get(str(out.code), 0) + 1
        self.by_origin[inp.origin] = self.by_origin.get(inp.origin, 0) + 1
        self.invalid += inp.invalid
        if out.failure:
            self.failures[out.failure] += 1
            if sum(e["failure"] == out.failure for e in self.examples) < keep:
                self.examples.append(describe(inp, out))

    def merge(self, other: dict) -> None:
        self.runs += other["runs"]
        self.invalid += other["invalid"]
        self.seconds += other["seconds"]
        for name in ("by_code", "by_verb", "by_origin", "failures", "seconds_by_verb"):
            mine = getattr(self, name)
            for k, v in other[name].items():
                mine[k] = mine.get(k, 0) + v
        self.examples.extend(other["examples"])

    def as_dict(self) -> dict:
        return {"runs": self.runs, "invalid": self.invalid,
                "seconds": round(self.seconds, 1), "by_code": self.by_code,
                "by_verb": self.by_verb, "by_origin": self.by_origin,
                "seconds_by_verb": self.seconds_by_verb,
                "failures": self.failures, "examples": self.examples}

    @property
    def failed(self) -> int:
        return sum(self.failures.values())


def describe(inp: Input, out: Outcome) -> dict:
    return {"failure": out.failure, "argv": inp.argv, "suffix": inp.suffix,
            "path": inp.path, "why_invalid": inp.why, "origin": inp.origin,
            "content": inp.content[:4000].decode("utf-8", "backslashreplace"),
            "code": out.code, "stderr": out.stderr[-2000:], "detail": out.detail[-3000:]}


def materialise(inp: Input, workdir: Path) -> list[str]:
    """The argv of `inp` with FILE replaced by a path holding its content."""
    path = inp.path
    if path is None:
        target = workdir / f"input{inp.suffix}"
        target.write_bytes(inp.content)
        path = str(target)
    return [path if a == "FILE" else a for a in inp.argv]


def run_cli(argv: list[str], deadline_s: float, cwd: Path) -> Outcome:
    """`gpusem ARGV` in this process, with a deadline."""
    import time

    from gpusem.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    sys.argv = ["gpusem", *argv]
    os.chdir(cwd)
    code: int | None = None
    failure = detail = ""

    expired = []

    def on_alarm(*_):
        expired.append(True)
        raise Hang

    previous = signal.signal(signal.SIGALRM, on_alarm)
    # after the deadline, again every second: a Hang raised where exceptions are
    # ignored (a gc callback, a __del__) is only printed, and the run goes on
    signal.setitimer(signal.ITIMER_REAL, deadline_s, 1.0)
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None
                                                               else 1)
    except Hang:
        pass
    except BaseException as exc:  # noqa: BLE001 - exactly what the campaign looks for
        failure, detail = "traceback", "".join(traceback.format_exception(exc))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.argv = saved_argv
        os.chdir(saved_cwd)
    if expired:
        failure, detail = "hang", f"past the {deadline_s} s deadline"
    return Outcome(code, out.getvalue(), err.getvalue(), failure, detail,
                   time.perf_counter() - start)


def classify(inp: Input, out: Outcome) -> Outcome:
    if out.failure:
        return out
    stderr = out.stderr
    if out.code == 3 or "Traceback (most recent call last)" in stderr:
        out.failure, out.detail = "traceback", stderr[-3000:]
    elif out.code not in (0, 1, 2):
        out.failure = "bad-exit"
    elif out.code == 0 and inp.invalid:
        out.failure, out.detail = "exit-0-on-invalid", inp.why
    elif out.code == 2 and not stderr.strip() and not (
            "--json" in inp.argv and out.stdout.lstrip().startswith("{")):
        out.failure = "silent-2"  # (--json: the reason is in the document)
    elif "out of memory:" in stderr and not {"--max-elements", "--max-threads"} & set(
            inp.argv):
        out.failure, out.detail = "out-of-memory", stderr[-2000:]
    return out


def run_one(inp: Input, workdir: Path, deadline_s: float) -> Outcome:
    """One input; a run past its deadline is retried once at twice the deadline (a
    timeout under load is not a finding: a budgeted run that is slow on a loaded
    machine finishes, a runaway does not)."""
    argv = materialise(inp, workdir)
    out = classify(inp, run_cli(argv, deadline_s, workdir))
    if out.failure == "hang":
        out = classify(inp, run_cli(argv, 2 * deadline_s, workdir))
        if out.failure == "hang":
            out.detail += " (and again at twice the deadline)"
    return out
