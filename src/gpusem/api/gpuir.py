"""GPU IR and AMIR in the language registry. GPU IR (`.gpuir`): `check` (the
collective and distributed-memory analyses, Exo-GPU Section 4), `synccheck` (the
conversion to AMIR, Figure 5, and the machine, Section 5.3), `compile` and
`standalone` (our GPU IR -> CUDA compiler), `exec` (compiled and run against the
sequential reading) and `step` (the AMIR debugger). AMIR (`.amir`, Figure 4's printed
form): `synccheck` on the machine directly. The texts are the command line's, pinned
by tests/golden."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from gpusem.api.bundl import error_json
from gpusem.api.languages import Language
from gpusem.api.options import (
    CheckOptions,
    CompileOptions,
    ExecOptions,
    StepOptions,
    SyncOptions,
    parse_defines,
    parse_schedules,
)
from gpusem.api.results import (
    CheckReport,
    Chunk,
    CompileReport,
    ExecReport,
    KernelInfo,
    SyncReport,
    err,
    out,
)
from gpusem.api.writing import reproducer, write_output
from gpusem.calculus.amir.parser import parse_procs
from gpusem.calculus.errors import BadInput, IllTyped
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.calculus.source import read_source

if TYPE_CHECKING:
    from gpusem.interpreter.amir.debug_commands import AmirDebugger


def check(file: str, o: CheckOptions) -> CheckReport:
    from gpusem.typing_rules.gpuir.frontend import check_file

    try:
        result = check_file(file, parse_defines(o.defines))
    except IllTyped as error:
        errors = list(getattr(error, "all", None) or [error])
        doc: dict[str, object] = {"file": file, "ok": False,
                                  "errors": [error_json(e) for e in errors]}
        shown = ((out(json.dumps(doc, indent=2)),) if o.as_json
                 else tuple(err(e.one_line()) for e in errors))
        return CheckReport(file, "gpuir", IllTyped.exit_code, shown, ok=False,
                           errors=tuple(errors), doc=doc)
    doc = {"file": file, "ok": True, "summary": str(result)}
    return CheckReport(file, "gpuir", 0, (out(json.dumps(doc, indent=2) if o.as_json
                                              else str(result)),), doc=doc)


def synccheck(file: str, o: SyncOptions) -> SyncReport:
    return _synccheck(file, o, amir_level=False)


def synccheck_amir(file: str, o: SyncOptions) -> SyncReport:
    return _synccheck(file, o, amir_level=True)


def _synccheck(file: str, o: SyncOptions, amir_level: bool) -> SyncReport:
    from gpusem.interpreter.amir import synccheck as sc
    from gpusem.typing_rules.gpuir.frontend import header_defines

    source = read_source(file)
    env = {**header_defines(source, file), **parse_defines(o.defines)}
    if o.symbolic:
        if amir_level:
            raise BadInput(f"{file}: --symbolic checks .gpuir files only")
        return _symbolic(file, source, env, o)
    if amir_level:
        result = sc.synccheck_amir(source, file, env, proc_name=o.proc,
                                   max_steps=o.max_steps, reference=o.reference)
    else:
        result = sc.synccheck(source, file, env, proc_name=o.proc, rules=o.rules,
                              max_steps=o.max_steps, reference=o.reference)
    shown: list[Chunk] = []
    if o.print_amir:
        from gpusem.calculus.amir.printer import print_proc

        shown.append(out(print_proc(result.amir), nl=False))
    doc = result.as_json()
    shown.append(out(json.dumps(doc, indent=2) if o.as_json
                     else result.report(source)))
    v = result.verdict
    return SyncReport(file, "amir" if amir_level else "gpuir", 0 if v.accepted else 1,
                      tuple(shown), accepted=v.accepted,
                      check=None if v.violation is None else v.violation.check,
                      doc=doc)


def _symbolic(file: str, source: str, env: dict[str, int],
              o: SyncOptions) -> SyncReport:
    """`--symbolic N,K`: exit 0 for `proved` (an all-sizes proof), exit 1 for
    `refuted` (a replayable size) AND for `unproved` (the program is outside what
    the proof covers: never exit 0 without a proof)."""
    from gpusem.interpreter.amir.symbolic_sizes import symbolic_synccheck

    explicit = parse_defines(o.defines)
    clash = [p for p in o.symbolic if p in explicit]
    if clash:
        raise BadInput(f"{file}: {clash[0]} is both given (-D) and symbolic")
    r = symbolic_synccheck(source, file, o.symbolic, env, assume=o.assume,
                           up_to=o.up_to, sizes=o.sizes, proc_name=o.proc,
                           rules=o.rules, max_steps=o.max_steps)
    doc = r.as_json()
    shown = out(json.dumps(doc, indent=2) if o.as_json else r.report(source))
    check = None
    if r.result is not None and r.result.verdict.violation is not None:
        check = r.result.verdict.violation.check
    return SyncReport(file, "gpuir", 0 if r.proved else 1, (shown,),
                      accepted=r.proved, check=check, doc=doc)


def compile(file: str, o: CompileOptions) -> CompileReport:
    from gpusem.compiler.gpuir_cuda.pipeline import compile_proc
    from gpusem.typing_rules.gpuir.frontend import load_proc

    proc, env, source = load_proc(file, parse_defines(o.defines), o.proc)
    compiled = compile_proc(proc, env, source=source, file=Path(file).name)
    kernels = tuple(KernelInfo(k.name, str(k.grid), str(k.block), k.smem_bytes)
                    for k in compiled.kernels)
    if o.output:
        write_output(o.output, compiled.source)
        shown = tuple(out(f"wrote {o.output}: kernel {k.name}, grid {k.grid}, block "
                          f"{k.block}, cluster {k.cluster}, {k.smem_bytes} bytes "
                          "shared memory") for k in compiled.kernels)
    else:
        shown = (out(compiled.source, nl=False),)
    return CompileReport(file, "gpuir", 0, shown, source=compiled.source,
                         kernels=kernels, written=o.output)


def standalone(file: str, o: CompileOptions) -> CompileReport:
    from gpusem.compiler.backends.standalone import NVCC_COMMAND
    from gpusem.compiler.gpuir_cuda.standalone import standalone_proc
    from gpusem.typing_rules.gpuir.frontend import load_proc

    _, env, source = load_proc(file, parse_defines(o.defines), o.proc)
    text = standalone_proc(source, Path(file).name, env, o.proc)
    return reproducer(file, "gpuir", text, o.output, NVCC_COMMAND)


def exec_(file: str, o: ExecOptions) -> ExecReport:
    """Compile, run on the backend under the schedules, compare with the sequential
    reading: exit 0 agree, 1 disagree or the kernel failed (unsupported included)."""
    from gpusem.compiler.gpuir_cuda.run import check_proc
    from gpusem.typing_rules.gpuir.frontend import load_proc

    seeds = parse_schedules(o.schedules)
    proc, env, source = load_proc(file, parse_defines(o.defines), o.proc)
    verdict = check_proc(proc, env, o.backend, seeds, source=source,
                         file=Path(file).name)
    doc = verdict.as_dict()
    shown = out(json.dumps(doc, indent=2) if o.as_json else verdict.describe())
    return ExecReport(file, "gpuir", 0 if verdict.agree else 1, (shown,),
                      agree=verdict.agree, kind=verdict.kind, doc=doc)


def step(file: str, o: StepOptions) -> AmirDebugger:
    """The AMIR debugger on the program a GPU IR procedure converts to."""
    from gpusem.interpreter.amir.debug_commands import AmirDebugger, open_session
    from gpusem.typing_rules.gpuir.frontend import header_defines

    source = read_source(file)
    env = {**header_defines(source, file), **parse_defines(o.defines)}
    session = open_session(source, file, env, proc_name=o.proc, rules=o.rules,
                           **({} if o.max_steps is None else {"max_steps": o.max_steps}))
    return AmirDebugger(session, source, file, env, o.rules)


LANGUAGES = (
    Language("gpuir", (".gpuir",), parse_module, check=check, compile=compile,
             standalone=standalone, exec=exec_, synccheck=synccheck, step=step),
    Language("amir", (".amir",), parse_procs, synccheck=synccheck_amir),
)

__all__ = ["LANGUAGES"]
