"""`gpusem check`/`run`/`exec` on an APPy file (`.py`), issue 17.

  check FILE.py   parse + the static legality rules; with inputs (the file's
                  `# inputs:` header or `--inputs`), the dynamic rules too, watching the
                  sequential reading. Exit 0 legal, 1 illegal (one line per error:
                  `file:line:col: [Legal-Rule] message`), 2 bad input.
  run FILE.py     the sequential reading (seed 003, Sections 3-4: plain NumPy) on the
                  inputs; prints every array. Exit 0 terminated, 1 a trap, 2 bad input
                  or the step budget exhausted.
  exec FILE.py    appyc (APPy -> Triton) on the cpu backend (Triton's interpreter) vs
                  the sequential reading, on the inputs. Exit 0 agree, 1 disagree, the
                  compiled program failed, or the program could not be compared
                  (illegal, not runnable here), 2 bad input (appyc missing included).
The file is parsed by gpusem and printed again before appyc sees it: nothing of its raw
text (decorators, annotations, defaults, other statements) is run.
"""

from __future__ import annotations

import json
import sys

import click
import numpy as np
from gpusem.calculus.appy.inputs import header_inputs, make_inputs
from gpusem.calculus.appy.parser import parse_program
from gpusem.calculus.errors import BadInput
from gpusem.calculus.source import read_source


def _load(file: str, spec: str | None, need_inputs: bool):
    text = read_source(file)
    fn = parse_program(text, file)
    spec = spec if spec is not None else header_inputs(text)
    if spec is None and need_inputs:
        raise BadInput(f"no inputs: {file} has no '# inputs: A=float32[8] N=8' header "
                       "(or give --inputs)")
    arrays, scalars = make_inputs(spec) if spec is not None else ({}, {})
    return fn, arrays, scalars, spec is not None


def check_appy(file: str, spec: str | None, as_json: bool) -> None:
    from gpusem.interpreter.appy.legality import check_legal
    from gpusem.typing_rules.appy.legality import check_static

    fn, arrays, scalars, dynamic = _load(file, spec, need_inputs=False)
    if dynamic:
        v = check_legal(fn, arrays, scalars)
        ok, rule, msg, kind = v.legal, v.rule, v.message, v.kind
    else:
        from gpusem.calculus.errors import IllTyped

        try:
            check_static(fn)
            ok, rule, msg, kind = True, "", "", "legal"
        except IllTyped as err:
            ok, rule, msg, kind = False, err.rule, err.one_line(), "illegal"
    if kind == "bad-input":
        raise BadInput(msg)
    summary = (f"ok: legal: {fn.name} ({len(fn.params)} parameters; static rules"
               + (" and the dynamic rules on the inputs)" if dynamic else
                  "; no inputs, dynamic rules not run)"))
    if as_json:
        click.echo(json.dumps({"file": file, "ok": ok, "kind": kind, "rule": rule,
                               "message": msg, "dynamic": dynamic}, indent=2))
    elif ok:
        click.echo(summary)
    else:
        click.echo(msg, err=True)
    if not ok:
        sys.exit(1)


def run_appy(file: str, spec: str | None, max_steps: int, as_json: bool) -> None:
    from gpusem.calculus.errors import Trap
    from gpusem.interpreter.appy.sequential import run_sequential

    fn, arrays, scalars, _ = _load(file, spec, need_inputs=True)
    try:
        out = run_sequential(fn, arrays, scalars, max_steps=max_steps)
    except Trap as err:
        if as_json:
            click.echo(json.dumps({"outcome": "trap", "rule": err.rule,
                                   "message": err.one_line()}))
        else:
            click.echo(f"trap: {err.one_line()}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps({"outcome": "terminated", "arrays": {
            k: v.tolist() for k, v in out.items()}}))
        return
    with np.printoptions(threshold=64, linewidth=100):
        for name, value in out.items():
            click.echo(f"{name} = {value.tolist() if value.size <= 64 else value}")
    click.echo("terminated (the sequential reading)")


def exec_appy(file: str, spec: str | None, as_json: bool) -> None:
    from gpusem.fuzz.appy.target import AppyTarget

    from gpusem.calculus.appy.printer import print_program
    from gpusem.interpreter.appy.legality import check_legal

    fn, arrays, scalars, _ = _load(file, spec, need_inputs=True)
    v = check_legal(fn, arrays, scalars)  # on the file itself: its lines in messages
    if v.kind == "bad-input":
        raise BadInput(v.message)
    if not v.legal:
        if as_json:
            click.echo(json.dumps({"file": file, "verdict": "not compared",
                                   "status": "invalid", "kind": v.kind,
                                   "detail": v.message}, indent=2))
        else:
            click.echo(f"not compared: {v.message}")
        sys.exit(1)
    target = AppyTarget("cpu", timeout=60.0)
    try:
        res = target.check_source(print_program(fn), arrays, scalars)
    finally:
        target.close()
    verdict = {"pass": "agree", "finding": "disagree", "invalid": "not compared",
               "skip": "not compared"}[res.status]
    if as_json:
        click.echo(json.dumps({"file": file, "verdict": verdict, "status": res.status,
                               "signature": res.signature, "kind": res.kind,
                               "detail": res.detail}, indent=2))
    elif res.status == "pass":
        click.echo(f"agree: appyc (cpu backend, Triton's interpreter) computes the "
                   f"sequential reading of {fn.name}")
    elif res.status == "finding":
        click.echo(f"disagree: {res.signature}: {res.detail}")
    else:
        click.echo(f"not compared: {res.detail}")
    sys.exit(0 if res.status == "pass" else 1)
