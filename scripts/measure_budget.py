"""Is `--budget` kept (issue 18: within 10% plus one shrink; issue 31.1: within 10%
whatever is found)? Runs `gpusem fuzz --target bundl --budget B` as the README's main
job does, and again with a seeded fault (so that findings are shrunk), and prints one
JSON object: wall seconds against the budget, and the report's own times.

    python scripts/measure_budget.py [--budget 120]
    python scripts/measure_budget.py --budget 20 --fault-only --tree OLD --tree .
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def run(budget: int, fault: str, out: str, tree: str = "") -> dict:
    env = dict(os.environ, GPUSEM_FAULT=fault)
    if tree:  # that source tree's gpusem (before/after in one command)
        env["PYTHONPATH"] = os.path.join(os.path.abspath(tree), "src")
    cmd = [str(BIN / "gpusem"), "fuzz", "--target", "bundl", "--budget", f"{budget}s",
           "--out", out, "--json", out + ".json"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    report = json.loads(Path(out + ".json").read_text())
    shrink = max((f["shrink_s"] for f in report["findings"]), default=0.0)
    return {"tree": tree or None, "fault": fault or "(none)", "exit": proc.returncode, "wall_s": round(wall, 1),
            "budget_s": budget, "over_budget_s": round(wall - budget, 1),
            "longest_shrink_s": shrink, "programs": report["counts"]["programs"],
            "findings": len(report["findings"]),
            "within_10pct_plus_one_shrink": wall <= 1.1 * budget + shrink + 5,
            # issue 31.1: the report's own times (absent before the shrinker)
            "report_seconds": report.get("seconds"), "fuzz_s": report.get("fuzz_s"),
            "shrink_s": report.get("shrink_s"),
            "within_10pct": report.get("seconds", wall) <= 1.1 * budget}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=120)
    ap.add_argument("--tree", action="append", default=[],
                    help="a source tree whose src/ to run (repeatable); default: the "
                         "installed gpusem")
    ap.add_argument("--fault-only", action="store_true",
                    help="only the run with the seeded fault")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, tree in enumerate(args.tree or [""]):
            if not args.fault_only:
                rows.append(run(args.budget, "", f"{tmp}/clean{k}", tree))
            rows.append(run(args.budget, "floor-division", f"{tmp}/fault{k}", tree))
    print(json.dumps({"command": "python " + " ".join(sys.argv), "runs": rows},
                     indent=1))


if __name__ == "__main__":
    main()
