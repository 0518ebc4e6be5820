"""`gpusem triage DIR...`: the bundles under DIR grouped by signature (issue 18)."""

from __future__ import annotations

import json

import click


@click.command("triage")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable rows.")
@click.option("--redecide", is_flag=True,
              help="Decide every attributed bundle again under today's attribution "
                   "rules, from its stored evidence (no GPU): one line per bundle, "
                   "recorded verdict (rule) -> today's.")
@click.option("--write", is_flag=True,
              help="With --redecide: rewrite the changed verdicts in place "
                   "(attribution.json, bundle.json; the old one kept as "
                   "attribution_history; folder and signature unchanged).")
def command(dirs: tuple[str, ...], as_json: bool, redecide: bool, write: bool) -> None:
    """Group the bundles under DIRS (searched recursively) by signature: one row per
    distinct finding with how often it was seen, the smallest program and its bundles.
    With --redecide: their attribution decided again (docs/bundles.md)."""
    from dataclasses import asdict

    from gpusem import api

    if write and not redecide:
        raise click.UsageError("--write goes with --redecide")
    if redecide:
        _redecide(api.redecide(dirs, write), as_json)
        return
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


def _redecide(found: list, as_json: bool) -> None:
    from dataclasses import asdict

    if as_json:
        click.echo(json.dumps([asdict(r) | {"changed": r.changed} for r in found],
                              indent=1))
        return
    for r in found:
        click.echo(r.line())
        for line in r.evidence:
            click.echo(f"    {line[:200]}")
    changed = [r for r in found if r.changed]
    click.echo(f"{len(found)} attributed bundles, {len(changed)} decided otherwise "
               f"today, {sum(r.written for r in found)} rewritten, "
               f"{sum(bool(r.needs) for r in changed)} need a GPU re-run")
