"""`gpusem fuzz`: a differential fuzzing campaign (issues 5, 7, 15, 18).

Shows a progress bar (programs, findings, rate) and ends with a summary; every finding
is written as a bundle under --out the moment it is seen, then shrunk in place
(replay: `gpusem replay DIR`); reports on request (--json, --sarif, --junit) and
always OUT/summary.json and OUT/summary.txt, also when interrupted.
"""

from __future__ import annotations

import re
import sys
import time
from typing import cast

import click
from gpusem import api
from gpusem.cli.process_exit import running_as_command

# this module's import: when the process started, where the system does not say
IMPORTED_AT = time.time()

EXIT_CODES = """\b
Exit codes:
  0  nothing found (and some programs were compared)
  1  findings (bundles under --out; an interrupted campaign too, if it found any);
     with --baseline, findings it does not hold
  2  bad input or usage (one line on stderr); a failed preflight: a module the
     target needs is missing (nothing was checked)
  3  an internal error of gpusem (a finding of kind `internal`, a dead --jobs
     process, a campaign stopped by its circuit breaker: `stopped: ...`)
  4  nothing checked: no program was compared (none generated within the budget, or
     every one invalid or not runnable on this backend); not a pass
  130 / 143  interrupted by SIGINT / SIGTERM with nothing found (reports written)
"""


