"""Issue 31.1 on a fresh clone: does a finding shrink within a 20 s campaign when the
g++ cache is cold? Runs the command of tests/fuzz/test_budget_kept.py (`gpusem fuzz
--target bundl --budget 20s --seed 0`, GPUSEM_FAULT=floor-division, cpu backend) with
a fresh GPUSEM_CACHE_DIR and XDG_CACHE_HOME per run, on the local engine and on Dask
(`--jobs 2`), for each source tree given, in turns; g++ is reached through a wrapper
(GPUSEM_CXX) that logs each call with the process that made it. One JSON object: per
run the finding's statements before and after, whether it counts as shrunk, the
shrink's seconds and its reducer's statistics (the bundle's `minimised`), and the g++
calls (all of them, and per calling process: on the local engine the shrinker is a
process of its own).

    python scripts/measure_shrink_cold.py --tree /tmp/before --tree . --runs 4

`--program FILE.bundl`: instead, the Bundl reducer alone (`BundlTarget.minimise`,
compile property, the fault on, the program race-free by construction as the kernel
generator drew it) on that program, `--reduce-s` seconds, fresh caches per run: the
statements before and after, the reducer's statistics, its g++ calls;
`--one-at-a-time`: and the same reducer checking each candidate on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

BIN = Path(sys.executable).parent
SIGNATURE = "compile:disagree:disagree:out:int:value"
WRAPPER = """#!/bin/sh
echo "$PPID $*" >> "$GXX_LOG"
exec g++ "$@"
"""


def cold_env(tree: str, tmp: Path, log: Path) -> dict[str, str]:
    """`tree`'s gpusem with the floor-division fault, fresh g++ caches (a fresh CI
    clone's) and g++ through the logging wrapper `tmp/gxx` (one line a call)."""
    return dict(os.environ, GPUSEM_FAULT="floor-division",
                GPUSEM_CACHE_DIR=tempfile.mkdtemp(dir=tmp),
                XDG_CACHE_HOME=tempfile.mkdtemp(dir=tmp),
                GPUSEM_CXX=str(tmp / "gxx"), GXX_LOG=str(log),
                PYTHONPATH=str(Path(tree).resolve() / "src"))


def run(tree: str, engine: str, tmp: Path, k: int, budget: int) -> dict:
    out = tmp / f"out{k}"
    log = tmp / f"gxx{k}.log"
    env = cold_env(tree, tmp, log)
    extra = ["--engine", "dask", "--jobs", "2"] if engine == "dask" else []
    cmd = [str(BIN / "gpusem"), "fuzz", "--target", "bundl", "--budget",
           f"{budget}s", "--seed", "0", "--out", str(out), "--json",
           str(tmp / f"r{k}.json"), *extra]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    row: dict = {"tree": tree, "engine": engine, "exit": proc.returncode,
                 "wall_s": round(wall, 1), "load_before": os.getloadavg()[0]}
    calls = log.read_text().splitlines() if log.exists() else []
    by_process = Counter(line.split()[0] for line in calls)
    row["gxx_calls"] = len(calls)
    row["gxx_calls_by_process"] = sorted(by_process.values(), reverse=True)
    try:
        report = json.loads((tmp / f"r{k}.json").read_text())
    except (OSError, ValueError):
        row["error"] = proc.stderr[-500:]
        return row
    row |= {"seconds": report.get("seconds"), "fuzz_s": report.get("fuzz_s"),
            "shrink_s": report.get("shrink_s")}
    found = next((f for f in report["findings"] if f["signature"] == SIGNATURE), None)
    if found is None:
        row["finding"] = None
        return row
    row |= {"found_after_s": found["found_after_s"],
            "statements_before": found["size_before"],
            "statements_after": found["size"], "shrunk": found["shrunk"]}
    meta = json.loads((Path(found["bundle"]) / "bundle.json").read_text())
    row["minimised"] = meta.get("minimised")
    row["shrink_cut"] = meta.get("shrink_cut", False)
    if engine == "local":  # the shrinker's own calls: not the campaign process's
        campaign = calls[0].split()[0] if calls else ""
        row["gxx_calls_shrinker"] = sum(n for p, n in by_process.items()
                                        if p != campaign)
    return row


REDUCE = """
import json, sys, time
from gpusem.calculus.bundl.parser import parse_program
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.bundl.target import BundlTarget
from gpusem.fuzz.targets import checked
path, budget, alone = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1"
target = BundlTarget()
start = Generated(parse_program(open(path).read(), path),
                  race_free_by_construction=True)
first = checked(target, start, "compile")
t0 = time.monotonic()
if alone:  # the same reducer, each candidate checked (and built) on its own
    from gpusem.fuzz.bundl.shrink import shrink
    _, res, stats = shrink(start, first.signature,
                           lambda g: checked(target, g, "compile"), None, budget,
                           target.shrink_max_tried, batch=1)
    small, stats = res or first, stats.as_dict()
else:
    small = target.minimise(start, first, "compile", budget_s=budget)
    stats = target.shrink_stats.get(first.signature)
print(json.dumps({"signature": first.signature, "before": first.size,
                  "after": small.size, "seconds": round(time.monotonic() - t0, 2),
                  "one_at_a_time": alone, "minimised": stats}))
"""


def reduce_alone(tree: str, program: str, tmp: Path, k: int, seconds: float,
                 alone: bool) -> dict:
    log = tmp / f"gxx_reduce{k}.log"
    env = cold_env(tree, tmp, log)
    proc = subprocess.run([sys.executable, "-c", REDUCE, program, str(seconds),
                           "1" if alone else "0"],
                          env=env, capture_output=True, text=True, check=False)
    calls = log.read_text().splitlines() if log.exists() else []
    row = {"tree": tree, "program": program, "load_before": os.getloadavg()[0],
           # the first check's build and the g++ probes are in it: every run has them
           "gxx_calls": len(calls),
           "gxx_modules": sum(1 for c in calls if " -shared " in c)}
    try:
        return row | json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return row | {"error": proc.stderr[-500:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", action="append", default=[],
                    help="a source tree whose src/ to run (repeatable; default .)")
    ap.add_argument("--engine", action="append", default=[],
                    choices=("local", "dask"))
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--budget", type=int, default=20)
    ap.add_argument("--json", default="")
    ap.add_argument("--program", default="",
                    help="the reducer alone on this .bundl program")
    ap.add_argument("--reduce-s", type=float, default=60.0)
    ap.add_argument("--one-at-a-time", action="store_true",
                    help="with --program: also this tree's reducer checking each "
                         "candidate on its own (batch=1, no batch check)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (tmp / "gxx").write_text(WRAPPER)
        (tmp / "gxx").chmod(0o755)
        k = 0
        for _ in range(args.runs):
            for engine in ([] if args.program else args.engine or ["local", "dask"]):
                for tree in args.tree or ["."]:
                    rows.append(run(tree, engine, tmp, k, args.budget))
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
                    k += 1
            for tree in (args.tree or ["."]) if args.program else []:
                for alone in (False, True) if args.one_at_a_time else (False,):
                    rows.append(reduce_alone(tree, args.program, tmp, k,
                                             args.reduce_s, alone))
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
                    k += 1
    text = json.dumps({"command": " ".join(sys.argv), "budget_s": args.budget,
                       "runs": rows}, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
