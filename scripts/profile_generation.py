"""Where generation's CPU goes (issue 31.3): a sampling profile of the compile
property's rounds as the campaign draws them (`generate_round` of the bundl target's
`compile` strategy, rounds of `--round-size` from `round_seed(seed, r)`, under the
campaign's garbage-collector settings), split between gpusem's code and
hypothesis's.

A sample is taken every millisecond of this process's CPU (SIGPROF; the kernel's tick
may make it every 4 ms) after a warm-up round; each is charged

- to an *owner*: the innermost frame in gpusem's or hypothesis's files (the standard
  library and builtins go to whoever called them): `gpusem` is what our generators
  and `fuzz/reproducible`'s draws cost themselves, `hypothesis` the engine, the
  conjecture data and its strategies below our calls;
- inclusively, to the hypothesis functions named in `PHASES` that are on its stack:
  the mutation phase (`generate_mutations_from`: the examples made by mutating an
  earlier one, run through our strategies, plus the mutator's own bookkeeping),
  of which the span groups the mutator picks from (`mutator_groups`) and the data
  tree's simulation of a candidate choice sequence (`simulate_test_function`); the
  test function (our strategies under hypothesis's per-example wrapper); the choices
  themselves (`ConjectureData._draw`) and spans (`start_span`, `stop_span`).

  python scripts/profile_generation.py --rounds 10 --seed 0 --json out.json
  python scripts/profile_generation.py --tree /path/to/main --tree . --turns 2
    (each tree's src/ in a fresh process, the trees in turns: before/after in one
    command; the same rounds on both)

Sampling is statistical: with ~1,000 samples a share moves by ~1-2 points run to run.
CPU ms per program is measured without the sampler's cost (a second, unsampled pass
over the same rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from types import FrameType

from tree_runs import tree_env

PHASES = {  # reported name: (file tail, qualified function name)
    "mutation phase": ("conjecture/engine.py",
                       "ConjectureRunner.generate_mutations_from"),
    "mutator span groups": ("conjecture/data.py", "Spans.mutator_groups"),
    "data tree simulation": ("conjecture/datatree.py",
                             "DataTree.simulate_test_function"),
    "test function": ("conjecture/engine.py", "ConjectureRunner.test_function"),
    "choices (_draw)": ("conjecture/data.py", "ConjectureData._draw"),
    "span starts": ("conjecture/data.py", "ConjectureData.start_span"),
    "span stops": ("conjecture/data.py", "ConjectureData.stop_span"),
}


class Sampler:
    """Counts, per SIGPROF sample, its owner, the PHASES on its stack and, for samples
    gpusem owns, the gpusem function it is in."""

    def __init__(self) -> None:
        self.samples = 0
        self.owner, self.phases, self.gpusem = Counter[str](), Counter[str](), Counter[str]()

    def __call__(self, _signum: int, frame: FrameType | None) -> None:
        self.samples += 1
        owner, f = None, frame
        seen: set[str] = set()
        while f is not None:
            path, name = f.f_code.co_filename, f.f_code.co_qualname
            if owner is None and ("gpusem" in path or "/hypothesis/" in path):
                owner = ("gpusem", path, name) if "gpusem" in path else ("hypothesis",)
            for phase, (tail, function) in PHASES.items():
                if name == function and path.endswith(tail) and phase not in seen:
                    seen.add(phase)
                    self.phases[phase] += 1
            f = f.f_back
        if owner is None:
            self.owner["other"] += 1
            return
        self.owner[owner[0]] += 1
        if owner[0] == "gpusem":
            self.gpusem[f"{owner[1].rsplit('gpusem/', 1)[-1]}:{owner[2]}"] += 1


def run_rounds(strategy: object, seed: int, rounds: int, round_size: int) -> int:
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    return sum(len(generate_round(strategy, round_seed(seed, r), round_size))
               for r in range(rounds))


def profile(seed: int, rounds: int, round_size: int) -> dict:
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.gc_tuning import campaign_gc

    target = BundlTarget(backend="cpu")
    sampler = Sampler()
    try:
        strategy = target.strategy("compile")
        with campaign_gc():
            run_rounds(strategy, seed + 1000, 1, round_size)  # warm-up: first draws
            start = time.process_time()
            programs = run_rounds(strategy, seed, rounds, round_size)
            cpu = time.process_time() - start
            signal.signal(signal.SIGPROF, sampler)
            signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
            try:
                run_rounds(strategy, seed, rounds, round_size)
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0, 0)
    finally:
        target.close()

    def share(n: int) -> float:
        return round(100 * n / max(sampler.samples, 1), 1)

    return {
        "seed": seed, "rounds": rounds, "round_size": round_size, "programs": programs,
        "generate_cpu_ms_per_program": round(1000 * cpu / programs, 3),
        "samples": sampler.samples,
        "owner_percent": {k: share(v) for k, v in sampler.owner.most_common()},
        "hypothesis_phases_percent": {k: share(sampler.phases[k]) for k in PHASES},
        "gpusem_functions_percent": {k: share(v)
                                     for k, v in sampler.gpusem.most_common(15)},
        "note": "percent of CPU samples of generation; owner: the innermost gpusem or "
                "hypothesis frame (stdlib and builtins charged to their caller); "
                "hypothesis phases: samples with that function on the stack (they "
                "nest: the test function runs inside the mutation phase)",
        "command": "python scripts/profile_generation.py " + " ".join(sys.argv[1:]),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def compare_trees(args: argparse.Namespace) -> dict:
    """Each tree profiled `args.turns` times, the trees in turns, each time in a fresh
    process with the tree's src/ first on the path."""
    runs: dict[str, list[dict]] = {tree: [] for tree in args.tree}
    for _ in range(args.turns):
        for tree in args.tree:
            env = tree_env(tree)
            cmd = [sys.executable, os.path.abspath(__file__), "--seed",
                   str(args.seed), "--rounds", str(args.rounds), "--round-size",
                   str(args.round_size)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  check=True)
            runs[tree].append(json.loads(done.stdout))
    return {"trees": [{"tree": tree, "generate_cpu_ms_per_program": [
                           r["generate_cpu_ms_per_program"] for r in rs],
                       "runs": rs} for tree, rs in runs.items()],
            "command": "python scripts/profile_generation.py "
                       + " ".join(sys.argv[1:])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--tree", action="append", default=[],
                    help="a source tree to profile (its src/), repeatable")
    ap.add_argument("--turns", type=int, default=2, help="with --tree: runs per tree")
    ap.add_argument("--json", help="write the result here (also printed)")
    args = ap.parse_args(argv)
    result = (compare_trees(args) if args.tree
              else profile(args.seed, args.rounds, args.round_size))
    text = json.dumps(result, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
