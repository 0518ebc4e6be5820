"""`gpusem run FILE`: interpret a `.bundl` program with the small-step semantics
(Appendix A.3 of the Prism paper), or an APPy file with its sequential reading, and
print its final memory and how it ended (`gpusem.api.run_file`).

Exit codes (DESIGN.md): 0 terminated, 1 stuck, deadlock or a trap, 2 bad input or
step budget exhausted (one line, no traceback).
"""

from __future__ import annotations

import click
from gpusem import api
from gpusem.cli.common import show


@click.command(name="run")
@click.argument("file", type=click.Path())
@click.option("--schedule", default="rr", show_default=True,
              metavar="rr|random:SEED|exhaustive",
              help="Which thread S-Program steps next (.bundl); for .cyp, rr is the "
              "sequential reading and program|latest|random:SEED|exhaustive an order "
              "of the event IR.")
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
    show(api.run_file(file, api.RunOptions(schedule, max_steps, rules, blocks, threads,
                                           big_step, check_preservation, as_json,
                                           inputs)))
