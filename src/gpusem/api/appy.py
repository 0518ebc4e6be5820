"""APPy (`.py`, issue 17) in the language registry: `check` (parse + the static
legality rules; with inputs, the dynamic ones too, watching the sequential reading),
`run` (the sequential reading, seed 003 Sections 3-4: plain NumPy) and `exec` (appyc
-> Triton on the cpu backend, Triton's interpreter, against the sequential reading).
The file is parsed by gpusem and printed again before appyc sees it: nothing of its
raw text (decorators, annotations, defaults, other statements) is run.

Exit codes: check 0 legal, 1 illegal; run 0 terminated, 1 a trap, 2 the step budget;
exec 0 agree, 1 disagree, the compiled program failed, or not compared (illegal, not
runnable here); 2 bad input everywhere (appyc missing included)."""

from __future__ import annotations

import json

import numpy as np
from gpusem.api.languages import Language
from gpusem.api.options import CheckOptions, ExecOptions, RunOptions
from gpusem.api.results import CheckReport, Chunk, ExecReport, RunReport, err, out
from gpusem.calculus.appy.ast import Function
from gpusem.calculus.appy.inputs import header_inputs, make_inputs
from gpusem.calculus.appy.parser import parse_program
from gpusem.calculus.errors import BadInput, IllTyped, Trap
from gpusem.calculus.source import read_source

Inputs = tuple[Function, dict[str, np.ndarray], dict[str, int | float], bool]


def _load(file: str, spec: str | None, need_inputs: bool) -> Inputs:
    text = read_source(file)
    fn = parse_program(text, file)
    spec = spec if spec is not None else header_inputs(text)
    if spec is None and need_inputs:
        raise BadInput(f"no inputs: {file} has no '# inputs: A=float32[8] N=8' header "
                       "(or give --inputs)")
    arrays, scalars = make_inputs(spec) if spec is not None else ({}, {})
    return fn, arrays, scalars, spec is not None


def check(file: str, o: CheckOptions) -> CheckReport:
    from gpusem.interpreter.appy.legality import check_legal
    from gpusem.typing_rules.appy.legality import check_static

    fn, arrays, scalars, dynamic = _load(file, o.inputs, need_inputs=False)
    errors: tuple[IllTyped, ...] = ()
    if dynamic:
        v = check_legal(fn, arrays, scalars)
        ok, rule, msg, kind = v.legal, v.rule, v.message, v.kind
    else:
        try:
            check_static(fn)
            ok, rule, msg, kind = True, "", "", "legal"
        except IllTyped as error:
            ok, rule, msg, kind = False, error.rule, error.one_line(), "illegal"
            errors = (error,)
    if kind == "bad-input":
        raise BadInput(msg)
    summary = (f"ok: legal: {fn.name} ({len(fn.params)} parameters; static rules"
               + (" and the dynamic rules on the inputs)" if dynamic else
                  "; no inputs, dynamic rules not run)"))
    doc = {"file": file, "ok": ok, "kind": kind, "rule": rule, "message": msg,
           "dynamic": dynamic}
    if o.as_json:
        shown = out(json.dumps(doc, indent=2))
    else:
        shown = out(summary) if ok else err(msg)
    return CheckReport(file, "appy", 0 if ok else 1, (shown,), ok=ok, errors=errors,
                       doc=doc)


def run(file: str, o: RunOptions) -> RunReport:
    from gpusem.interpreter.appy.sequential import run_sequential

    fn, arrays, scalars, _ = _load(file, o.inputs, need_inputs=True)
    try:
        arrays_out = run_sequential(fn, arrays, scalars, max_steps=o.max_steps)
    except Trap as error:
        shown = (out(json.dumps({"outcome": "trap", "rule": error.rule,
                                 "message": error.one_line()})) if o.as_json
                 else err(f"trap: {error.one_line()}"))
        return RunReport(file, "appy", 1, (shown,), outcome="trap")
    memory = {k: v.tolist() for k, v in arrays_out.items()}
    if o.as_json:
        shown_all: tuple[Chunk, ...] = (out(json.dumps({"outcome": "terminated",
                                                        "arrays": memory})),)
    else:
        with np.printoptions(threshold=64, linewidth=100):
            shown_all = tuple(
                out(f"{name} = {value.tolist() if value.size <= 64 else value}")
                for name, value in arrays_out.items())
        shown_all += (out("terminated (the sequential reading)"),)
    return RunReport(file, "appy", 0, shown_all, outcome="terminated", memory=memory)


def exec_(file: str, o: ExecOptions) -> ExecReport:
    from gpusem.calculus.appy.printer import print_program
    from gpusem.fuzz.appy.target import AppyTarget
    from gpusem.interpreter.appy.legality import check_legal

    if o.backend != "cpu":
        raise BadInput(f"exec: APPy files run on the cpu backend here (the cuda "
                       f"backend is the campaign's: gpusem fuzz --target appy "
                       f"--backend cuda): {file}")
    fn, arrays, scalars, _ = _load(file, o.inputs, need_inputs=True)
    v = check_legal(fn, arrays, scalars)  # on the file itself: its lines in messages
    if v.kind == "bad-input":
        raise BadInput(v.message)
    if not v.legal:
        doc: dict[str, object] = {"file": file, "verdict": "not compared",
                                  "status": "invalid", "kind": v.kind,
                                  "detail": v.message}
        shown = out(json.dumps(doc, indent=2) if o.as_json
                    else f"not compared: {v.message}")
        return ExecReport(file, "appy", 1, (shown,), kind="not compared", doc=doc)
    target = AppyTarget("cpu", timeout=60.0)
    try:
        res = target.check_source(print_program(fn), arrays, scalars)
    finally:
        target.close()
    verdict = {"pass": "agree", "finding": "disagree", "invalid": "not compared",
               "skip": "not compared"}[res.status]
    doc = {"file": file, "verdict": verdict, "status": res.status,
           "signature": res.signature, "kind": res.kind, "detail": res.detail}
    if o.as_json:
        shown = out(json.dumps(doc, indent=2))
    elif res.status == "pass":
        shown = out(f"agree: appyc (cpu backend, Triton's interpreter) computes the "
                    f"sequential reading of {fn.name}")
    elif res.status == "finding":
        shown = out(f"disagree: {res.signature}: {res.detail}")
    else:
        shown = out(f"not compared: {res.detail}")
    agree = res.status == "pass"
    return ExecReport(file, "appy", 0 if agree else 1, (shown,), agree=agree,
                      kind=verdict, doc=doc)


LANGUAGES = (Language("appy", (".py",), parse_program, check=check, run=run,
                      exec=exec_),)

__all__ = ["LANGUAGES"]
