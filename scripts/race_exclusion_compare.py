"""Before and after in one command: the share of generated well-typed terminating
Bundl programs the race analysis declines, for several seeds and two source trees
(issue 24, item 3), and every program the second tree still declines, with whether
exploring it finds it racy.

    python scripts/race_exclusion_compare.py --trees BEFORE/src src --seeds 1 2 3 \
        --programs 1500 --out results/bundl/race_exclusion_loops.json

Each (tree, seed) is one `scripts/race_exclusion.py` run in its own process (the
tree's `gpusem` first on the path; no ground-truth sample). Each program the last
tree declines is then explored exhaustively (interpreter/bundl/explore.py, at most
`--transitions`) when its machine has at most `--explore-threads` threads, else run
under 13 schedules (round-robin, greedy both ways, 10 seeded random): `real` (several
final memories, or a schedule that deadlocks or gets stuck), `one-memory` (every
schedule tried ends in one memory: a false exclusion, or a race whose results happen
to agree), `unknown` (the budget ran out).

`--pairs` classifies each still-declined program by whether the conflicting pair is
reachable concurrently (interpreter/bundl/concurrent.py): `race` (a reachable
configuration where two enabled threads are about to make conflicting accesses that
do not commute; a real race even when the final memories coincide), `no-pair` (the
whole state space has none: a false exclusion), `unknown` (over `--pair-transitions`,
and no pair in `--probe-transitions` more of priority schedules, the classifier's
Note), `stuck`. With `--from FILE` it classifies the still-declined programs of an earlier
run's JSON instead of generating them again, and writes per-class counts and one
example of each class:

    python scripts/race_exclusion_compare.py --from results/bundl/race_exclusion_loops.json \
        --pairs --out results/bundl/race_exclusion_pairs.json
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


SAMPLED = ["rr", "greedy", "greedy-reverse"] + [f"random:{k}" for k in range(10)]


def explore(program: str, transitions: int, max_threads: int) -> tuple[str, int]:
    """Exhaustive exploration where the machine has at most `max_threads` threads,
    else the schedules of SAMPLED (then `one-memory` means: none of them differs)."""
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.interpreter.bundl.schedulers import run_program

    prog = parse_program(program, "declined.bundl")
    if prog.machine.blocks * prog.machine.threads <= max_threads:
        out = run_program(prog, "exhaustive", max_steps=transitions)
        if out.kind == "budget":
            return "unknown", 0
        if out.kind != "terminated":
            return "real", 0
        n = len(out.final_memories)
        return ("real" if n > 1 else "one-memory"), n
    memories = set()
    for schedule in SAMPLED:
        run = run_program(prog, schedule, max_steps=2_000_000)
        if run.kind != "terminated":
            return "real", 0
        memories.add(json.dumps(run.globals, sort_keys=True, default=str))
    n = len(memories)
    return ("real" if n > 1 else "one-memory (sampled)"), n


def pairs(rows: list[dict], transitions: int, save=None,
          probe: int | None = None) -> dict:
    """Classify `rows` (still-declined programs) by `concurrent_pair`, in place (a row
    classified already, by an earlier `--from` file, is kept); `save` after each."""
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.interpreter.bundl.concurrent import concurrent_pair

    classes: dict[str, dict] = {}
    for row in rows:
        if "pair" in row:
            key = f"{row['pair']['verdict']} (explored: {row['explored']})"
            c = classes.setdefault(key, {"count": 0, "example": row})
            c["count"] += 1
            continue
        v = concurrent_pair(parse_program(row["program"], "declined.bundl"),
                            transitions, probe)
        row["pair"] = {"verdict": v.kind, "states": v.states,
                       "transitions": v.transitions, "message": v.message}
        if v.pair is not None:
            row["pair"].update(threads=list(v.pair.threads), cell=v.pair.cell,
                               kinds=list(v.pair.kinds),
                               schedule=list(v.pair.schedule))
        key = f"{v.kind} (explored: {row['explored']})"
        c = classes.setdefault(key, {"count": 0, "example": row})
        c["count"] += 1
        print(row["seed"], key, row["pair"].get("cell", ""), row["race"][:80],
              flush=True)
        if save is not None:
            save()
    return dict(sorted(classes.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", nargs=2, help="before and after src dirs")
    ap.add_argument("--from", dest="source", nargs="+", default=None,
                    help="earlier runs' JSONs: classify their still-declined programs "
                         "(of --seeds; rows classified already are kept)")
    ap.add_argument("--shard", nargs=2, type=int, default=(0, 1), metavar=("K", "N"),
                    help="with --from: only rows K, K+N, K+2N, ... (N processes)")
    ap.add_argument("--pairs", action="store_true",
                    help="classify still-declined programs by a concurrent pair")
    ap.add_argument("--pair-transitions", type=int, default=30_000)
    ap.add_argument("--probe-transitions", type=int, default=None,
                    help="priority-schedule transitions after an unknown search "
                         "(default: --pair-transitions; 0: none)")
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    ap.add_argument("--programs", type=int, default=1500)
    ap.add_argument("--transitions", type=int, default=20_000)
    ap.add_argument("--explore-threads", type=int, default=4,
                    help="exhaustive exploration up to this many threads, else "
                         "sampled schedules")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.source:
        rows = [row for f in args.source
                for row in json.loads(Path(f).read_text())["still_declined"]
                if row["seed"] in args.seeds]
        rows = rows[args.shard[0]::args.shard[1]]
        result = {"command": "python " + " ".join(sys.argv), "from": args.source,
                  "pair_transitions": args.pair_transitions, "classes": {},
                  "still_declined": rows}

        def save() -> None:
            if args.out:
                Path(args.out).write_text(json.dumps(result, indent=1) + "\n")

        result["classes"] = pairs(rows, args.pair_transitions, save,
                                  args.probe_transitions)
        save()
        return
    if not args.trees:
        ap.error("--trees is required without --from")
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
    print(json.dumps(table, indent=1), flush=True)
    result = {"command": "python " + " ".join(sys.argv), "trees": args.trees,
              "table": table, "still_declined": []}
    for (tree, seed), r in zip(jobs, runs, strict=True):
        if tree != args.trees[1]:
            continue
        for row in r["declined"]:
            truth, memories = explore(row["program"], args.transitions,
                                      args.explore_threads)
            result["still_declined"].append({
                "seed": seed, "race": row["race"], "explored": truth,
                "final_memories": memories, "program": row["program"]})
            print(seed, truth, memories, row["race"][:100], flush=True)
            if args.out:  # as it goes: exploring the large ones takes long
                Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    if args.pairs:
        result["classes"] = pairs(result["still_declined"], args.pair_transitions,
                                  probe=args.probe_transitions)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
