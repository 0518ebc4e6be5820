"""Cypress (`.cyp`, seed 001, issue 30) in the language registry: `check` (the reader,
the static legality rules of Sec. 3.2-3.3, and with inputs the rules on the
instantiated task tree, which it prints) and `run` (the sequential reading
seq(program, mapping) of l.163 on the file's inputs, after the same check). The file
is read with Python's `ast`, never run; `.cyp` because APPy owns `.py`.

`run --schedule program|latest|random:SEED|exhaustive` runs the event machine (Fig. 7)
on the IR of our dependence analysis (Sec. 4.2.1) instead, after its race check.

Exit codes: check 0 legal, 1 illegal; run 0 terminated, 1 illegal or a trap (a leaf's
shapes, an inexact `/`, `call_external`'s missing meaning, a prange whose iterations
interfere) or a race, 2 bad input or the launch budget."""

from __future__ import annotations

import json

import numpy as np
from gpusem.api.languages import Language
from gpusem.api.options import CheckOptions, RunOptions
from gpusem.api.results import CheckReport, Chunk, RunReport, err, out
from gpusem.calculus.cypress.ast import Program
from gpusem.calculus.cypress.inputs import header_inputs, make_inputs
from gpusem.calculus.cypress.reader import read_program
from gpusem.calculus.errors import IllTyped, Trap
from gpusem.calculus.source import read_source

Loaded = tuple[Program, dict[str, np.ndarray], dict[str, int], bool]


def _load(file: str, spec: str | None) -> Loaded:
    text = read_source(file)
    program = read_program(text, file)
    spec = spec if spec is not None else header_inputs(text)
    arrays, scalars = make_inputs(spec) if spec is not None else ({}, {})
    return program, arrays, scalars, spec is not None


def _legality(program: Program, arrays: dict[str, np.ndarray], scalars: dict[str, int],
              with_tree: bool) -> tuple[list[IllTyped], list[str]]:
    """Every violation (static rules, then the tree's), and the printed task tree."""
    from gpusem.interpreter.cypress.tree import check_tree, print_tree, task_tree
    from gpusem.typing_rules.cypress import check_program

    errors = check_program(program)
    if errors or not with_tree:
        return errors, []
    try:
        root = task_tree(program, arrays, scalars)
    except (IllTyped, Trap) as error:
        return [IllTyped(error.message, rule=error.rule, span=error.span)], []
    return check_tree(root), print_tree(root)


def check(file: str, o: CheckOptions) -> CheckReport:
    program, arrays, scalars, have_inputs = _load(file, o.inputs)
    errors, tree = _legality(program, arrays, scalars, have_inputs)
    ok = not errors
    doc = {"file": file, "ok": ok, "rules": [e.rule for e in errors],
           "messages": [e.one_line() for e in errors], "tree": tree}
    if o.as_json:
        shown: tuple[Chunk, ...] = (out(json.dumps(doc, indent=2)),)
    elif ok:
        shown = (out(f"ok: legal: {len(program.variants)} variants, "
                     f"{len(program.mappings)} instances"
                     + ("; the instantiated task tree:" if tree else
                        " (no inputs: the rules on the task tree not run)")),)
        shown += tuple(out(line) for line in tree)
    else:
        shown = tuple(err(e.one_line()) for e in errors)
    return CheckReport(file, "cypress", 0 if ok else 1, shown, ok=ok,
                       errors=tuple(errors), doc=doc)


