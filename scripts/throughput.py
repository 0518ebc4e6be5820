"""Programs checked per minute, end to end, for a fuzz property (issue 5).

Runs one campaign of `--seconds` with `--jobs` local processes, exactly as `gpusem fuzz`
does (same `run_jobs`, no progress bar), and writes one JSON object:

  {programs, seconds, rate_per_min, campaign_seconds, cpu_seconds, cpu_ms_per_program,
   backend, jobs, cores, loadavg, target, property, seed, invalid, findings, failed,
   command}

`seconds` is the wall time of the whole run (process start-up, the last round's
overrun and the merge included), so `rate_per_min` is what a person waiting sees.
`loadavg` is taken at the start: on a shared machine, say so when comparing, and
compare `cpu_ms_per_program` (CPU time of this process and every process it reaped:
jobs, g++, harness workers), which other load barely moves.

  python scripts/throughput.py --backend cpu --jobs 2 --seconds 120 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time


def measure(target: str, prop: str, backend: str, jobs: int, seconds: float,
            seed: int, round_size: int) -> dict:
    from gpusem.fuzz.client import run_jobs

    load, cpu0 = os.getloadavg(), _cpu_seconds()
    with tempfile.TemporaryDirectory(prefix="gpusem-throughput-") as out:
        base = {"target_name": target, "backend": backend, "prop": prop,
                "budget_s": seconds, "seed": seed, "shard": (0, 1), "out_dir": out,
                "round_size": round_size, "max_programs": None}
        t0 = time.monotonic()
        summary = run_jobs(base, jobs)
        wall = time.monotonic() - t0
    cpu = _cpu_seconds() - cpu0
    return {"programs": summary.programs, "seconds": round(wall, 2),
            "rate_per_min": round(60 * summary.programs / wall, 1),
            "campaign_seconds": round(summary.seconds, 2), "cpu_seconds": round(cpu, 1),
            "cpu_ms_per_program": round(1000 * cpu / max(1, summary.programs), 1),
            "backend": backend,
            "jobs": jobs, "cores": os.cpu_count(),
            "loadavg": [round(x, 2) for x in load], "target": target,
            "property": prop, "seed": seed, "round_size": round_size,
            "invalid": summary.invalid, "findings": len(summary.findings),
            "failed": summary.failed,
            "command": shlex.join([os.path.basename(sys.executable), *sys.argv])}


def _cpu_seconds() -> float:
    t = os.times()  # children: only those already waited for (all, once run_jobs ends)
    return t.user + t.system + t.children_user + t.children_system


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="bundl")
    ap.add_argument("--property", dest="prop", default="compile")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--round-size", type=int, default=100)  # as gpusem fuzz
    ap.add_argument("--json", help="write the result here (also printed)")
    args = ap.parse_args(argv)
    result = measure(args.target, args.prop, args.backend, args.jobs, args.seconds,
                     args.seed, args.round_size)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
