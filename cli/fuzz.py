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

import click
from gpusem.calculus.errors import BadInput

EXIT_CODES = """\b
Exit codes:
  0  nothing found
  1  findings (bundles under --out; an interrupted campaign too, if it found any)
  2  bad input or usage (one line on stderr)
  3  an internal error of gpusem (a finding of kind `internal`, a dead --jobs process)
  130 / 143  interrupted by SIGINT / SIGTERM with nothing found (reports written)
"""


def parse_budget(text: str) -> float:
    """`90`, `90s`, `5m`, `1h` -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if m is None:
        raise BadInput(f"bad budget: {text} (expected e.g. 90s, 5m, 1h)")
    return float(m[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[m[2]]


def parse_shard(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if m is None or not 0 <= int(m[1]) < int(m[2]):
        raise BadInput(f"bad shard: {text} (expected I/N with 0 <= I < N)")
    return int(m[1]), int(m[2])


@click.command(epilog=EXIT_CODES)
@click.option("--target", default="bundl", show_default=True,
              help="What is under test: bundl (our Bundl -> CUDA compiler and the "
              "Bundl semantics), gpuir (AMIR seq = par), appy (appyc), or a plugin.")
@click.option("--property", "props", multiple=True, help="Property (repeatable); "
              "bundl: compile, motion, soundness, printparse, teeth, determinism, "
              "bigsmall, soundness-paper; gpuir: seqpar; appy: compile, legality. "
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
@click.option("--max-programs", type=int, default=None, help="Stop after N programs.")
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
def command(target, props, backend, budget, seed, jobs, shard, out_dir, max_programs,
            round_size, json_path, sarif_path, junit_path, resume, coverage) -> None:
    """Run a differential fuzzing campaign and write counterexample bundles."""
    from gpusem.fuzz import manifest
    from gpusem.fuzz.reports import Report
    from gpusem.fuzz.summary import Summary, install_signal_handlers
    from rich.console import Console

    seconds = parse_budget(budget)
    if resume:
        rec = manifest.read_campaign(out_dir)
        target, backend, seed, jobs, round_size = (
            rec["target"], rec["backend"], rec["seed"], rec["jobs"], rec["round_size"])
        props, shard_t = tuple(rec["properties"]), tuple(rec["shard"])
    else:
        shard_t = parse_shard(shard)
    if jobs < 1:
        raise BadInput(f"bad jobs: {jobs} (must be >= 1)")
    props = _check_target(target, backend, props)
    params = {"target": target, "backend": backend, "properties": list(props),
              "seed": seed, "shard": list(shard_t), "jobs": jobs,
              "round_size": round_size, "budget_s": seconds,
              "max_programs": max_programs, "out_dir": out_dir, "resumed": resume}
    if not resume:
        manifest.write_campaign(out_dir, params)
    console = Console(stderr=True)
    install_signal_handlers()
    total, started = Summary(), time.time()
    for p in props:
        base = {"target_name": target, "backend": backend, "prop": p,
                "budget_s": seconds / len(props), "seed": seed, "shard": shard_t,
                "out_dir": out_dir, "round_size": round_size,
                "max_programs": max_programs, "resume": resume, "coverage": coverage}
        total.merge(_run_with_progress(console, base, jobs, p))
        if total.interrupted:
            break
    report = Report(total, params, started)
    report.write(json_path, sarif_path, junit_path, out_dir)
    _show(console, report, coverage)
    raise SystemExit(report.code)


def _check_target(target: str, backend: str, props: tuple[str, ...]) -> tuple[str, ...]:
    from gpusem.fuzz.targets import load_target

    probe = load_target(target, backend)
    try:
        props = props or (probe.properties[0],)
        for p in props:
            if p not in probe.properties:
                raise BadInput(f"unknown property: {p} (target {target}: "
                               f"{', '.join(probe.properties)})")
    finally:
        probe.close()
    return props


def _run_with_progress(console, base: dict, jobs: int, prop: str):
    from gpusem.fuzz.client import run_jobs
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn(f"[bold]{base['target_name']}:{prop}[/]"), BarColumn(),
               TextColumn("{task.fields[programs]} programs"),
               TextColumn("{task.fields[findings]} findings"),
               TextColumn("{task.fields[rate]:.0f}/min"), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("fuzz", total=base["budget_s"], programs=0, findings=0,
                            rate=0.0)
        t0 = time.monotonic()

        def tick(s) -> None:
            elapsed = time.monotonic() - t0
            bar.update(task, completed=min(elapsed, base["budget_s"]),
                       programs=s.programs, findings=s.finding_count,
                       rate=60 * s.programs / elapsed if elapsed else 0.0)

        summary = run_jobs(base, jobs, on_tick=tick)
        tick(summary)
    return summary


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
