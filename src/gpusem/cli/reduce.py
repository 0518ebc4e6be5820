"""`gpusem reduce FILE --property P | --command CMD`: shrink a user's own failing Bundl
program with the fuzzer's passes (issue 18), as C-Reduce does with an interestingness
test."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("reduce")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--property", "prop", default=None,
              help="Keep the program failing this bundl property (compile, motion, "
              "soundness, ...) with the same signature.")
@click.option("--command", "cmd", default=None,
              help="Keep it interesting for this shell command, run in a scratch "
              "folder holding the candidate under FILE's name: exit 0 = interesting.")
@click.option("--backend", default="cpu", show_default=True)
@click.option("--budget", default="5m", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the reduced program here (default: FILE.reduced.bundl).")
def command(file: str, prop: str | None, cmd: str | None, backend: str, budget: str,
            output: str | None) -> None:
    """Shrink FILE while it stays interesting; write the smallest program found."""
    from gpusem import api
    from gpusem.cli.fuzz import parse_budget

    program = api.load(file)
    r = api.reduce(program, prop, cmd, backend, parse_budget(budget),
                   file_name=Path(file).name)
    out = Path(output) if output else Path(file).with_suffix(".reduced.bundl")
    out.write_text(r.text)
    click.echo(f"wrote {out}: {r.before} -> {r.after} statements ({r.signature}; "
               f"{r.tried} candidates, {r.seconds:.0f} s)")
