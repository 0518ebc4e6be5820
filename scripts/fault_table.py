"""Seeded-fault campaigns (issue 5): does a campaign find each fault, how fast, and how
small is the shrunk counterexample?

    python scripts/fault_table.py --backend cpu --budget 60 --out results/faults/table_cpu.json

For each fault of `compiler.bundl_cuda.faults.FAULTS` it runs one `compile`-property
(or `--property`) campaign of the Bundl target with `GPUSEM_FAULT` set (in a fresh process, so the fault
is on only there) and records: found (a finding whose kind is not a crash of the
harness itself), seconds to the first finding, programs checked, and the statement count
of the smallest shrunk counterexample. A baseline campaign with no fault must find
nothing (else every other row means nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, sys
from gpusem.fuzz.campaign import Campaign
c = Campaign("bundl", backend=sys.argv[1], prop=sys.argv[6], budget_s=float(sys.argv[2]),
             seed=int(sys.argv[3]), out_dir=sys.argv[4], round_size=int(sys.argv[5]))
s = c.run()
print(json.dumps({"programs": s.programs, "invalid": s.invalid, "seconds": s.seconds,
                  "findings": [f.__dict__ for f in s.findings]}))
"""


def hard_limit_s(budget: float) -> float:
    """The campaign's own hard stop, the AST reducer's cap after it, and a minute for
    start-up: past this the child is killed and its row is read from the bundles it
    wrote (each is written atomically)."""
    from gpusem.fuzz.bundl.target import shrink_budget_s
    from gpusem.fuzz.campaign import hard_stop_s

    return hard_stop_s(budget) + shrink_budget_s() + 60


def run_one(fault: str, backend: str, budget: float, seed: int, rounds: int,
            keep: str | None = None, prop: str = "compile") -> dict:
    env = dict(os.environ, GPUSEM_FAULT=fault)
    with tempfile.TemporaryDirectory() as out:
        start = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, "-c", CHILD, backend, str(budget),
                                   str(seed), out, str(rounds), prop], env=env,
                                  text=True,
                                  capture_output=True, timeout=hard_limit_s(budget),
                                  check=False)
        except subprocess.TimeoutExpired:
            proc = None
        wall = time.monotonic() - start
        if keep:  # the counterexample bundles, one folder per fault (this run's only)
            dest = Path(keep) / (fault or "baseline")
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(out, dest)
        if proc is None:
            return row_from_bundles(fault, out, wall)
    if proc.returncode != 0:
        return {"fault": fault or "(none)", "error": proc.stderr.strip().splitlines()[-1:]}
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return make_row(fault, data["findings"], wall, programs=data["programs"],
                    rate=round(60 * data["programs"] / max(data["seconds"], 1e-9)))


def row_from_bundles(fault: str, out: str, wall: float) -> dict:
    """A killed campaign's row: its findings are the bundles it had written; how many
    programs it checked is lost with it."""
    metas = [json.loads(m.read_text()) for m in Path(out).glob("*/bundle.json")]
    findings = [{"found_after_s": m.get("found_after_s", 0), "size": m.get("size"),
                 "shrunk": m.get("shrunk", False), "kind": m["kind"]} for m in metas]
    return make_row(fault, findings, wall, programs=None, rate=None) | {
        "killed_after_s": round(wall, 1)}


def make_row(fault: str, findings: list[dict], wall: float, programs, rate) -> dict:
    sizes = [f["size"] for f in findings if f["shrunk"]] or [f["size"] for f in findings]
    return {
        "fault": fault or "(none)",
        "found": bool(findings),
        "first_s": round(min(f["found_after_s"] for f in findings), 1)
        if findings else None,
        "programs": programs,
        "rate_per_min": rate,
        "shrunk_statements": min(sizes) if sizes else None,
        "kinds": sorted({f["kind"] for f in findings}),
        "wall_s": round(wall, 1),
    }


def main() -> None:
    from gpusem.compiler.bundl_cuda.faults import FAULTS

    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--round-size", type=int, default=40)
    ap.add_argument("--faults", default=",".join(FAULTS))
    ap.add_argument("--out", default="results/faults/table_cpu.json")
    ap.add_argument("--keep", default=None, help="copy each campaign's bundles here")
    ap.add_argument("--property", default="compile",
                    help="the bundl property each campaign checks (prism-sync for the "
                    "prism-drop-rule-* faults of `--sync prism`)")
    ap.add_argument("--parallel", type=int, default=1,
                    help="campaigns at once (each is one process; give it a core)")
    args = ap.parse_args()
    from concurrent.futures import ThreadPoolExecutor, as_completed

    names = ["", *args.faults.split(",")]
    rows: list[dict] = []
    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        futures = [pool.submit(run_one, f, args.backend, args.budget, args.seed,
                               args.round_size, args.keep, args.property)
                   for f in names]
        for future in as_completed(futures):  # a row as each campaign ends, and the
            rows.append(future.result())      # file rewritten, so a cut run keeps them
            print(json.dumps(rows[-1]), flush=True)
            report = write_report(args, rows, len(names) - 1)
    print(f"{report['found']}/{report['faults']} faults found; median shrunk size "
          f"{report['median_shrunk_statements']}; written to {args.out}")


def write_report(args, rows: list[dict], faults: int) -> dict:
    order = {"(none)": -1} | {f: i for i, f in enumerate(args.faults.split(","))}
    rows.sort(key=lambda r: order.get(r["fault"], len(order)))
    found = [r for r in rows if r["fault"] != "(none)"]
    sizes = [r["shrunk_statements"] for r in found if r.get("shrunk_statements")]
    report = {
        "command": " ".join([sys.executable, *sys.argv]),
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus",
        "backend": args.backend, "budget_s": args.budget, "property": args.property,
        "complete": len(found) == faults and any(r["fault"] == "(none)" for r in rows),
        "found": sum(1 for r in found if r.get("found")), "faults": faults,
        "median_shrunk_statements": statistics.median(sizes) if sizes else None,
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
