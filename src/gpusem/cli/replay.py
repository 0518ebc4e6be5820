"""`gpusem replay DIR`: re-run a counterexample bundle of any target.

Exit 1 while the finding still reproduces (same signature, or one that refines it), 0
when it no longer does (fixed), 2 for a malformed bundle, 3 when gpusem itself fails
on it: `git bisect run gpusem replay DIR` finds the commit that introduced (or, with
the terms swapped, fixed) a bug.
"""

from __future__ import annotations

import click

EXIT_CODES = """\b
Exit codes (for `git bisect run gpusem replay DIR`):
  0  does not reproduce (fixed)
  1  still reproduces
  2  malformed bundle or usage
  3  gpusem itself failed on it (an internal error; bisect: skip with 125)
"""


@click.command(epilog=EXIT_CODES)
@click.argument("bundle_dir", type=click.Path())
@click.option("--backend", default=None, help="Override the bundle's backend.")
@click.option("--step", "step", is_flag=True,
              help="Then open the debugger (Bundl bundles) at the first divergence: "
              "a watchpoint on the first cell where the backend and the interpreter "
              "disagree, run to the interpreter's write of it.")
@click.option("--commands", help='With --step: run these ";"-separated commands, exit.')
@click.option("--exo-python", default=None, help="Exo bundles: the Python of an "
              "installed Exo-GPU (else $GPUSEM_EXO_PYTHON, else this interpreter).")
def command(bundle_dir: str, backend: str | None, step: bool, commands,
            exo_python: str | None) -> None:
    """Re-run a counterexample bundle; say whether it still reproduces."""
    if exo_python:
        import os

        os.environ["GPUSEM_EXO_PYTHON"] = exo_python
    from gpusem import api
    from gpusem.fuzz.bundle import read_bundle
    from gpusem.fuzz.targets import INTERNAL

    if step:
        _step_into(read_bundle(bundle_dir), commands)
        return
    r = api.replay(bundle_dir, backend)
    b, res = r.bundle, r.now
    if r.reproduces and res.signature != b.signature and _deadlock_as_timeout(
            b.signature, res.signature):
        click.echo(f"reproduces: {b.signature} as {res.signature} (a GPU cannot tell a "
                   f"deadlock from a hang; the cpu harness can): {res.detail}")
        raise SystemExit(1)
    if r.reproduces:
        click.echo(f"reproduces: {b.signature}: {res.detail}")
        raise SystemExit(1)
    now = res.signature if res.status == "finding" else res.status
    click.echo(f"does not reproduce: expected {b.signature}, now {now} {res.detail}")
    raise SystemExit(3 if res.kind == INTERNAL else 0)


def _deadlock_as_timeout(expected: str, now: str) -> bool:
    """A deadlock the cpu harness names is, on the cuda backend, a launch that times
    out: the same failure seen by a backend that can only wait."""
    return expected.endswith(":deadlock") and now == expected[:-len("deadlock")] + "timeout"


def _step_into(bundle, commands: str | None) -> None:
    """The debugger on the bundle's program, stopped where the first differing cell
    is written (or at the start, when the bundle records no memories)."""
    import json

    from gpusem.calculus.errors import BadInput
    from gpusem.cli.step import debug_bundl

    if "program.bundl" not in bundle.files:
        raise BadInput(f"replay --step: only Bundl bundles: {bundle.path}")
    opening: tuple[str, ...] = ()
    cell = _first_difference(json.loads(bundle.files.get("expected.json", "null")),
                             json.loads(bundle.files.get("actual.json", "null")))
    if cell is not None:
        opening = (f"break write {cell[0]}[{cell[1]}]", "continue")
    debug_bundl(bundle.files["program.bundl"], str(bundle.path / "program.bundl"),
                commands=commands, opening=opening)


def _first_difference(expected, actual) -> tuple[str, int] | None:
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return None
    for name, values in expected.items():
        got = actual.get(name)
        if not isinstance(got, list):
            continue
        for i, (e, a) in enumerate(zip(values, got)):
            if e != a:
                return name, i
    return None
