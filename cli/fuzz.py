"""`gpusem fuzz`: a differential fuzzing campaign (issues 5 and 7).

Shows a rich progress bar (programs, findings, rate) and ends with a summary table; every
finding is shrunk and written as a bundle under --out (replay: `gpusem replay DIR`).
"""

from __future__ import annotations

import re

import click
from gpusem.calculus.errors import BadInput


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


@click.command()
@click.option("--target", default="bundl", show_default=True,
              help="What is under test: bundl (our Bundl -> CUDA compiler and the "
              "Bundl semantics), gpuir (AMIR seq = par), appy (appyc), exo (Exo-GPU's "
              "sync checker and CUDA).")
@click.option("--property", "props", multiple=True, help="Property (repeatable); "
              "bundl: compile, motion, soundness, printparse, teeth, determinism, "
              "bigsmall, soundness-paper; gpuir: seqpar; appy: compile, legality; "
              "exo: verdict, compile. "
              "Default: the target's first.")
@click.option("--backend", default="cpu", show_default=True,
              help="cpu, cuda (appy also: sm90, compile for sm_90 and run nothing).")
@click.option("--budget", default="5m", show_default=True, help="Wall time: 90s, 5m...")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--jobs", default=1, show_default=True, type=int)
@click.option("--shard", default="0/1", show_default=True, help="I/N: this machine's part.")
@click.option("--out", "out_dir", default="fuzz-out", show_default=True,
              type=click.Path(file_okay=False))
@click.option("--max-programs", type=int, default=None, help="Stop after N programs.")
@click.option("--exo-python", default=None, help="target exo: the Python of an "
              "installed Exo-GPU (else $GPUSEM_EXO_PYTHON, else this interpreter).")
@click.option("--round-size", type=int, default=100, show_default=True,
              help="Programs per round: one g++ build or NVRTC module checks a "
              "round (g++ costs ~0.7 s a build + ~10 ms a kernel: 100 a round is "
              "16 ms a program, 25 is 40).")
def command(target, props, backend, budget, seed, jobs, shard, out_dir, max_programs,
            exo_python, round_size) -> None:
    """Run a differential fuzzing campaign and write counterexample bundles."""
    if exo_python:  # read by the exo target in this process and in --jobs children
        import os

        os.environ["GPUSEM_EXO_PYTHON"] = exo_python
    from gpusem.fuzz.campaign import Summary
    from gpusem.fuzz.targets import load_target
    from rich.console import Console

    seconds = parse_budget(budget)
    shard_t = parse_shard(shard)
    if jobs < 1:
        raise BadInput(f"bad jobs: {jobs} (must be >= 1)")
    probe = load_target(target, backend)
    props = props or (probe.properties[0],)
    for p in props:
        if p not in probe.properties:
            raise BadInput(f"unknown property: {p} (target {target}: "
                           f"{', '.join(probe.properties)})")
    probe.close()
    console = Console(stderr=True)
    if not console.is_terminal:  # logs: wide enough for the summary table's columns
        console = Console(stderr=True, width=160)
    total = Summary()
    for p in props:
        base = {"target_name": target, "backend": backend, "prop": p,
                    "budget_s": seconds / len(props), "seed": seed, "shard": shard_t,
                    "out_dir": out_dir, "round_size": round_size, "max_programs": max_programs}
        total.merge(_run_with_progress(console, base, jobs, p))
    _summary_table(console, total, out_dir)
    if total.failed:  # the others' results are above; the run as a whole failed
        from gpusem.fuzz.campaign import JobFailed

        for line in total.failed:
            console.print(f"[red]{line}[/]")
        raise JobFailed(f"job failed: {len(total.failed)} of the --jobs processes "
                        "ended without a result")


def _run_with_progress(console, base: dict, jobs: int, prop: str):
    from gpusem.fuzz.campaign import run_jobs
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn(f"[bold]{base['target_name']}:{prop}[/]"), BarColumn(),
               TextColumn("{task.fields[programs]} programs"),
               TextColumn("{task.fields[findings]} findings"),
               TextColumn("{task.fields[rate]:.0f}/min"), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("fuzz", total=base["budget_s"], programs=0, findings=0,
                            rate=0.0)
        import time

        t0 = time.monotonic()

        def tick(s) -> None:
            elapsed = time.monotonic() - t0
            bar.update(task, completed=min(elapsed, base["budget_s"]),
                       programs=s.programs, findings=len(s.findings),
                       rate=60 * s.programs / elapsed if elapsed else 0.0)

        summary = run_jobs(base, jobs, on_tick=tick)
        tick(summary)
    return summary


def _summary_table(console, total, out_dir: str) -> None:
    from rich.table import Table

    t = Table(title=f"{total.programs} programs, {len(total.findings)} finding classes, "
              f"{total.rate_per_min:.0f}/min, {total.invalid} not compared (illegal, racy or unsupported), "
              f"{total.skipped} not runnable on this backend")
    for col in ("kind", "signature", "stmts", "shrunk", "after", "bundle"):
        t.add_column(col)
    for f in total.findings:
        t.add_row(f.kind, f.signature[:70], str(f.size), "yes" if f.shrunk else "no",
                  f"{f.found_after_s:.0f}s", f.bundle)
    console.print(t)
    click.echo(f"bundles in {out_dir}: {len(total.findings)}")
