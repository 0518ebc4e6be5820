"""The synchronisation check of a GPU IR program: the front end's analyses (Sections 3-4
of Exo-GPU), the conversion to AMIR (Figure 5) and the abstract machine (Section 5.3):
does the program's parallel reading equal its sequential one? `gpusem synccheck` prints
what this returns; the fuzzer's seq = par property and the debugger call it too.

A rejection reads like a compiler diagnostic (`diagnostic`): the failing check, the
variable and index, the timelines, the threads (task, thread) of both sides, and the
source lines of BOTH conflicting accesses (each AMIR record keeps the GPU IR span of the
access that made it).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar, cast

from gpusem.calculus.errors import BadInput
from gpusem.calculus.span import NO_SPAN, Span

if TYPE_CHECKING:  # imported where used: the machine loads only when a check runs
    from gpusem.calculus.amir.ast import AProc
    from gpusem.calculus.gpuir.ast import Proc
    from gpusem.calculus.gpuir.timelines import Rules
    from gpusem.interpreter.amir.checks import ShownThreads, Verdict, Violation
    from gpusem.typing_rules.gpuir.collective import Analysis


P = TypeVar("P", "Proc", "AProc")


class SyncResult:
    """The outcome of one sync check: the AMIR program and the machine's verdict."""

    def __init__(self, file: str, proc: str, defines: Mapping[str, int], amir: AProc,
                 verdict: Verdict, seconds: float = 0.0,
                 analysis: Analysis | None = None):
        self.file, self.proc, self.defines = file, proc, dict(defines)
        self.amir, self.verdict, self.seconds = amir, verdict, seconds
        # the front end's analysis of a GPU IR proc (None for an .amir file): what
        # the compiler lowers by, so a caller that compiles too need not redo it
        self.analysis = analysis

    def as_json(self) -> dict[str, object]:
        v, st = self.verdict.violation, self.verdict.stats
        out: dict[str, object] = {
            "file": self.file, "proc": self.proc, "defines": self.defines,
            "verdict": "accepted" if v is None else "rejected",
            "seconds": round(self.seconds, 4),
            "stats": {"statements": st.statements,
                      "recorded_accesses": st.recorded_accesses,
                      "records": st.records, "lifts": st.lifts}}
        if v is not None:
            out["violation"] = {
                "check": v.check, "variable": v.variable, "index": list(v.index),
                "timelines": list(v.timelines), "required": v.required,
                "threads": _jsonable(v.threads), "other_threads":
                _jsonable(v.other_threads), "other_timeline": v.other_timeline,
                "access": _span_json(v.span), "other_access": _span_json(v.other_span),
                "message": v.message}
        return out

    def report(self, source: str) -> str:
        v, st = self.verdict.violation, self.verdict.stats
        sizes = ", ".join(f"{k}={n}" for k, n in self.defines.items())
        if v is None:
            return (f"accepted: {self.proc}({sizes}): {st.statements} AMIR statements, "
                    f"{st.recorded_accesses} recorded accesses, {st.records} records "
                    f"in {self.seconds:.2f} s")
        return diagnostic(v, source, self.file)


def synccheck(source: str, file: str, defines: Mapping[str, int], *,
              proc_name: str | None = None, rules: str = "fixed",
              max_steps: int = 200_000_000, reference: bool = False) -> SyncResult:
    """Parse `source` and sync-check one of its procedures (the last by default)."""
    from gpusem.calculus.gpuir.parser import parse_module

    module = parse_module(source, file)
    proc = pick_proc(module.procs, proc_name, file)
    return synccheck_proc(proc, defines, rules=rules, max_steps=max_steps, file=file,
                          reference=reference)


def run_machine(amir: AProc, defines: Mapping[str, int], max_steps: int,
                reference: bool) -> Verdict:
    """The abstract machine: the reference (interpreter/amir/machine.py, the
    definition) or, by default, the fast machine that decides symmetric task nests
    from their first task and gives exactly the reference's verdict and statistics
    (interpreter/amir/fast.py; proofs_notes/fast_checker.md)."""
    if reference:
        from gpusem.interpreter.amir.machine import check_amir

        return check_amir(amir, defines, max_steps=max_steps)
    from gpusem.interpreter.amir.fast import check_amir_fast

    return check_amir_fast(amir, defines, max_steps=max_steps)


def synccheck_amir(source: str, file: str, defines: Mapping[str, int], *,
                   proc_name: str | None = None, max_steps: int = 200_000_000,
                   reference: bool = False) -> SyncResult:
    """Sync-check an AMIR-level program (a `.amir` file in the printed form of
    calculus/amir/printer.py, Figure 4): parse it and run the machine (Section 5.3)
    on one of its procedures (the last by default). There is no front end and no
    conversion: the file *is* the abstract-machine program, and each statement's own
    line is the provenance a rejection shows. Raises BadInput (malformed program,
    missing sizes), Trap and BudgetExhausted as `check_amir` does."""
    from gpusem.calculus.amir.parser import parse_procs

    procs = parse_procs(source, file)
    if not procs:
        raise BadInput(f"{file}: no procedure")
    amir = pick_proc(procs, proc_name, file)
    missing = [p for p in amir.params if p not in defines]
    if missing:
        raise BadInput(f"{file}: missing definition: {', '.join(missing)} has no "
                       f"value (pass -D {missing[0]}=...)")
    start = time.perf_counter()
    verdict = run_machine(amir, {p: defines[p] for p in amir.params}, max_steps,
                          reference)
    seconds = time.perf_counter() - start
    return SyncResult(file, amir.name, {p: defines[p] for p in amir.params}, amir,
                      verdict, seconds)


