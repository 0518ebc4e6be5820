"""`gpusem replay DIR`: re-run a counterexample bundle of any target.

Exit 1 while the finding still reproduces (same signature, or one that refines it), 0
when the same kind of run now passes (fixed), 125 when it cannot test (the run cannot
be made here, or the program now fails in another way), 2 for a malformed bundle:
`git bisect run gpusem replay DIR` finds the commit that introduced (or, with the
terms swapped, fixed) a bug, skipping the commits where it cannot tell.
"""

from __future__ import annotations

import click

EXIT_CODES = """\b
Exit codes (for `git bisect run gpusem replay DIR`):
  0    does not reproduce: the same kind of run now passes (fixed)
  1    still reproduces
  2    malformed bundle or usage
  3    an internal error of gpusem outside the replayed run
  125  cannot test (bisect skips): the run cannot be made here (a cuda bundle
       without a GPU, a compiler under test not installed), or the program now
       fails in another way (a compile or parse error, another signature, now
       invalid or not runnable, gpusem's own error on it)
"""
CORPUS_EXIT_CODES = """\b
A folder of bundles (a corpus, e.g. a campaign's --out): each replayed, one line
each (still-failing, fixed, cannot-test). Exit codes:
  0    none still fails but those a --baseline holds
  1    some still fail and no --baseline holds them
  4    the folder holds no bundle
  125  none could be tested
"""


@click.command(epilog=EXIT_CODES + CORPUS_EXIT_CODES)
@click.argument("bundle_dir", type=click.Path())
@click.option("--backend", default=None, help="Override the bundle's backend.")
@click.option("--baseline", default=None, metavar="FILE_OR_DIR", help="A corpus: "
              "bundles still failing whose finding this JSON report or folder of "
              "bundles holds are known and pass.")
@click.option("--step", "step", is_flag=True,
              help="Then open the debugger (Bundl bundles) at the first divergence: "
              "a watchpoint on the first cell where the backend and the interpreter "
              "disagree, run to the interpreter's write of it.")
@click.option("--commands", help='With --step: run these ";"-separated commands, exit.')
@click.option("--exo-python", default=None, help="Exo bundles: the Python of an "
              "installed Exo-GPU (else $GPUSEM_EXO_PYTHON, else this interpreter).")
def command(bundle_dir: str, backend: str | None, baseline: str | None, step: bool,
            commands, exo_python: str | None) -> None:
    """Re-run a counterexample bundle, or every bundle under a folder (a corpus);
    say whether each still reproduces."""
    if exo_python:
        import os

        os.environ["GPUSEM_EXO_PYTHON"] = exo_python
    from pathlib import Path

    from gpusem import api

    if step:
        _step_into(bundle_dir, commands)
        return
    if Path(bundle_dir).is_dir() and not (Path(bundle_dir) / "bundle.json").exists():
        _replay_corpus(bundle_dir, backend, baseline)
        return
    if baseline is not None:
        raise api.BadInput("replay: --baseline is for a corpus (a folder of bundles)")
    r = api.replay(bundle_dir, backend)
    b, res = r.bundle, r.now
    if r.as_timeout:
        click.echo(f"reproduces: {b.signature} as {res.signature} (a GPU cannot tell a "
                   f"deadlock from a hang; the cpu harness can): {res.detail}")
        raise SystemExit(1)
    if r.reproduces:
        click.echo(f"reproduces: {b.signature}: {res.detail}")
        raise SystemExit(1)
    if r.cannot_run:
        click.echo(f"cannot test: {b.signature}: {r.why}")
        raise SystemExit(r.exit_code)
    now = res.signature if res.status == "finding" else res.status
    click.echo(f"does not reproduce: expected {b.signature}, now {now} {res.detail}")
    if r.exit_code != 0:
        click.echo(f"cannot test: {r.why} (exit {r.exit_code}: git bisect skips)")
    raise SystemExit(r.exit_code)


def _replay_corpus(folder: str, backend: str | None, baseline: str | None) -> None:
    """One line per bundle, then the counts; the exit code of CORPUS_EXIT_CODES."""
    from gpusem import api

    rows = api.replay_corpus(folder, backend, baseline)
    for r in rows:
        state = {"reproduces": "still-failing"}.get(r.verdict, r.verdict)
        if r.known:
            state += " (in the baseline)"
        why = f" ({r.why})" if r.why else ""
        click.echo(f"{state}\t{r.signature}\tnow {r.now}{why}\t{r.bundle}")
    failing = [r for r in rows if r.verdict == "reproduces" and not r.known]
    click.echo(f"{len(rows)} bundles: {sum(r.verdict == 'reproduces' for r in rows)} "
               f"still failing ({len(failing)} not in a baseline), "
               f"{sum(r.verdict == 'fixed' for r in rows)} fixed, "
               f"{sum(r.verdict == 'cannot-test' for r in rows)} cannot test")
    raise SystemExit(api.corpus_exit_code(rows))


def _step_into(bundle_dir: str, commands: str | None) -> None:
    """The debugger on the bundle's program, stopped where the first differing cell
    is written (or at the start, when the bundle records no memories)."""
    from gpusem import api
    from gpusem.cli.debugger_shell import run_session

    debugger, opening = api.step_bundle(bundle_dir)
    run_session(debugger, commands, opening)
