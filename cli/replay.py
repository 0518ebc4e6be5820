"""`gpusem replay DIR`: re-run a counterexample bundle of any target.

Exit 0 when the finding still reproduces (same signature), 1 when it no longer does
(fixed, or it depended on something else), 2 for a malformed bundle.
"""

from __future__ import annotations

import click


@click.command()
@click.argument("bundle_dir", type=click.Path())
@click.option("--backend", default=None, help="Override the bundle's backend.")
def command(bundle_dir: str, backend: str | None) -> None:
    """Re-run a counterexample bundle; say whether it still reproduces."""
    from gpusem.fuzz.bundle import read_bundle
    from gpusem.fuzz.campaign import load_target

    b = read_bundle(bundle_dir)
    target = load_target(b.target, backend or b.meta["backend"])
    try:
        res = target.replay(b.files, b.meta)
    finally:
        target.close()
    if res.status == "finding" and res.signature == b.signature:
        click.echo(f"reproduces: {b.signature}: {res.detail}")
        raise SystemExit(0)
    now = res.signature if res.status == "finding" else res.status
    click.echo(f"does not reproduce: expected {b.signature}, now {now} {res.detail}")
    raise SystemExit(1)