def synccheck_proc(proc: Proc, defines: Mapping[str, int], *, rules: str = "fixed",
                   max_steps: int = 200_000_000, file: str = "",
                   reference: bool = False) -> SyncResult:
    """Analyse (front end), convert (Figure 5) and run the machine on `proc`. Raises
    BadInput (malformed input, missing sizes), IllTyped (a front-end analysis error)
    and BudgetExhausted (more than `max_steps` AMIR statement executions)."""
    from gpusem.interpreter.amir.from_gpuir import convert

    missing = [p.name for p in proc.ctrl_params if p.name not in defines]
    if missing:
        raise BadInput(f"{file or proc.span.file}: missing definition: "
                       f"{', '.join(missing)} has no value (pass -D {missing[0]}=...)")
    analysis = _front_end(proc, defines)
    # rules: "fixed" or "paper" (the CLI's choice; convert's `Rules`)
    amir = convert(proc, defines, rules=cast("Rules", rules), analysis=analysis)
    start = time.perf_counter()
    verdict = run_machine(amir, defines, max_steps, reference)
    seconds = time.perf_counter() - start
    return SyncResult(file or proc.span.file, proc.name, defines, amir, verdict,
                      seconds, analysis)


def pick_proc(procs: Sequence[P], name: str | None, file: str) -> P:
    if name is None:
        return procs[-1]
    for p in procs:
        if p.name == name:
            return p
    raise BadInput(f"{file}: no procedure named {name} (have: "
                   f"{', '.join(p.name for p in procs)})")


def _front_end(proc: Proc, defines: Mapping[str, int]) -> Analysis:
    """The front end's analyses (well-formedness, collective and distributed memory
    analysis, Sections 3-4) must accept before a sync check means anything: their
    first error is raised (IllTyped, exit 1). Returns the analysis, whose thread
    mappings the conversion uses."""
    from gpusem.typing_rules.gpuir.frontend import check_elements, check_proc

    check_elements(proc, defines)  # the machine keeps a record set per cell
    return check_proc(proc, dict(defines))


# ------------------------------------------------------------------ the diagnostic


def diagnostic(v: Violation, source: str, file: str) -> str:
    """The rejection as a compiler diagnostic with both source lines shown."""
    lines = [f"{_where(v.span, file)}: error: {v.message}"]
    cell = f"{v.variable}[{', '.join(map(str, v.index))}]" if v.index else v.variable
    lines.append(f"  check: {v.check}   variable: {cell}")
    if v.check == "CheckBarrier":
        lines += _excerpt(source, v.span, "the barrier's lifetime ends here")
        return "\n".join(lines)
    lines.append(f"  timeline: {', '.join(v.timelines)} (needs {v.required}); earlier "
                 f"access on {v.other_timeline}")
    lines.append(f"  threads (task, thread): this access {_threads(v.threads)}; "
                 f"earlier access {_threads(v.other_threads)}")
    width = len(str(max(v.span.line, v.other_span.line)))
    lines += _excerpt(source, v.span, _this_label(source, v), width)
    lines += _excerpt(source, v.other_span, "conflicting earlier access", width)
    return "\n".join(lines)


def _this_label(source: str, v: Violation) -> str:
    """An inserted free carries its allocation's span: say so rather than pointing at
    the declaration as if it were an access."""
    text = _line(source, v.span)
    if text is not None and re.match(rf"\s*{re.escape(v.variable)}\s*:", text):
        return f"{v.variable} is freed at the end of this declaration's block"
    return "this access"


def _excerpt(source: str, span: Span, label: str, width: int = 0) -> list[str]:
    """`note: label (file:line:col):` then the source line and a caret under the
    column, line numbers right-aligned to `width`."""
    text = _line(source, span)
    if text is None:
        return [f"  note: {label} ({span})"]
    num = str(span.line).rjust(width)
    caret = " " * (span.column - 1) + "^"
    return [f"  note: {label} ({span}):",
            f"  {num} | {text}",
            f"  {' ' * len(num)} | {caret}"]


def _line(source: str, span: Span) -> str | None:
    if span is NO_SPAN or span.line <= 0:
        return None
    lines = source.splitlines()
    return lines[span.line - 1] if span.line <= len(lines) else None


def _where(span: Span, file: str) -> str:
    return str(span) if span is not NO_SPAN else file


def _threads(ts: ShownThreads) -> str:
    if ts == "all" or ts == ():
        return "all threads" if ts == "all" else "-"
    pairs = list(ts)
    shown = ", ".join(f"({a}, {b})" for a, b in pairs)
    return shown + (", ..." if len(pairs) >= 8 else "")


def _jsonable(ts: ShownThreads) -> str | list[list[int]]:
    return ts if isinstance(ts, str) else [list(p) for p in ts]


def _span_json(span: Span) -> dict[str, object] | None:
    if span is NO_SPAN:
        return None
    return {"file": span.file, "line": span.line, "column": span.column}
