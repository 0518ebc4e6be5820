"""Seeded faults of the lambda-cu compiler (issue 29 item 5): does a short `lambdacu`
campaign find each, how fast, and how small is the shrunk counterexample?

    PYTHONPATH=src python scripts/lambdacu_faults.py --backend cpu --budget 120 \
        --out results/lambdacu/faults_cpu.json

For each fault of `compiler.lambdacu_cuda.faults.FAULTS`, one `compile` campaign in a
fresh process with `GPUSEM_FAULT` set, and a baseline with none (which must find
nothing, else the rows mean nothing). A row: found, seconds to the first finding
(bundle.json `found_after_s`), programs checked, the printed program's size in lines
before and after shrinking (`size_before`, `size`), the shrinking's seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys
from gpusem.fuzz.targets import register_target
register_target("lambdacu", "gpusem.fuzz.lambdacu.target:LambdacuTarget")
from gpusem.fuzz.campaign import Campaign
s = Campaign("lambdacu", backend=sys.argv[1], prop="compile",
             budget_s=float(sys.argv[2]), seed=int(sys.argv[3]), out_dir=sys.argv[4],
             round_size=int(sys.argv[5]), max_programs=int(sys.argv[6])).run()
print(json.dumps({"programs": s.programs, "invalid": s.invalid,
                  "seconds": s.seconds, "findings": len(s.findings)}))
"""


def run_one(fault: str, a: argparse.Namespace) -> dict:
    env = dict(os.environ, GPUSEM_FAULT=fault, GPUSEM_SHRINK_S=str(a.shrink_s),
               PYTHONPATH=str(ROOT / "src"))
    with tempfile.TemporaryDirectory() as out:
        t0 = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", CHILD, a.backend, str(a.budget), str(a.seed), out,
             str(a.round_size), str(a.max_programs)],
            env=env, capture_output=True, text=True, timeout=a.budget * 4 + 600)
        wall = time.monotonic() - t0
        summary = json.loads(done.stdout.strip().splitlines()[-1]) if (
            done.returncode in (0, 1) and done.stdout.strip()) else {}
        bundles = [json.loads(p.read_text()) for p in Path(out).glob("*/bundle.json")]
    first = min(bundles, key=lambda b: b.get("found_after_s", 1e9), default=None)
    return {"fault": fault or "(none)", "found": bool(bundles),
            "signatures": sorted({b["signature"] for b in bundles}),
            "seconds_to_find": first.get("found_after_s") if first else None,
            "size_before": first.get("size_before") if first else None,
            "shrunk_size": first.get("size") if first else None,
            "shrink_s": first.get("shrink_s") if first else None,
            "programs": summary.get("programs"), "wall_s": round(wall, 1),
            "exit": done.returncode,
            # a campaign that never ran says why (the H200's table of stop 27: five
            # rows of exit 1 in 0.5 s and no word of the cause)
            "error": None if summary else
            (done.stderr.strip().splitlines() or ["(no output)"])[-1][:300]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--budget", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--round-size", type=int, default=10)
    ap.add_argument("--max-programs", type=int, default=100)
    ap.add_argument("--shrink-s", type=float, default=40.0)
    ap.add_argument("--faults", default="", help="comma-separated (default: all)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from gpusem.compiler.lambdacu_cuda.faults import FAULTS

    names = [f for f in a.faults.split(",") if f] or ["", *FAULTS]
    rows = []
    for fault in names:
        rows.append(run_one(fault, a))
        print(json.dumps(rows[-1]), flush=True)
    doc = {"command": " ".join(sys.argv), "backend": a.backend, "budget_s": a.budget,
           "seed": a.seed, "block": int(os.environ.get("GPUSEM_LC_BLOCK", "4")),
           "machine": f"{platform.machine()} {platform.system()}, Python "
                      f"{platform.python_version()}",
           "faults": {f: FAULTS[f] for f in names if f}, "rows": rows}
    Path(a.out).write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
