"""lambda-cu (`.lcu`, Nessie's IR, seed 002; issue 29) in the language registry:
`check` (the well-formedness of typing_rules/lambdacu, every definition's first error),
`run` (the rules of Sec 6.2, `--rules paper|fixed`, after the check), `compile` (the
CUDA C++ of compiler/lambdacu_cuda; `--standalone`: one file that builds with nvcc or
g++ alone) and `exec` (that program on the cpu harness or the GPU against the
interpreter under `fixed`; `-D LC_BLOCK=N` picks the block size, default 256).

Exit codes: check 0 well-formed, 1 rejected (each error naming its WF- rule); run 0 a
value, 1 ill-formed, a trap or a stuck state (each naming its rule, span and element),
2 bad input or the step budget (`--max-steps`); compile 0, 1 ill-formed; exec 0 the
compiled program agrees (the same value and printed lines, or both trap), 1
ill-formed, a disagreement or a compiled program that fails (build, launch, crash),
2 bad input or the interpreter's budget, 3 the interpreter stuck on a well-formed
program (a soundness bug of gpusem). `step` is the debugger of
interpreter/lambdacu/debug_commands.py: one rule application of Sec 6.2 a step, each
named (a scripted session exits as the others: 0 a value or stopped early, 1 a trap
or a stuck state, ill-formed, 2 bad input or the step budget).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from gpusem.api.languages import Language
from gpusem.api.options import (
    CheckOptions,
    CompileOptions,
    ExecOptions,
    RunOptions,
    StepOptions,
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
from gpusem.calculus.errors import BadInput, Stuck, Trap
from gpusem.calculus.lambdacu.ast import Program
from gpusem.calculus.lambdacu.parser import SUFFIX, parse_program
from gpusem.calculus.lambdacu.values import show_value, to_json
from gpusem.calculus.source import read_source

if TYPE_CHECKING:
    from gpusem.interpreter.lambdacu.debug_commands import LambdacuDebugger


def load(file: str) -> Program:
    return parse_program(read_source(file), file)


def check(file: str, o: CheckOptions) -> CheckReport:
    from gpusem.typing_rules.lambdacu.wellformed import all_errors

    prog = load(file)
    errors, _ = all_errors(prog)
    doc = {"file": file, "ok": not errors,
           "kernels": [k.name for k in prog.kernels],
           "functions": [f.name for f in prog.functions],
           "errors": [{"rule": e.rule, "message": e.one_line()} for e in errors]}
    shown: tuple[Chunk, ...]
    if o.as_json:
        shown = (out(json.dumps(doc, indent=2)),)
    elif errors:
        shown = tuple(err(e.one_line()) for e in errors)
    else:
        shown = (out(f"ok: well-formed: {_count(len(prog.kernels), 'kernel')}, "
                     f"{_count(len(prog.functions), 'function')}"),)
    return CheckReport(file, "lambdacu", 1 if errors else 0, shown, ok=not errors,
                       errors=tuple(errors), doc=doc)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def run(file: str, o: RunOptions) -> RunReport:
    from gpusem.interpreter.lambdacu.machine import evaluate
    from gpusem.interpreter.lambdacu.rules import rule_set
    from gpusem.typing_rules.lambdacu.wellformed import check_program

    checked = check_program(load(file))  # IllTyped: one line, exit 1
    try:
        res = evaluate(checked.program, rule_set(o.rules), o.max_steps, checked.elems)
    except (Stuck, Trap) as error:
        outcome = "stuck" if isinstance(error, Stuck) else "trap"
        doc = {"outcome": outcome, "rule": error.rule, "message": error.one_line()}
        shown = out(json.dumps(doc)) if o.as_json else err(error.one_line())
        return RunReport(file, "lambdacu", 1, (shown,), outcome=outcome)
    memory = {"main": to_json(res.value)}
    if o.as_json:
        doc2 = {"outcome": "terminated", "rules": o.rules, "value": memory["main"],
                "printed": list(res.printed), "steps": res.steps}
        chunks: tuple[Chunk, ...] = (out(json.dumps(doc2)),)
    else:
        chunks = tuple(out(line) for line in res.printed)
        chunks += (out(f"main = {show_value(res.value)}"),
                   out(f"terminated ({res.steps} rule applications, rules {o.rules})"))
    return RunReport(file, "lambdacu", 0, chunks, outcome="terminated", memory=memory,
                     steps=res.steps)


def _block(defines: tuple[str, ...]) -> int:
    block = 256
    for d in defines:
        name, _, value = d.partition("=")
        if name != "LC_BLOCK" or not value.isdigit():
            raise BadInput(f"-D {d}: .lcu takes only -D LC_BLOCK=N")
        block = int(value)
    if block < 1 or block > 1024 or block & (block - 1):
        raise BadInput(f"-D LC_BLOCK={block}: a power of two from 1 to 1024")
    return block


def compile(file: str, o: CompileOptions) -> CompileReport:
    from gpusem.compiler.lambdacu_cuda.emit import compile_program

    compiled = compile_program(load(file), block=_block(o.defines))
    info = KernelInfo("main", "per launch", str(compiled.block), 0)
    if o.output:
        write_output(o.output, compiled.source)
        shown = out(f"wrote {o.output}: {_count(compiled.kernels, 'kernel')}, "
                    f"block {compiled.block}")
    else:
        shown = out(compiled.source, nl=False)
    return CompileReport(file, "lambdacu", 0, (shown,), source=compiled.source,
                         kernels=(info,), written=o.output)


def standalone(file: str, o: CompileOptions) -> CompileReport:
    """One `.cu` with every header inlined and the interpreter's value of main (or
    that it traps): it exits 1 where the compiled program disagrees."""
    from gpusem.compiler.lambdacu_cuda.driver import (
        NVCC_COMMAND,
        expected_output,
        standalone,
    )
    from gpusem.compiler.lambdacu_cuda.emit import compile_program
    from gpusem.fuzz.lambdacu.compile_check import reference

    prog = load(file)
    compiled = compile_program(prog, block=_block(o.defines))
    kind, _, res = reference(prog)
    expected = None if kind == "skip" else expected_output(res.value if res else None)
    return reproducer(file, "lambdacu", standalone(compiled.source, expected),
                      o.output, NVCC_COMMAND)


def exec_(file: str, o: ExecOptions) -> ExecReport:
    from gpusem.fuzz.lambdacu.compile_check import differential

    seeds = [int(s) for s in o.schedules.split(",") if s.strip().isdigit()]
    if o.backend != "cpu" or not seeds:
        seeds = [0]  # the GPU has no schedule to pick
    prog, block = load(file), _block(o.defines)
    verdicts = [differential(prog, o.backend, block=block, seed=s) for s in seeds]
    bad = next((v for v in verdicts if v.kind != "agree"), verdicts[0])
    code = {"agree": 0, "mismatch": 1, "error": 1}.get(bad.kind, 3)
    if bad.kind == "skip":
        code = 2 if "budget" in bad.detail else 3
    doc = {"file": file, "backend": o.backend, "block": block, "schedules": seeds,
           "verdict": bad.kind, "detail": bad.detail, "reference": bad.reference,
           "compiled": bad.compiled}
    if o.as_json:
        shown: tuple[Chunk, ...] = (out(json.dumps(doc, indent=2)),)
    elif bad.kind == "agree":
        shown = (out(f"agree: compiled ({o.backend}, block {block}, schedules "
                     f"{','.join(map(str, seeds))}) = interpreter (--rules fixed)"),
                 out(bad.reference))
    else:
        shown = (out(f"{'disagree' if bad.kind == 'mismatch' else bad.kind}: "
                     f"{bad.detail}"),
                 out("interpreter (--rules fixed):"), out(bad.reference),
                 out(f"compiled ({o.backend}, block {block}):"), out(bad.compiled))
    return ExecReport(file, "lambdacu", code, shown, agree=bad.kind == "agree",
                      kind=bad.kind, doc=doc)


def step(file: str, o: StepOptions) -> LambdacuDebugger:
    """The rule-by-rule debugger on the program's run under `--rules`."""
    from gpusem.interpreter.lambdacu.debug_commands import (
        DEFAULT_MAX_STEPS,
        LambdacuDebugger,
        open_session,
    )

    source = read_source(file)
    session = open_session(source, file, o.rules, o.max_steps or DEFAULT_MAX_STEPS)
    return LambdacuDebugger(session, source, file, o.rules)


LANGUAGES = (Language("lambdacu", (SUFFIX,), parse_program, check=check, run=run,
                      compile=compile, standalone=standalone, exec=exec_, step=step),)

__all__ = ["LANGUAGES"]
