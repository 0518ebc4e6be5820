"""Bundl in the language registry: `check` (Appendix A.2), `run` (the small-step
machine of A.3, or the big-step evaluator), `compile` (our Bundl -> CUDA compiler),
`standalone` (repro.cu), `exec` (the compile property of fuzz/bundl) and `step` (the
small-step debugger). Each handler reads the file, calls its stage and says what the
verb shows; the texts are the command line's, pinned by tests/golden."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gpusem.api import programs
from gpusem.api.languages import Language
from gpusem.api.options import (
    CheckOptions,
    CompileOptions,
    ExecOptions,
    RunOptions,
    StepOptions,
    parse_schedules,
)
from gpusem.api.results import (
    CheckReport,
    Chunk,
    CompileReport,
    ExecReport,
    KernelInfo,
    RunReport,
    err,
    out,
)
from gpusem.api.writing import reproducer, write_output
from gpusem.calculus.bundl.ast import Program
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.errors import GpusemError, IllTyped
from gpusem.calculus.source import read_source

if TYPE_CHECKING:
    from gpusem.interpreter.bundl.debug_commands import BundlDebugger
    from gpusem.interpreter.bundl.machine import Outcome

RUN_EXIT = {"terminated": 0, "stuck": 1, "deadlock": 1, "budget": 2}


def load(path: str) -> Program:
    return parse_program(read_source(path), path)


# --------------------------------------------------------------------------- check


def check(file: str, o: CheckOptions) -> CheckReport:
    return check_program_report(load(file), file, o)


def check_program_report(prog: Program, file: str, o: CheckOptions,
                         language: str = "bundl") -> CheckReport:
    """`check` of a Bundl program read from `file` (a .bundl file, or a Prism file's
    elaboration: api/prism.py)."""
    from gpusem.calculus.bundl.limits import check_limits
    from gpusem.typing_rules.bundl.stmt import check_program, type_errors

    check_limits(prog, machine=False)  # the arrays: `check` decides for run, exec
    shown: list[Chunk] = []
    if o.derivation and not o.as_json:
        from gpusem.typing_rules.bundl.derivation import derivation, format_derivation

        shown.append(out(format_derivation(derivation(prog, o.rules))))
    errors = type_errors(prog, o.rules)
    uses = check_program(prog, o.rules) if not errors else {}
    doc = {"file": file, "rules": o.rules, "ok": not errors,
           "machine": {"blocks": prog.machine.blocks, "threads": prog.machine.threads},
           "uses": uses, "errors": [error_json(e) for e in errors]}
    if o.as_json:
        shown.append(out(json.dumps(doc, indent=2)))
    elif errors:
        shown += [err(e.one_line()) for e in errors]
    else:
        shown.append(out(_summary(prog, o.rules, uses)))
    return CheckReport(file, language, IllTyped.exit_code if errors else 0,
                       tuple(shown), ok=not errors, errors=tuple(errors), doc=doc)


def _summary(prog: Program, rules: str, uses: dict[str, int]) -> str:
    m = prog.machine
    fns = ", ".join(f"{f.name} at {f.persp} uses {uses[f.name]}/{f.uses}"
                    for f in prog.fns)
    return (f"ok: well-typed at grid[1] (rules {rules}; machine blocks={m.blocks}, "
            f"threads={m.threads}; {len(prog.globals)} globals; "
            f"{len(prog.fns)} functions{': ' + fns if fns else ''}; "
            f"main needs {uses['main']} bytes)")


def error_json(e: GpusemError) -> dict[str, object]:
    return {"rule": e.rule, "prefix": e.prefix, "message": e.message,
            "line": e.span.line, "column": e.span.column}


# ----------------------------------------------------------------------------- run


def run(file: str, o: RunOptions) -> RunReport:
    return run_program_report(file, o, load)


def run_program_report(file: str, o: RunOptions, loader: Callable[[str], Program],
                       language: str = "bundl") -> RunReport:
    from gpusem.interpreter.bundl.schedulers import check_schedule

    check_schedule(o.schedule)  # before the file is read: a usage error first
    outcome = programs.run(loader(file), o.schedule, o.max_steps, o.rules,
                           blocks=o.blocks, threads=o.threads, big_step=o.big_step,
                           check_preservation=o.check_preservation)
    shown = ((out(json.dumps(_run_json(outcome))),) if o.as_json
             else _run_text(outcome, o.schedule))
    return RunReport(file, language, RUN_EXIT[outcome.kind], shown,
                     outcome=outcome.kind, memory=dict(outcome.globals),
                     steps=outcome.steps)


def _run_json(o: Outcome) -> dict[str, object]:
    doc: dict[str, object] = {"outcome": o.kind, "globals": o.globals,
                              "steps": o.steps}
    if o.kind != "terminated":
        span = getattr(o.error, "span", None)
        doc.update(rule=o.rule, message=o.message,
                   thread=list(o.thread) if o.thread else None, trap=o.trap,
                   where=str(span) if span is not None and span.line else None)
    if o.final_memories:
        doc["final_memories"] = o.final_memories
        doc["states"] = o.states
    if o.bad_schedule is not None:
        doc["bad_schedule"] = o.bad_schedule
    return doc


def _run_text(o: Outcome, schedule: str) -> tuple[Chunk, ...]:
    shown = [out(f"{name} = {values}") for name, values in o.globals.items()]
    if o.kind == "terminated":
        extra = ""
        if schedule == "exhaustive":
            extra = (f"; {len(o.final_memories)} distinct final memories over "
                     f"{o.states} states")
        shown.append(out(f"terminated after {o.steps} steps{extra}"))
        shown += [out(f"  final memory {i}: {mem}")
                  for i, mem in enumerate(o.final_memories[1:], 2)]
        return tuple(shown)
    line = o.message
    if o.error is not None and hasattr(o.error, "one_line"):
        line = o.error.one_line()
    shown.append(err(f"{o.kind} after {o.steps} steps: {line}"))
    if o.bad_schedule is not None:
        shown.append(err(f"schedule (thread indices): {o.bad_schedule}"))
    return tuple(shown)


# ------------------------------------------------------------------------- compile


def compile(file: str, o: CompileOptions) -> CompileReport:
    source = read_source(file)
    return compile_program_report(parse_program(source, file), source, file, o)


def compile_program_report(prog: Program, source: str, file: str, o: CompileOptions,
                           language: str = "bundl") -> CompileReport:
    kernel = programs.compile(prog, o.sync_motion, o.cp_async,
                              source=source, file=Path(file).name, sync=o.sync)
    info = KernelInfo(kernel.name, str(kernel.blocks), str(kernel.threads),
                      kernel.smem_bytes)
    if o.output:
        write_output(o.output, kernel.source)
        shown = out(f"wrote {o.output}: kernel {kernel.name}, grid {kernel.blocks}, "
                    f"block {kernel.threads}, {kernel.smem_bytes} bytes shared memory")
    else:
        shown = out(kernel.source, nl=False)
    return CompileReport(file, language, 0, (shown,), source=kernel.source,
                         kernels=(info,), written=o.output)


def standalone(file: str, o: CompileOptions) -> CompileReport:
    return standalone_report(load(file), file, o)


def standalone_report(prog: Program, file: str, o: CompileOptions,
                      language: str = "bundl") -> CompileReport:
    from gpusem.compiler.bundl_cuda.standalone import NVCC_COMMAND

    text = programs.standalone(prog, o.sync_motion, title=Path(file).name)
    return reproducer(file, language, text, o.output, NVCC_COMMAND)


# ---------------------------------------------------------------------------- exec


def exec_(file: str, o: ExecOptions) -> ExecReport:
    return exec_program_report(file, o, parse_program)


def exec_program_report(file: str, o: ExecOptions,
                        parse: Callable[[str, str], Program],
                        language: str = "bundl") -> ExecReport:
    seeds = parse_schedules(o.schedules)
    source = read_source(file)
    verdict = programs.exec(parse(source, file), o.backend, seeds,
                            o.sync_motion, source=source, file=Path(file).name,
                            sync=o.sync)
    doc = verdict.as_dict()
    shown = out(json.dumps(doc, indent=2) if o.as_json else verdict.describe())
    return ExecReport(file, language, verdict.exit_code(), (shown,),
                      agree=verdict.agree, kind=verdict.kind, doc=doc)


# ---------------------------------------------------------------------------- step


def step(file: str, o: StepOptions) -> BundlDebugger:
    return debugger(read_source(file), file, o)


def debugger(source: str, file: str, o: StepOptions | None = None,
             parse: Callable[[str, str], Program] = parse_program) -> BundlDebugger:
    """The small-step debugger on `source` (also a bundle's program: `step_bundle`;
    a Prism file's elaboration, with `parse`)."""
    o = o or StepOptions()
    from gpusem.interpreter.bundl.debug import Session
    from gpusem.interpreter.bundl.debug_commands import BundlDebugger

    session = Session(parse(source, file), o.rules, o.blocks, o.threads,
                      o.schedule,
                      **({} if o.max_steps is None else {"max_steps": o.max_steps}))
    return BundlDebugger(session, source, file, o.schedule, write_output)


LANGUAGES = (Language("bundl", (".bundl",), parse_program, check=check, run=run,
                      compile=compile, standalone=standalone, exec=exec_, step=step),)

__all__ = ["LANGUAGES", "debugger", "error_json", "load"]
