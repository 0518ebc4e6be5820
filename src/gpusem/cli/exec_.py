"""`gpusem exec FILE --backend cpu|cuda`: compile, run, compare with the interpreter
(`gpusem.api.exec_file`)."""

from __future__ import annotations

import click
from gpusem import api
from gpusem.cli.common import show


@click.command("exec")
@click.argument("file", type=click.Path())
@click.option("--backend", type=click.Choice(["cpu", "cuda"]), default="cpu",
              show_default=True)
@click.option("--schedules", default="0,1,2,3", show_default=True,
              help="cpu harness fibre orders to try (0 forward, 1 reverse, 2 random, "
              "3 forward with eager wake, >= 4 random with eager wake).")
@click.option("--no-sync-motion", is_flag=True, help="Compile without wait motion.")
@click.option("--sync", "sync", type=click.Choice(["naive", "motion", "prism"]),
              default=None, help=".bundl/.prism: barrier placement: naive (one at "
              "every partition's end), motion (wait motion, the default) or prism "
              "(Prism Sec. 5's rules 1 and 2); overrides --no-sync-motion.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable verdict.")
@click.option("-D", "defines", multiple=True, metavar="NAME=INT",
              help=".gpuir: control values (over the file's `# defines:` header).")
@click.option("--proc", "proc_name", default=None, help=".gpuir: the procedure.")
@click.option("--inputs", "inputs", default=None, metavar="SPEC",
              help=".py (APPy): the inputs, e.g. 'A=float32[8] N=8' (default: the "
              "file's '# inputs:' header).")
def command(file: str, backend: str, schedules: str, no_sync_motion: bool,
            as_json: bool, defines: tuple[str, ...] = (), proc_name: str | None = None,
            inputs: str | None = None, sync: str | None = None) -> None:
    """Run FILE's compiled kernel on BACKEND and the reference interpreter on the same
    inputs; print agree / disagree with the first differing cell. Exit 0 agree; 1
    disagree, the kernel failed, or not compared because the program traps,
    deadlocks or is not proved race-free; 2 bad input or a budget exhausted; 3
    the interpreter got stuck on a well-typed program (a soundness bug of gpusem).
    APPy (.py): appyc on the cpu backend (Triton's interpreter) vs the sequential
    reading."""
    show(api.exec_file(file, api.ExecOptions(backend, schedules, not no_sync_motion,
                                             as_json, defines, proc_name, inputs,
                                             sync or "")))
