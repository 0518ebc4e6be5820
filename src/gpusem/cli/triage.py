"""`gpusem triage DIR...`: the bundles under DIR grouped by signature (issue 18)."""

from __future__ import annotations

import json

import click


@click.command("triage")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable rows.")
def command(dirs: tuple[str, ...], as_json: bool) -> None:
    """Group the bundles under DIRS (searched recursively) by signature: one row per
    distinct finding with how often it was seen, the smallest program and its bundles."""
    from dataclasses import asdict

    from gpusem import api

    rows = api.triage(dirs)
    if as_json:
        click.echo(json.dumps([asdict(r) for r in rows], indent=1))
        return
    click.echo("seen\tstmts\tkind\tattribution\tsignature\tbundle")
    for r in rows:
        more = f" (+{len(r.bundles) - 1} more)" if len(r.bundles) > 1 else ""
        click.echo(f"{r.sightings}\t{r.smallest}\t{r.kind}\t{r.attribution or '-'}\t"
                   f"{r.signature}\t{r.bundles[0]}{more}")
    groups: dict[str, list[str]] = {}
    for r in rows:
        groups.setdefault(r.cause or r.signature, []).append(r.signature)
    for cause, sigs in groups.items():
        if len(sigs) > 1:
            click.echo(f"cause {cause}: {len(sigs)} signatures, one bug: "
                       + ", ".join(sigs))
    click.echo(f"{len(rows)} distinct findings in "
               f"{sum(len(r.bundles) for r in rows)} bundles")