def parse_budget(text: str, what: str = "budget") -> float:
    """`90`, `90s`, `5m`, `1h` -> seconds (positive: a zero budget checks nothing)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if m is None:
        raise api.BadInput(f"bad {what}: {text} (expected e.g. 90s, 5m, 1h)")
    seconds = float(m[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[m[2]]
    if seconds <= 0:
        raise api.BadInput(f"bad {what}: {text} (must be more than 0 s)")
    return seconds


def parse_count(flag: str, text: str | None) -> int | None:
    """A positive whole number of a flag such as --max-programs (None: not given);
    BadInput (one line, exit 2) for 0, a negative number or garbage."""
    if text is None:
        return None
    if not re.fullmatch(r"\s*\d+\s*", text) or int(text) < 1:
        raise api.BadInput(f"bad {flag}: {text} (expected a whole number >= 1)")
    return int(text)


def parse_shard(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if m is None or not 0 <= int(m[1]) < int(m[2]):
        raise api.BadInput(f"bad shard: {text} (expected I/N with 0 <= I < N)")
    return int(m[1]), int(m[2])


@click.command(epilog=EXIT_CODES)
@click.option("--target", default="bundl", show_default=True,
              help="What is under test: bundl (our Bundl -> CUDA compiler and the "
              "Bundl semantics), gpuir (AMIR seq = par), appy (appyc), exo (Exo-GPU's "
              "sync checker and CUDA), or a plugin.")
@click.option("--property", "props", multiple=True, help="Property (repeatable); "
              "bundl: compile, motion, prism-sync, soundness, printparse, teeth, "
              "determinism, bigsmall, soundness-paper, ptx; gpuir: seqpar, ptx; appy: compile, "
              "legality; exo: verdict, compile. "
              "Default: the target's first.")
@click.option("--backend", default="cpu", show_default=True,
              help="cpu, cuda (appy also: sm90, compile for sm_90 and run nothing).")
@click.option("--budget", default="5m", show_default=True,
              help="Wall time: 90s, 5m... (kept within 10% plus one shrink).")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--jobs", default=1, show_default=True, type=int)
@click.option("--shard", default="0/1", show_default=True, help="I/N: this machine's part.")
@click.option("--out", "out_dir", default="fuzz-out", show_default=True,
              type=click.Path(file_okay=False))
@click.option("--max-programs", default=None, metavar="N", help="Stop after N "
              "programs in all (over every --jobs process and property).")
@click.option("--exo-python", default=None, help="target exo: the Python of an "
              "installed Exo-GPU (else $GPUSEM_EXO_PYTHON, else this interpreter).")
@click.option("--round-size", type=int, default=100, show_default=True,
              help="Programs per round: one g++ build or NVRTC module checks a "
              "round (g++ costs ~0.7 s a build + ~10 ms a kernel: 100 a round is "
              "16 ms a program, 25 is 40).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False),
              help="Write the JSON report here (docs/reports.md: the schema).")
@click.option("--sarif", "sarif_path", type=click.Path(dir_okay=False),
              help="Write a SARIF 2.1.0 report here (GitHub code scanning).")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False),
              help="Write a JUnit XML report here.")
@click.option("--resume", is_flag=True, help="Continue the campaign in --out: its "
              "target, properties, seed, shard and jobs, from the rounds it finished.")
@click.option("--coverage", is_flag=True, help="Count the rules and constructs the "
              "programs exercise (targets that measure it) and print the table.")
@click.option("--shrink-time", default=None, metavar="S", help="Seconds the "
              "shrinking of one finding may take, hypothesis's and the target's "
              "reducer's together (default: $GPUSEM_SHRINK_S, else a fifth of the "
              "budget, at least 60).")
@click.option("--engine", default="local", show_default=True, help="Who runs the "
              "shards: local (--jobs processes of this machine), dask (a Dask cluster: "
              "--scheduler, or this machine's GPUs/cores with --jobs workers per GPU, "
              "or in all for cpu; needs gpusem[dask]), or a plugin engine.")
@click.option("--scheduler", default=None, help="dask: the scheduler's address "
              "(tcp://HOST:8786); without it a local cluster is started.")
@click.option("--gpus", default=None, help="dask, cuda, local cluster: the GPUs to use "
              "(all, a count, or ids 0,1); default all.")
@click.option("--baseline", default=None, metavar="FILE_OR_DIR", help="Known findings "
              "pass: those whose signature (and attribution, where both have one) an "
              "earlier JSON report (--json) or a folder of bundles holds; only the "
              "others exit 1.")
@click.option("--corpus", default=None, metavar="DIR", help="Regression mode: replay "
              "the bundles under DIR first (still failing, fixed or cannot test); "
              "each still failing is a finding of this campaign.")
@click.option("--generation",
              type=click.Choice(cast("tuple[str, ...]", api.GENERATIONS)),
              default=api.DEFAULT_GENERATION, show_default=True,
              help="How a round's programs are drawn: direct (each from a fresh "
              "hypothesis ConjectureData, cheaper) or engine (hypothesis's generate "
              "phase, as campaigns before it drew them). A seed draws other programs "
              "in each; --resume keeps the campaign's own.")
def command(target, props, backend, budget, seed, jobs, shard, out_dir, max_programs,
            exo_python, round_size, json_path, sarif_path, junit_path, resume, coverage,
            shrink_time, engine, scheduler, gpus, baseline, corpus, generation) -> None:
    """Run a differential fuzzing campaign and write counterexample bundles."""
    if exo_python:  # read by the exo target in this process and in --jobs children
        import os

        os.environ["GPUSEM_EXO_PYTHON"] = exo_python
    from rich.console import Console

    seconds = parse_budget(budget)
    max_programs = parse_count("--max-programs", max_programs)
    if shrink_time is not None:
        shrink_time = parse_budget(shrink_time, "--shrink-time")
    shard_t = parse_shard(shard)
    console = Console(stderr=True)
    api.install_signal_handlers()
    spec = api.CampaignSpec(target, tuple(props), seconds, backend, seed, jobs, shard_t,
                            out_dir, round_size, max_programs, resume, coverage,
                            shrink_time, engine, scheduler, gpus, baseline, corpus,
                            _command_started_at(), generation)
    # Off a terminal (CI logs) the bar draws nothing until the end: plain lines every
    # ~30 s say how the campaign goes (GPUSEM_PROGRESS_EVERY_S).
    lines = None if console.is_terminal else api.ProgressLines(target)
    with _Bar(console, seconds / max(1, len(props) or 1), target) as bar:

        def tick(prop: str, s) -> None:
            bar.tick(prop, s)
            if lines is not None:
                lines.tick(prop, s)

        result = api.campaign(spec, on_progress=tick)
    if lines is not None:
        lines.close()
    result.report.write(json_path, sarif_path, junit_path, out_dir)
    _show(console, result.report, coverage)
    raise SystemExit(result.exit_code)


def _command_started_at() -> float | None:
    """When this process started, where it is the `gpusem` command itself (the
    console script, `python -m gpusem`): the budget runs from there (issue 31.1: the
    interpreter's start, the imports and the shards' start-up are inside it). None
    where the CLI runs inside another program (a test's CliRunner, a caller of
    `main()`), whose start says nothing of this campaign: its clock starts now."""
    if not running_as_command():
        return None
    return api.process_started_at(IMPORTED_AT)


class _Bar:
    """One rich progress bar per property (programs, findings, rate)."""

    def __init__(self, console, budget_s: float, target: str) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.budget_s, self.target = budget_s, target
        self.tasks: dict[str, tuple] = {}
        self.progress = Progress(
            TextColumn("[bold]{task.description}[/]"), BarColumn(),
            TextColumn("{task.fields[programs]} programs"),
            TextColumn("{task.fields[findings]} findings"),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
            console=console, transient=False)

    def __enter__(self) -> _Bar:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def tick(self, prop: str, s) -> None:
        if prop not in self.tasks:
            self.tasks[prop] = (self.progress.add_task(
                f"{self.target}:{prop}", total=self.budget_s, programs=0, findings=0,
                rate=api.rate_shown(0, 0.0)), time.monotonic())
        task, t0 = self.tasks[prop]
        elapsed = time.monotonic() - t0
        self.progress.update(task, completed=min(elapsed, self.budget_s),
                             programs=s.programs, findings=s.finding_count,
                             rate=api.rate_shown(s.programs - s.resumed, elapsed))


def _show(console, report, coverage: bool) -> None:
    """On a terminal a table; otherwise (logs, CI) the plain summary on stdout, whole:
    no line is cut to a width."""
    total = report.summary
    if console.is_terminal:
        from rich.table import Table

        t = Table(title=report.as_text().splitlines()[0])
        for col in ("kind", "signature", "stmts", "shrunk", "after", "seen", "bundle"):
            t.add_column(col, overflow="fold")
        for f in total.findings:
            t.add_row(f.kind, f.signature, f"{f.size_before or f.size}->{f.size}",
                      "yes" if f.shrunk else "no", f"{f.found_after_s:.0f}s",
                      f"{1 + f.duplicates}" + ("" if f.new else " (known)"), f.bundle)
        console.print(t)
        for line in total.failed:
            console.print(f"[red]{line}[/]")
    else:
        sys.stdout.write(report.as_text())
    if coverage:
        sys.stdout.write(report.coverage_text() or "coverage: the target measures none\n")
    click.echo(f"bundles in {report.campaign['out_dir']}: {len(total.findings)}")
