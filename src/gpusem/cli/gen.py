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
def command(out_dir: str, target: str, prop: str | None, count: int, seed: int) -> None:
    """Write COUNT programs of TARGET's generator into OUT_DIR (well-typed for bundl;
    deterministic from --seed)."""
    from gpusem import api

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = api.generate(target, count, seed, prop)
    for name, text in files:
        (out / name).write_text(text)
    click.echo(f"wrote {len(files)} programs to {out}")
