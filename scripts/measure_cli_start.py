"""The CPU-seconds of short `gpusem` commands (a verb's start is most of a doc's
command, tests/docs), for two source trees run alternately in one command: the
baseline and the change, so machine load hits both alike.

    python scripts/measure_cli_start.py BASE_SRC NEW_SRC [--rounds 5]

e.g. BASE_SRC a worktree of main's `src`, NEW_SRC this checkout's `src`. Prints, per
command, the median CPU-s (user+sys of the process and its children) of each tree and
the ratio new/base; one JSON line at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = [
    ["--help"],
    ["check", "examples/bundl/block_reduce_shared.bundl"],
    ["run", "examples/bundl/block_reduce_shared.bundl"],
    ["compile", "examples/bundl/map_double.bundl"],
    ["step", "examples/bundl/map_double.bundl", "--commands", "continue"],
    ["triage", "examples"],
]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one(src: str, argv: list[str]) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSEM_")}
    env["PYTHONPATH"] = src
    before = _cpu()
    subprocess.run([sys.executable, "-m", "gpusem.cli.main", *argv], cwd=ROOT, env=env,
                   capture_output=True, check=False)
    return _cpu() - before


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    rows = []
    for argv in COMMANDS:
        times: dict[str, list[float]] = {"base": [], "new": []}
        for _ in range(a.rounds):
            times["base"].append(one(a.base, argv))
            times["new"].append(one(a.new, argv))
        base, new = (statistics.median(times[k]) for k in ("base", "new"))
        rows.append({"argv": argv, "base_cpu_s": round(base, 3),
                     "new_cpu_s": round(new, 3), "ratio": round(new / base, 3)})
        print(f"{' '.join(argv)[:60]:60s} base {base:.3f}  new {new:.3f}  "
              f"ratio {new / base:.2f}", flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
