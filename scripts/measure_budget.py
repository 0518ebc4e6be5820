"""Is `--budget` kept (issue 18: within 10% plus one shrink)? Runs `gpusem fuzz --target
bundl --budget B` as the README's main job does, and again with a seeded fault (so that
findings are shrunk), and prints one JSON object: wall seconds against the budget.

    python scripts/measure_budget.py [--budget 120]
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


def run(budget: int, fault: str, out: str) -> dict:
    env = dict(os.environ, GPUSEM_FAULT=fault)
    cmd = [str(BIN / "gpusem"), "fuzz", "--target", "bundl", "--budget", f"{budget}s",
           "--out", out, "--json", out + ".json"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    report = json.loads(Path(out + ".json").read_text())
    shrink = max((f["shrink_s"] for f in report["findings"]), default=0.0)
    return {"fault": fault or "(none)", "exit": proc.returncode, "wall_s": round(wall, 1),
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
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run(args.budget, "", tmp + "/clean"),
                run(args.budget, "floor-division", tmp + "/fault")]
    print(json.dumps({"command": "python " + " ".join(sys.argv), "runs": rows},
                     indent=1))


if __name__ == "__main__":
    main()
