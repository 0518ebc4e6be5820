"""`gpusem synccheck FILE -D N=256`: GPU IR -> AMIR (Figure 5) -> the abstract machine
(Section 5.3 of Exo-GPU): does the program's parallel reading equal its sequential one?
A `.amir` file (an AMIR-level program, Figure 4's printed form) goes to the machine
directly, with the same exit codes and diagnostics (`gpusem.api.synccheck_file`).

Exit codes (DESIGN.md): 0 accepted, 1 rejected (a failing Check, or a front-end
analysis error), 2 bad input (one line, no traceback).

A rejection reads like a compiler diagnostic: the failing check, the variable and index,
the timelines, the threads (task, thread) of both sides, and the source lines of BOTH
conflicting accesses (each AMIR record keeps the GPU IR span of the access that made
it). Control values come from `-D NAME=INT`, over the defaults of a `# defines:` header
line in the file.
"""

from __future__ import annotations

import click
from gpusem import api
from gpusem.cli.common import show


@click.command(name="synccheck")
@click.argument("file", type=click.Path())
@click.option("-D", "defines", multiple=True, metavar="NAME=INT",
              help="Control values (over the file's `# defines:` header).")
@click.option("--proc", "proc_name", default=None, metavar="NAME",
              help="The procedure to check (default: the file's last one).")
@click.option("--rules", type=click.Choice(["fixed", "paper"]), default="fixed",
              show_default=True,
              help="Corrected (fixed) conversion and timelines, or as printed (paper); "
                   ".amir files have no conversion and ignore it.")
@click.option("--print-amir", is_flag=True, help="Print the AMIR program first.")
@click.option("--max-steps", type=int, default=200_000_000, show_default=True,
              help="Budget of AMIR statement executions.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable verdict.")
@click.option("--reference", is_flag=True,
              help="Run the reference machine on every task (the definition; the "
                   "default machine decides symmetric kernels from their first task, "
                   "with the same verdict).")
@click.option("--symbolic", default=None, metavar="N,K,...",
              help="Check these size parameters over every size their "
                   "preconditions admit: 'ok (proved for all ...)' (exit 0), "
                   "'refuted' with a size to replay with -D, or 'unproved' with the "
                   "reason (exit 1 for both).")
@click.option("--assume", multiple=True, metavar="EXPR",
              help="A precondition of the symbolic sizes, e.g. 'N % 256 == 0'.")
@click.option("--up-to", type=int, default=4096, show_default=True,
              help="With --symbolic: the largest value tried per size.")
@click.option("--sizes", type=int, default=12, show_default=True,
              help="With --symbolic: how many sizes to try at most.")
def command(file: str, defines: tuple[str, ...], proc_name: str | None, rules: str,
            print_amir: bool, max_steps: int, as_json: bool, reference: bool,
            symbolic: str | None, assume: tuple[str, ...], up_to: int,
            sizes: int) -> None:
    """GPU IR (or AMIR) -> synchronisation check (exit 0 accepted, 1 rejected)."""
    names = tuple(n.strip() for n in symbolic.split(",")) if symbolic else ()
    show(api.synccheck_file(file, api.SyncOptions(defines, proc_name, rules,
                                                  print_amir, max_steps, as_json,
                                                  reference, names, assume, up_to,
                                                  sizes)))