def run(file: str, o: RunOptions) -> RunReport:
    from gpusem.interpreter.cypress.seq import seq

    program, arrays, scalars, have_inputs = _load(file, o.inputs)
    if not have_inputs:
        from gpusem.calculus.errors import BadInput

        raise BadInput(f"no inputs: {file} has no '# inputs: A=float32[64,64]' header "
                       "(or give --inputs)")
    errors, _ = _legality(program, arrays, scalars, with_tree=True)
    if errors:
        shown = tuple(err(e.one_line()) for e in errors)
        return RunReport(file, "cypress", 1, shown, outcome="illegal")
    if o.schedule != "rr":
        return _run_events(file, program, arrays, scalars, o)
    try:
        result, reading = seq(program, arrays, scalars, max_launches=o.max_steps)
    except (Trap, IllTyped) as error:
        outcome = "trap" if isinstance(error, Trap) else "illegal"
        shown_one = (out(json.dumps({"outcome": outcome, "rule": error.rule,
                                     "message": error.one_line()})) if o.as_json
                     else err(f"{outcome}: {error.one_line()}"))
        return RunReport(file, "cypress", 1, (shown_one,), outcome=outcome)
    return _terminated(file, result, o, reading.launches,
                       f"the sequential reading: {reading.launches} task launches, "
                       f"{reading.leaf_ops} leaf operations",
                       {"launches": reading.launches, "leaf_ops": reading.leaf_ops})


def _terminated(file: str, result: dict[str, np.ndarray], o: RunOptions, steps: int,
                how: str, extra: dict[str, object]) -> RunReport:
    memory = {k: v.tolist() for k, v in result.items()}
    if o.as_json:
        shown_all: tuple[Chunk, ...] = (out(json.dumps(
            {"outcome": "terminated", "arrays": memory, **extra})),)
    else:
        with np.printoptions(threshold=64, linewidth=100, edgeitems=3):
            shown_all = tuple(
                out(f"{name} = {value.dtype}{list(value.shape)} "
                    f"(sum {value.sum().item():g})\n{value}" if value.size > 64
                    else f"{name} = {value.tolist()}")
                for name, value in result.items())
        shown_all += (out(f"terminated ({how})"),)
    return RunReport(file, "cypress", 0, shown_all, outcome="terminated",
                     memory=memory, steps=steps)


def _run_events(file: str, program: Program, arrays: dict[str, np.ndarray],
                scalars: dict[str, int], o: RunOptions) -> RunReport:
    """`--schedule program|latest|random:SEED|exhaustive`: the event machine (Fig. 7)
    on the IR of our dependence analysis (Sec. 4.2.1), after its race check."""
    from gpusem.calculus.errors import BadInput
    from gpusem.compiler.cypress_cuda.dependence import dependence_analysis
    from gpusem.interpreter.cypress import events

    s = o.schedule
    valid = s in ("program", "latest", "exhaustive") or (
        s.startswith("random:") and s[7:].isdigit())
    if not valid:
        raise BadInput(f"unknown schedule: {s} (.cyp: rr, the sequential reading; "
                       "program, latest, random:SEED or exhaustive, an order of the "
                       "event IR)")
    ir = dependence_analysis(program, arrays, scalars)
    inst = events.instantiate(ir, program, arrays, max_nodes=o.max_steps)
    found = events.races(inst)
    if found:
        shown = (out(json.dumps({"outcome": "race", "message": str(found[0])}))
                 if o.as_json else err(f"{file}: {found[0]}"))
        return RunReport(file, "cypress", 1, (shown,), outcome="race")
    if s == "exhaustive":
        if len(inst.nodes) > 9:
            raise BadInput(f"exhaustive: {len(inst.nodes)} operations have too many "
                           "orders; at most 9 (use random:SEED)")
        results = [events.run_order(inst, order)   # each from the initial storage
                   for order in events.every_order(inst, limit=400_000)]
        if any(not all(np.array_equal(r[k], results[0][k], equal_nan=True) for k in r)
               for r in results):
            shown = err(f"{file}: two orders of the event IR end differently")
            return RunReport(file, "cypress", 1, (shown,), outcome="nondeterministic")
        result, how = results[0], f"the event machine: all {len(results)} orders agree"
    else:
        result = events.run_order(inst, events.orders(inst, s))
        how = f"the event machine, schedule {s}: {len(inst.nodes)} operations, no race"
    return _terminated(file, result, o, len(inst.nodes), how,
                       {"operations": len(inst.nodes), "schedule": s})


LANGUAGES = (Language("cypress", (".cyp",), read_program, check=check, run=run),)

__all__ = ["LANGUAGES"]
