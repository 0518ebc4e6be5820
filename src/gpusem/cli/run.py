"""`gpusem run FILE`: interpret a `.bundl` program with the small-step semantics
(Appendix A.3 of the Prism paper) and print its final global memory and how it ended.

Exit codes (DESIGN.md): 0 terminated, 1 stuck or deadlock, 2 bad input or step budget
exhausted (one line, no traceback).
"""

from __future__ import annotations

import json
import sys

import click
from gpusem.calculus.errors import BadInput
from gpusem.calculus.source import language_of, read_source

EXIT = {"terminated": 0, "stuck": 1, "deadlock": 1, "budget": 2}


@click.command(name="run")
@click.argument("file", type=click.Path())
@click.option("--schedule", default="rr", show_default=True,
              metavar="rr|random:SEED|exhaustive",
              help="Which thread S-Program steps next.")
@click.option("--max-steps", type=int, default=1_000_000, show_default=True,
              help="Step budget (transitions explored, for exhaustive).")
@click.option("--rules", type=click.Choice(["fixed", "paper"]), default="fixed",
              show_default=True, help="Corrected (fixed) or as-printed (paper) rules.")
@click.option("--blocks", type=int, default=None, help="Override B (machine blocks).")
@click.option("--threads", type=int, default=None,
              help="Override T (threads per block).")
@click.option("--big-step", is_flag=True,
              help="Use the vectorised big-step evaluator (fixed rules, one schedule).")
@click.option("--check-preservation", is_flag=True,
              help="Re-type-check each thread's term after every step (Lemma A.8).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--inputs", "inputs", default=None, metavar="SPEC",
              help=".py (APPy): the inputs, e.g. 'A=float32[8] N=8' (default: the "
              "file's '# inputs:' header).")
def command(file: str, schedule: str, max_steps: int, rules: str, blocks: int | None,
            threads: int | None, big_step: bool, check_preservation: bool,
            as_json: bool, inputs: str | None = None) -> None:
    """Interpret a program and print its final global memory (.bundl: the small-step
    semantics; .py: APPy's sequential reading)."""
    if max_steps <= 0:
        raise BadInput(f"--max-steps out of range: {max_steps}")
    if language_of(file) == "appy":
        from gpusem.cli.appy_verbs import run_appy

        run_appy(file, inputs, max_steps, as_json)
        return
    if language_of(file) != "bundl":
        raise BadInput(f"run interprets .bundl and .py (APPy) files only: {file}")
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.interpreter.bundl.schedulers import check_schedule

    check_schedule(schedule)

    prog = parse_program(read_source(file), file)
    if big_step:
        from gpusem.interpreter.bundl.big_step import run_big_step

        out = run_big_step(prog, max_steps=max_steps, rules=rules, blocks=blocks,
                           threads=threads)
    else:
        from gpusem.interpreter.bundl.schedulers import run_program

        check = None
        if check_preservation:
            from gpusem.interpreter.bundl.preservation import preservation_check

            check = preservation_check(prog, rules)
        out = run_program(prog, schedule, max_steps, rules, blocks=blocks,
                          threads=threads, check=check)
    if as_json:
        click.echo(json.dumps(_as_json(out)))
    else:
        _print(out, schedule)
    sys.exit(EXIT[out.kind])


def _as_json(out) -> dict:
    doc = {"outcome": out.kind, "globals": out.globals, "steps": out.steps}
    if out.kind != "terminated":
        span = getattr(out.error, "span", None)
        doc.update(rule=out.rule, message=out.message,
                   thread=list(out.thread) if out.thread else None, trap=out.trap,
                   where=str(span) if span is not None and span.line else None)
    if out.final_memories:
        doc["final_memories"] = out.final_memories
        doc["states"] = out.states
    if out.bad_schedule is not None:
        doc["bad_schedule"] = out.bad_schedule
    return doc


def _print(out, schedule: str) -> None:
    for name, values in out.globals.items():
        click.echo(f"{name} = {values}")
    if out.kind == "terminated":
        extra = ""
        if schedule == "exhaustive":
            extra = (f"; {len(out.final_memories)} distinct final memories over "
                     f"{out.states} states")
        click.echo(f"terminated after {out.steps} steps{extra}")
        for i, mem in enumerate(out.final_memories[1:], 2):
            click.echo(f"  final memory {i}: {mem}")
        return
    err = out.error
    line = out.message
    if err is not None and hasattr(err, "one_line"):
        line = err.one_line()
    click.echo(f"{out.kind} after {out.steps} steps: {line}", err=True)
    if out.bad_schedule is not None:
        click.echo(f"schedule (thread indices): {out.bad_schedule}", err=True)
