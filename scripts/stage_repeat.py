"""The reference and compile stages alone, repeated on the same programs, trees in
turns (issue 31.3): a before/after of these two stages that a loaded machine blurs
less than `profile_stages.py --tree` does (on 2 cores with a load of 10, its
per-stage CPU moved by up to 40% between trees for code neither changed).

The round programs (`--rounds` of 100 from seed 0, drawn as the campaign draws them)
are drawn once, by the first tree, and pickled; each tree then runs, in a process of
its own, `--reps` passes over them per turn under the campaign's gc settings, after
one untimed pass: `fast_reference` on every program (reference), and `compile_program`
on those the campaign compares (compile). CPU ms per program (process time): the
minimum and the median of all its passes.

  python scripts/stage_repeat.py --tree /path/to/main --tree . --turns 4 --reps 5 \
      --json results/scale/stagecost/stage_repeat.json
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

from tree_runs import tree_env

STAGES = ("reference", "compile")


def draw(rounds: int, path: str) -> None:
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    target = BundlTarget(backend="cpu")
    try:
        strategy = target.strategy("compile")
        gens = [as_generated(d.program) for r in range(rounds)
                for d in generate_round(strategy, round_seed(0, r), 100)]
    finally:
        target.close()
    with open(path, "wb") as f:
        pickle.dump(gens, f)


def passes(path: str, reps: int) -> dict:
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl import compile_property as cp
    from gpusem.fuzz.gc_tuning import campaign_gc
    from gpusem.interpreter.bundl.reference import fast_reference

    with open(path, "rb") as f:
        gens = pickle.load(f)

    def reference() -> list:
        return [fast_reference(g.program,
                               prove_race_free=not g.race_free_by_construction)
                for g in gens]

    compared = [g for g, ref in zip(gens, reference(), strict=True)
                if cp._not_compared(ref) is None]

    def compile_() -> None:
        for g in compared:
            try:
                compile_program(g.program, CompileOptions(sync_motion=True))
            except Exception:  # noqa: BLE001, S110 - a compile error is an outcome
                pass

    out: dict = {"programs": len(gens), "compared": len(compared)}
    with campaign_gc():
        for stage, run in zip(STAGES, (reference, compile_), strict=True):
            run()  # untimed: caches, first-time paths
            times = []
            for _ in range(reps):
                t0 = time.process_time()
                run()
                times.append(1e3 * (time.process_time() - t0) / len(gens))
            out[stage] = times
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--passes", help=argparse.SUPPRESS)  # a tree's process: the file
    args = ap.parse_args(argv)
    if args.passes:
        print(json.dumps(passes(args.passes, args.reps)))
        return 0
    trees = args.tree or ["."]
    with tempfile.TemporaryDirectory(prefix="gpusem-stage-repeat-") as tmp:
        path = os.path.join(tmp, "programs.pkl")
        envs = {t: tree_env(t)
                for t in trees}
        _draw_in(trees[0], envs[trees[0]], args.rounds, path)
        runs: dict[str, list[dict]] = {t: [] for t in trees}
        for _ in range(args.turns):
            for t in trees:
                done = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--passes", path,
                     "--reps", str(args.reps)],
                    env=envs[t], capture_output=True, text=True, check=True)
                runs[t].append(json.loads(done.stdout.splitlines()[-1]))
    rows = []
    for t, rs in runs.items():
        row: dict = {"tree": t, "programs": rs[0]["programs"],
                     "compared": rs[0]["compared"]}
        for stage in STAGES:
            times = [x for r in rs for x in r[stage]]
            row[stage] = {"min": round(min(times), 3),
                          "median": round(statistics.median(times), 3),
                          "passes": len(times)}
        rows.append(row)
        print(f"{t}: CPU ms a program, min / median of {row['reference']['passes']} "
              f"passes: reference {row['reference']['min']} / "
              f"{row['reference']['median']}, compile {row['compile']['min']} / "
              f"{row['compile']['median']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": args.rounds, "turns": args.turns, "reps": args.reps,
                       "cores": os.cpu_count(),
                       "loadavg": [round(x, 2) for x in os.getloadavg()],
                       "trees": rows, "command": shlex.join(["python", *sys.argv])},
                      f, indent=1)
            f.write("\n")
    return 0


def _draw_in(tree: str, env: dict, rounds: int, path: str) -> None:
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import stage_repeat; "
            "stage_repeat.draw(int(sys.argv[2]), sys.argv[3])")
    subprocess.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(
        __file__)), str(rounds), path], env=env, check=True)


if __name__ == "__main__":
    sys.exit(main())
