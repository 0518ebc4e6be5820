"""`gpusem exec FILE --backend cpu|cuda`: compile, run, compare with the interpreter."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import click
from gpusem.calculus.errors import BadInput
from gpusem.calculus.source import language_of
from gpusem.cli.common import parse_defines


@click.command("exec")
@click.argument("file", type=click.Path())
@click.option("--backend", type=click.Choice(["cpu", "cuda"]), default="cpu",
              show_default=True)
@click.option("--schedules", default="0,1,2,3", show_default=True,
              help="cpu harness fibre orders to try (0 forward, 1 reverse, 2 random, "
              "3 forward with eager wake, >= 4 random with eager wake).")
@click.option("--no-sync-motion", is_flag=True, help="Compile without wait motion.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable verdict.")
@click.option("-D", "defines", multiple=True, metavar="NAME=INT",
              help=".gpuir: control values (over the file's `# defines:` header).")
@click.option("--proc", "proc_name", default=None, help=".gpuir: the procedure.")
@click.option("--inputs", "inputs", default=None, metavar="SPEC",
              help=".py (APPy): the inputs, e.g. 'A=float32[8] N=8' (default: the "
              "file's '# inputs:' header).")
def command(file: str, backend: str, schedules: str, no_sync_motion: bool,
            as_json: bool, defines: tuple[str, ...] = (), proc_name: str | None = None,
            inputs: str | None = None):
    """Run FILE's compiled kernel on BACKEND and the reference interpreter on the same
    inputs; print agree / disagree with the first differing cell. Exit 0 agree; 1
    disagree, the kernel failed, or not compared because the program traps,
    deadlocks or is not proved race-free; 2 bad input or a budget exhausted; 3
    the interpreter got stuck on a well-typed program (a soundness bug of gpusem).
    APPy (.py): appyc on the cpu backend (Triton's interpreter) vs the sequential
    reading."""
    if language_of(file) == "appy":
        if backend != "cpu":
            raise BadInput(f"exec: APPy files run on the cpu backend here (the cuda "
                           f"backend is the campaign's: gpusem fuzz --target appy "
                           f"--backend cuda): {file}")
        from gpusem.cli.appy_verbs import exec_appy

        return exec_appy(file, inputs, as_json)
    if language_of(file) == "gpuir":  # compared with the sequential reading
        try:
            seeds = tuple(int(s) for s in schedules.split(","))
        except ValueError:
            raise BadInput(f"bad --schedules: {schedules}") from None
        return exec_gpuir(file, parse_defines(defines), backend, seeds, as_json,
                            proc_name)
    if language_of(file) != "bundl":
        raise BadInput(f"exec: only .bundl, .gpuir and .py (APPy) files: {file}")
    from gpusem.fuzz.bundl.compile_property import check_file

    try:
        seeds = tuple(int(s) for s in schedules.split(","))
    except ValueError:
        raise BadInput(f"bad --schedules: {schedules}") from None
    verdict = check_file(file, backend, seeds, sync_motion=not no_sync_motion)
    if as_json:
        click.echo(json.dumps(verdict.as_dict(), indent=2))
    else:
        click.echo(verdict.describe())
    raise SystemExit(verdict.exit_code())


def exec_gpuir(path: str, defines: Mapping[str, int], backend: str,
                 seeds: tuple[int, ...], as_json: bool,
                 proc_name: str | None = None) -> None:
    """Compile, run on `backend` under `seeds`, compare with the sequential reading;
    exit 0 agree, 1 disagree or the kernel failed (unsupported included)."""
    from gpusem.compiler.gpuir_cuda.run import check_proc
    from gpusem.typing_rules.gpuir.frontend import load_proc

    proc, env, source = load_proc(path, defines, proc_name)
    verdict = check_proc(proc, env, backend, seeds, source=source,
                         file=Path(path).name)
    if as_json:
        click.echo(json.dumps(verdict.as_dict(), indent=2))
    else:
        click.echo(verdict.describe())
    raise SystemExit(0 if verdict.agree else 1)
