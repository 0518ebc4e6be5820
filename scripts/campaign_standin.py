"""The bundl compile property's whole campaign loop on the cuda path with no GPU
(regress31): CPU ms per program of everything a shard does, two trees in one command.

`profile_stages.py --backend nvrtc` times the stages of rounds it drives itself; this
runs the tree's own `Campaign` (`fuzz/campaign.py`: its rounds, its batch sizing,
the target's prefetch, audit and confirmation, the summary) in this process for
`--seconds` of budget, with the cuda backend in process and its device the NVRTC
stand-in (`nvrtc_standin.py`: the tree's own build, nothing launched), and every
launched program counted as agreeing (`compile_property.compare` answers "agree":
what a GPU run with no finding does; the compare itself, ~0.1 ms a program, is not
run). It reports programs, CPU ms per program (this process: NVRTC runs in it), the
NVRTC calls (one per batch check), their kernels per call and CPU, and the CPU left
for the rest (the campaign's Python). Each tree runs in a process of its own, the
trees in turns (`--turns`), with a fresh cache folder. `--start-s S` makes the first
NVRTC call S seconds longer (a sleep: wall time, no CPU), as the first batch of a shard
on a GPU also waits for its CUDA worker (a spawned Python, CuPy, the context).

  python scripts/campaign_standin.py --tree /tmp/old --tree /tmp/new --seconds 60
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

from tree_runs import tree_commit, tree_env


def one(seconds: float, seed: int, round_size: int, start_s: float = 0.0) -> dict:
    import profile_stages

    from gpusem.fuzz.bundl import compile_property as cp
    from gpusem.fuzz.campaign import Campaign

    device = profile_stages._nvrtc_instead_of_a_gpu(cp)
    if start_s > 0:
        compile_first = device.compile

        def started(items):
            device.compile = compile_first  # once: the worker's start
            time.sleep(start_s)
            return compile_first(items)

        device.compile = started

    def agree(prog, expected, source, results, seeds):
        return cp.Verdict(True, "agree", "nvrtc stand-in", expected, None, None,
                          None, source)

    cp.compare = agree
    with tempfile.TemporaryDirectory(prefix="gpusem-standin-") as out:
        os.environ["GPUSEM_CACHE_DIR"] = os.path.join(out, "cache")
        t0, w0 = os.times(), time.perf_counter()
        summary = Campaign(target_name="bundl", backend="cuda", prop="compile",
                           budget_s=seconds, seed=seed, shard=(0, 1),
                           out_dir=os.path.join(out, "campaign"),
                           round_size=round_size, max_programs=None).run()
        t1, wall = os.times(), time.perf_counter() - w0
    cpu = sum(t1[:4]) - sum(t0[:4])
    calls = device.calls
    nvrtc_cpu = sum(c["cpu_ms"] for c in calls) / 1e3
    kernels = [c["kernels"] for c in calls]
    n = max(1, summary.programs)
    return {"programs": summary.programs, "invalid": summary.invalid,
            "findings": len(summary.findings), "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2), "cpu_ms_per_program": round(1e3 * cpu / n, 2),
            "nvrtc_cpu_ms_per_program": round(1e3 * nvrtc_cpu / n, 2),
            "rest_cpu_ms_per_program": round(1e3 * (cpu - nvrtc_cpu) / n, 2),
            "nvrtc_calls": len(calls), "kernels": sum(kernels),
            "kernels_per_call": round(sum(kernels) / max(1, len(calls)), 1),
            "calls_by_kernels": sorted(kernels),
            "nvrtc_cpu_ms_per_call": round(1e3 * nvrtc_cpu / max(1, len(calls)), 2),
            "loadavg": [round(x, 2) for x in os.getloadavg()]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", default=[])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--turns", type=int, default=1)
    ap.add_argument("--start-s", type=float, default=0.0)
    ap.add_argument("--json")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.seconds, args.seed, args.round_size, args.start_s)))
        return 0
    runs: dict[str, list[dict]] = {t: [] for t in args.tree}
    for turn in range(args.turns):
        for tree in args.tree:
            env = tree_env(tree)
            cmd = [sys.executable, os.path.abspath(__file__), "--one", "--seconds",
                   str(args.seconds), "--seed", str(args.seed + turn),
                   "--round-size", str(args.round_size), "--start-s", str(args.start_s)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  check=True)
            runs[tree].append(json.loads(done.stdout.splitlines()[-1]))
    trees = []
    for tree, rs in runs.items():
        n = sum(r["programs"] for r in rs)
        calls = sum(r["nvrtc_calls"] for r in rs)
        cpu, nv = (sum(r[k] * r["programs"] for r in rs) / max(1, n)
                   for k in ("cpu_ms_per_program", "nvrtc_cpu_ms_per_program"))
        trees.append({"tree": tree, "commit": tree_commit(tree), "programs": n,
                      "cpu_ms_per_program": round(cpu, 2),
                      "nvrtc_cpu_ms_per_program": round(nv, 2),
                      "rest_cpu_ms_per_program": round(cpu - nv, 2),
                      "nvrtc_calls": calls,
                      "kernels_per_call": round(sum(r["kernels"] for r in rs)
                                                / max(1, calls), 1),
                      "runs": rs})
    for t in trees:
        print(f"{t['tree']} ({t['commit']}): {t['programs']} programs, "
              f"{t['cpu_ms_per_program']} CPU ms a program (NVRTC "
              f"{t['nvrtc_cpu_ms_per_program']}, the rest "
              f"{t['rest_cpu_ms_per_program']}), {t['nvrtc_calls']} NVRTC calls of "
              f"{t['kernels_per_call']} kernels")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seconds": args.seconds, "seed": args.seed,
                       "start_s": args.start_s,
                       "round_size": args.round_size, "turns": args.turns,
                       "cores": os.cpu_count(), "trees": trees,
                       "command": shlex.join(["python", *sys.argv])}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
