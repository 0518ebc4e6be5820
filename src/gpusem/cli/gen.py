"""`gpusem gen --target T -n N --seed S DIR`: write N generated programs (issue 18)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("gen")
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--target", default="bundl", show_default=True)
@click.option("--property", "prop", default=None,
              help="Whose generator (default: the target's first property).")
@click.option("-n", "count", default=10, show_default=True, type=click.IntRange(0))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--generation", default=None, help="How programs are drawn: direct or "
              "engine (default: the campaigns' default, `gpusem fuzz --help`); the "
              "same seed draws other programs in each.")
@click.option("--force", is_flag=True, help="Write into OUT_DIR even when it holds "
              "files (those with the same names are overwritten).")
def command(out_dir: str, target: str, prop: str | None, count: int, seed: int,
            generation: str | None, force: bool) -> None:
    """Write COUNT programs of TARGET's generator into OUT_DIR (well-typed for bundl;
    deterministic from --seed). A folder that holds anything is refused (exit 2)
    unless --force: the programs of another seed or target would be overwritten or
    mixed in."""
    from gpusem import api

    out = Path(out_dir)
    if not force and out.is_dir() and any(out.iterdir()):
        raise api.BadInput(f"{out}: folder not empty (gen would overwrite or mix in "
                           "its programs; --force writes anyway)")
    out.mkdir(parents=True, exist_ok=True)
    files = api.generate(target, count, seed, prop, generation=generation)
    for name, text in files:
        (out / name).write_text(text)
    click.echo(f"wrote {len(files)} programs to {out}")
