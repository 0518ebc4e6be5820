"""Before and after in one command: the share of generated well-typed terminating
Bundl programs the race analysis declines, for several seeds and two source trees
(issue 24, item 3), and every program the second tree still declines, with whether
exhaustive exploration finds it racy.

    python scripts/race_exclusion_compare.py --trees BEFORE/src src --seeds 1 2 3 \
        --programs 1500 --out results/bundl/race_exclusion_loops.json

Each (tree, seed) is one `scripts/race_exclusion.py` run in its own process (the
tree's `gpusem` first on the path; no ground-truth sample). Each program the last
tree declines is then explored exhaustively (interpreter/bundl/explore.py, at most
`--transitions`): `real` (several final memories, or a schedule that deadlocks),
`one-memory` (every schedule ends in one memory: a false exclusion, or a race whose
results happen to agree), `unknown` (the budget ran out).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(tree: str, seed: int, programs: int, tmp: Path) -> dict:
    stem = tmp / f"{abs(hash(tree))}_{seed}"
    out, rows = stem.with_suffix(".json"), stem.with_suffix(".jsonl")
    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
    subprocess.run([sys.executable, str(HERE / "race_exclusion.py"), "--programs",
                    str(programs), "--seed", str(seed), "--gt-limit", "0", "--out",
                    str(out), "--excluded", str(rows)], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    result = json.loads(out.read_text())
    result["declined"] = [json.loads(line) for line in rows.read_text().splitlines()]
    return result


def explore(program: str, transitions: int) -> tuple[str, int]:
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.interpreter.bundl.schedulers import run_program

    out = run_program(parse_program(program, "declined.bundl"), "exhaustive",
                      max_steps=transitions)
    if out.kind == "budget":
        return "unknown", 0
    if out.kind != "terminated":
        return "real", 0
    n = len(out.final_memories)
    return ("real" if n > 1 else "one-memory"), n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", nargs=2, required=True, help="before and after src dirs")
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    ap.add_argument("--programs", type=int, default=1500)
    ap.add_argument("--transitions", type=int, default=200_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        jobs = [(t, s) for t in args.trees for s in args.seeds]
        with ThreadPoolExecutor(args.jobs) as pool:
            runs = list(pool.map(lambda j: measure(*j, args.programs, Path(d)), jobs))
    table = {}
    for (tree, seed), r in zip(jobs, runs, strict=True):
        table.setdefault(f"seed {seed}", {})[tree] = {
            "programs": r["programs"], "verdicts": r["verdicts"],
            "declined_fraction_of_terminated": r["excluded_fraction_of_terminated"],
            "rlimit": r["rlimit"], "seconds": r["seconds"]}
    still = []
    for (tree, seed), r in zip(jobs, runs, strict=True):
        if tree != args.trees[1]:
            continue
        for row in r["declined"]:
            truth, memories = explore(row["program"], args.transitions)
            still.append({"seed": seed, "race": row["race"], "explored": truth,
                          "final_memories": memories, "program": row["program"]})
    result = {"command": "python " + " ".join(sys.argv), "trees": args.trees,
              "table": table, "still_declined": still}
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(json.dumps(table, indent=1))
    for row in still:
        print(row["seed"], row["explored"], row["final_memories"], row["race"][:100])


if __name__ == "__main__":
    main()
