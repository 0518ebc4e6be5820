"""What the verbs share: showing a report of `gpusem.api` (its output in order, then
its exit code)."""

from __future__ import annotations

import sys

import click
from gpusem import api


def show(report: api.Report) -> None:
    """Print what a file verb says and exit with its code."""
    for chunk in report.output:
        click.echo(chunk.text, nl=False, err=chunk.err)
    sys.exit(report.exit_code)
