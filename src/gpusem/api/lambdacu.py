"""lambda-cu (`.lcu`, Nessie's IR, seed 002; issue 29) in the language registry:
`check` (the well-formedness of typing_rules/lambdacu, every definition's first error)
and `run` (the rules of Sec 6.2, `--rules paper|fixed`, after the check).

Exit codes: check 0 well-formed, 1 rejected (each error naming its WF- rule); run 0 a
value, 1 ill-formed, a trap or a stuck state (each naming its rule, span and element),
2 bad input or the step budget (`--max-steps`). `step` is not offered: the rules'
premises are big-step (GPU-LET, IDX-THUNK, the SOACs), and a session that pauses
inside them is future work.
"""

from __future__ import annotations

import json

from gpusem.api.languages import Language
from gpusem.api.options import CheckOptions, RunOptions
from gpusem.api.results import CheckReport, Chunk, RunReport, err, out
from gpusem.calculus.errors import Stuck, Trap
from gpusem.calculus.lambdacu.ast import Program
from gpusem.calculus.lambdacu.parser import SUFFIX, parse_program
from gpusem.calculus.lambdacu.values import show_value, to_json
from gpusem.calculus.source import read_source


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


LANGUAGES = (Language("lambdacu", (SUFFIX,), parse_program, check=check, run=run),)

__all__ = ["LANGUAGES"]
