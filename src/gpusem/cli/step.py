"""`gpusem step FILE`: the step-through semantic debugger (issue 6).

An interactive session (the standard library's `cmd`, with readline history and
completion) over the session `gpusem.api.step_file` opens for the file's language: a
`.bundl` under the small-step semantics, rule by rule (after every step the rule
applied with its congruence chain, the thread (t, b, p) and its perspective, the redex
marked in the program text); a `.gpuir` as its AMIR program, statement by statement
(the visibility records and the failing check); a `.lcu` rule by rule under Sec
6.2 of seed 002, each step named after its rule. `--commands "step 10; threads"` runs
a script instead, with an honest exit code (cli/debugger_shell.py; docs/debugger.md),
and `--trace FILE` writes the full trace.
"""

from __future__ import annotations

import click
from gpusem import api
from gpusem.cli.debugger_shell import run_session

EXIT_CODES = """\b
Exit codes of a scripted session (--commands):
  0  the program ran to its end, or the script stopped it early
  1  stuck, deadlocked, trapped, or a check rejected it
  2  bad input (an unknown or malformed command included) or a budget ran out
  3  an internal error of gpusem
"""


@click.command("step", epilog=EXIT_CODES)
@click.argument("file", type=click.Path())
@click.option("--blocks", type=int, help="Override the program's B.")
@click.option("--threads", type=int, help="Override the program's T.")
@click.option("--rules", type=click.Choice(["fixed", "paper"]), default="fixed",
              show_default=True)
@click.option("--schedule", default="rr", show_default=True,
              help="rr | random:SEED")
@click.option("--commands", help='Run these ";"-separated commands, then exit.')
@click.option("--trace", type=click.Path(), help="Write the full rule trace here.")
@click.option("-D", "defines", multiple=True, metavar="NAME=INT",
              help=".gpuir: control values (over the file's `# defines:` header).")
@click.option("--proc", "proc_name", default=None, metavar="NAME",
              help=".gpuir: the procedure to step (default: the file's last one).")
@click.option("--max-steps", type=int, default=None,
              help="Step budget of the session (default: as `run`, 1000000 for a "
              ".bundl or .lcu; as `synccheck`, 200000000 AMIR statements for a "
              ".gpuir).")
def command(file: str, blocks: int | None, threads: int | None, rules: str,
            schedule: str, commands: str | None, trace: str | None,
            defines: tuple[str, ...], proc_name: str | None,
            max_steps: int | None) -> None:
    """Step through FILE's meaning: a .bundl file under the small-step semantics, rule
    by rule; a .gpuir file as its AMIR program (-D N=...), statement by statement; a
    .lcu file under lambda-cu's rules (Sec 6.2), one named rule application a step."""
    debugger = api.step_file(file, api.StepOptions(rules, blocks, threads, schedule,
                                                   defines, proc_name, max_steps))
    run_session(debugger, commands, trace=trace)
