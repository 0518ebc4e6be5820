"""`gpusem reduce FILE --property P | --command CMD`: shrink a user's own failing Bundl
program with the fuzzer's passes (issue 18), as C-Reduce does with an interestingness
test. A `.cu` FILE (a bundle's `repro.cu`) is shrunk as CUDA text instead (issue 23):
`--command`/`--test`, `--keep-exit`, `--keep-ptx`, `--keep-ptx-check` or
`--keep-attribution` says what must stay true. A bundle folder, of any target (a
plugin's too), or a program file of another target (`.gpuir`, `.ck`, or any with
`--target`) is shrunk by that target's own reducer (issue 32.8). Progress lines on
stderr every ~30 s ($GPUSEM_PROGRESS_EVERY_S)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Self

import click

# program files of targets other than bundl, by suffix (others: --target)
SUFFIX_TARGETS = {".gpuir": "gpuir", ".ck": "ckernel"}


@click.command("reduce")
@click.argument("file", type=click.Path())
@click.option("--target", default=None, help="The target whose reducer shrinks FILE "
              "(a bundle says its own; .gpuir: gpuir, .ck: ckernel).")
@click.option("--property", "prop", default=None,
              help="Keep the program failing this bundl property (compile, motion, "
              "soundness, ...) with the same signature.")
@click.option("--command", "--test", "cmd", default=None,
              help="Keep it interesting for this shell command, run in a scratch "
              "folder holding the candidate under FILE's name: exit 0 = interesting.")
@click.option("--keep-exit", type=int, default=None,
              help=".cu: nvcc builds it, it exits with this status (1: the wrong "
              "answer still shows) and prints the input's last line again (its "
              "mismatch report). Needs a GPU.")
@click.option("--sanitize", is_flag=True,
              help=".cu with --keep-exit: refuse candidates compute-sanitizer's "
              "memcheck flags.")
@click.option("--keep-ptx", default=None, metavar="REGEX",
              help=".cu: its `nvcc -ptx` output still matches this regular expression.")
@click.option("--keep-ptx-check", default=None, metavar="CHECK",
              help=".cu: the static PTX checker still fails this check.")
@click.option("--keep-attribution", default=None, metavar="VERDICT",
              help=".cu: the attribution still names this component.")
@click.option("--no-guards", is_flag=True,
              help=".cu: do not require that candidates build alone with nvcc and "
              "keep main's check.")
@click.option("--engine", type=click.Choice(["own", "cvise"]), default="own",
              show_default=True, help=".cu: our passes, or C-Vise first (installed).")
@click.option("--backend", default="cpu", show_default=True)
@click.option("--budget", default="5m", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the reduced program here (default: FILE.reduced.bundl, "
              "FILE.reduced.cu).")
def command(file: str, target: str | None, prop: str | None, cmd: str | None,
            keep_exit: int | None, sanitize: bool, keep_ptx: str | None,
            keep_ptx_check: str | None, keep_attribution: str | None,
            no_guards: bool, engine: str, backend: str, budget: str,
            output: str | None) -> None:
    """Shrink FILE (a program, a repro.cu, or a bundle folder of any target) while
    it stays interesting; write the smallest program found."""
    from gpusem import api
    from gpusem.api import BadInput
    from gpusem.cli.fuzz import parse_budget

    path = Path(file)
    if path.is_dir() or (target is not None and not file.endswith((".bundl", ".cu"))) \
            or path.suffix in SUFFIX_TARGETS:
        if cmd is not None or any(x is not None for x in (keep_exit, keep_ptx,
                                                          keep_ptx_check,
                                                          keep_attribution)):
            raise BadInput("reduce: a bundle or a non-Bundl program is reduced by its "
                           "target's reducer (--property), not --command/--keep-*")
        _reduce_by_target(path, target or SUFFIX_TARGETS.get(path.suffix), prop,
                          backend, parse_budget(budget), output)
        return

    cuda_only = (keep_exit, keep_ptx, keep_ptx_check, keep_attribution)
    if file.endswith(".cu"):
        if prop is not None:
            raise BadInput("reduce: --property is for Bundl programs; a .cu file takes "
                           "--command, --keep-exit, --keep-ptx, --keep-ptx-check or "
                           "--keep-attribution")
        _reduce_cu(file, cmd, keep_exit, sanitize, keep_ptx, keep_ptx_check,
                   keep_attribution, not no_guards, engine, parse_budget(budget),
                   output)
        return
    if any(x is not None for x in cuda_only):
        raise BadInput("reduce: --keep-* options are for .cu files")
    program = api.load(file)
    lines = _Lines("statements")
    r = api.reduce(program, prop, cmd, backend, parse_budget(budget),
                   file_name=Path(file).name, on_progress=lines.tick)
    lines.close()
    out = Path(output) if output else Path(file).with_suffix(".reduced.bundl")
    out.write_text(r.text)
    click.echo(f"wrote {out}: {r.before} -> {r.after} statements ({r.signature}; "
               f"{r.tried} candidates, {r.seconds:.0f} s)")


def _reduce_by_target(path: Path, target: str | None, prop: str | None,
                      backend: str, budget_s: float, output: str | None) -> None:
    """A bundle folder (its own target), or a program file of `target`."""
    from gpusem import api
    from gpusem.api import BadInput, write_output

    lines = _Lines("")
    if path.is_dir():
        r = api.reduce_bundle(path, prop, None if backend == "cpu" else backend,
                              budget_s, lines.tick)
    else:
        if target is None:
            raise BadInput(f"reduce: which target's program is {path.name}? (--target)")
        r = api.reduce_program_file(target, f"program{path.suffix}",
                                    api.read_source(str(path)), prop, backend,
                                    budget_s, lines.tick)
    lines.close()
    if path.is_dir():
        out = Path(output) if output else path.with_name(path.name + ".reduced")
        out.mkdir(parents=True, exist_ok=True)
        for name, text in sorted(r.files.items()):
            write_output(str(out / name), text)
    else:
        out = Path(output) if output else path.with_suffix(f".reduced{path.suffix}")
        write_output(str(out), r.files.get(f"program{path.suffix}", ""))
    click.echo(f"wrote {out}: {r.before} -> {r.after} ({r.target}:{r.prop}, "
               f"{r.signature}; {r.checks} checks, {r.seconds:.0f} s)")


class _Lines:
    """A plain progress line on stderr every ~30 s ($GPUSEM_PROGRESS_EVERY_S), and a
    last one: a reduction of minutes said nothing before (issue 32.8)."""

    def __init__(self, unit: str) -> None:
        from gpusem import api

        self.unit, self.every_s = unit, api.progress_every_s()
        self.last, self.latest = time.monotonic(), None

    def tick(self, p) -> None:  # a fuzz.reduce.ReduceProgress
        self.latest = p
        if time.monotonic() - self.last >= self.every_s:
            self.last = time.monotonic()
            self._line(p)

    def close(self) -> None:
        if self.latest is not None:
            self._line(self.latest)

    def _line(self, p) -> None:
        unit = f" {self.unit}" if self.unit else ""
        click.echo(f"reduce: {p.elapsed_s:.0f} s, {p.checks} checks, smallest "
                   f"{p.start_size} -> {p.size}{unit}", err=True)


def _reduce_cu(file: str, cmd: str | None, keep_exit: int | None, sanitize: bool,
               keep_ptx: str | None, keep_ptx_check: str | None,
               keep_attribution: str | None, guards: bool, engine: str,
               budget_s: float, output: str | None) -> None:
    from gpusem import api
    from gpusem.api import write_output

    with _Progress(budget_s) as progress:
        r = api.reduce_cuda(file, command=cmd, keep_exit=keep_exit,
                            keep_ptx=keep_ptx, keep_ptx_check=keep_ptx_check,
                            keep_attribution=keep_attribution, sanitize=sanitize,
                            guards=guards, engine=engine, budget_s=budget_s,
                            on_progress=progress.tick)
    out = Path(output) if output else Path(file).with_suffix(".reduced.cu")
    write_output(str(out), r.text)
    for off in r.guards_off:
        click.echo(f"guard off (the input fails it): {off}", err=True)
    click.echo(f"wrote {out}: {r.lines_before} -> {r.lines_after} lines ({r.tests} "
               f"candidates tested, {r.rounds} rounds, {r.seconds:.0f} s, "
               f"stopped at the {r.stopped})")


class _Progress:
    """A rich bar on a terminal; otherwise one plain line on stderr every ~30 s."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s, self.last = budget_s, time.monotonic()
        self.bar = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("[bold]reduce[/] round {task.fields[round]}"),
                TextColumn("{task.fields[pass_name]}"), BarColumn(),
                TextColumn("{task.fields[lines]} lines"),
                TextColumn("{task.fields[tests]} tests"), TimeElapsedColumn(),
                console=Console(stderr=True), transient=False)
            self.task = self.bar.add_task("reduce", total=budget_s, round=0,
                                          pass_name="", lines=0, tests=0)

    def __enter__(self) -> Self:
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)

    def tick(self, p) -> None:  # a fuzz.cuda_reduce.reducer.Progress
        if self.bar is not None:
            self.bar.update(self.task, completed=min(p.elapsed_s, self.budget_s),
                            round=p.round, pass_name=p.pass_name, lines=p.lines,
                            tests=p.tests)
        elif time.monotonic() - self.last >= 30:
            self.last = time.monotonic()
            click.echo(f"reduce: {p.elapsed_s:.0f} s, round {p.round}, "
                       f"{p.pass_name}: {p.lines} lines, {p.tests} tests", err=True)
