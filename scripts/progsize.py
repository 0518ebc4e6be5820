"""NVRTC time of each program's kernel against its size, over what a campaign of the
`compile` property draws (issue 31.3, "cheaper programs"). Needs NVRTC, not a GPU.

For each seed, the campaign's rounds (`fuzz/hunt.generate_round` over the bundl
target's `compile` strategy, `round_seed(seed, r)`, the campaign's round size); each
program the campaign would build (its fast reference terminates: `_not_compared` says
nothing) is compiled with the property's options (sync "motion") and its CUDA text put
through NVRTC as the cuda worker builds it (`cuda_worker.NVRTC_OPTIONS` +
`BUILD_SPEEDUPS`, the kernel in its namespace with its name expression, sm_90a, the
cubin), through the newest NVRTC wheel (`nvrtc_lib.compile_unit`, the worker's calls):

  alone    one NVRTC call per kernel, the least CPU ms of `--repeat` calls
  kernel   alone less a header-only call's (the same unit with an empty kernel: the
           median of one call made after each kernel's): the kernel's own cost
  round    each round's distinct kernels in one call, as the worker builds a batch:
           what the campaign pays, per program drawn

Reported per tree: kernel ms p50/p90/p99/mean, each size decile's (CUDA bytes) share of
the summed kernel ms, the same per generator family, and the round calls' CPU ms per
program drawn. `--tree A --tree B` runs this script on each tree's src/ (one process a
seed and tree, the trees in turns per seed, so that a shared machine's load falls on
both alike) and adds the ratios B/A.

  python scripts/progsize.py --seeds 0 1 2 3 --rounds 2 --json out.json
  python scripts/progsize.py --tree /tmp/main --tree . --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

from tree_runs import runs_over_trees, tree_commit, tree_env, write_result

EMPTY = 'extern "C" __global__ void bundl_main() {}\n'
KERNEL_ON_CLAIM = re.compile(r"claim \w+ into oc\d+ at")  # kernels.thread_tree's claim


def family(program, kernel_shaped: bool) -> str:
    """Which generator (and which of kernels.py's shapes) drew the program."""
    if not kernel_shaped:
        return "general"
    from gpusem.calculus.bundl.printer import print_program

    text = print_program(program)
    if "lower out into" not in text:
        return "kernel:flat"
    return "kernel:claim" if KERNEL_ON_CLAIM.search(text) else "kernel:tree"


def draw_kernels(seed: int, rounds: int, size: int) -> list[list[dict]]:
    """Each round's programs that the campaign builds: family, statements, CUDA."""
    from gpusem.calculus.bundl import ast as A
    from gpusem.calculus.bundl.walk import child_stmts
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl.compile_property import SYNC_OF_PROPERTY, _not_compared
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round
    from gpusem.interpreter.bundl.reference import fast_reference

    def statements(s: A.Stmt) -> int:
        return 1 + sum(statements(c) for c in child_stmts(s))

    target, out = BundlTarget(), []
    for r in range(rounds):
        found = []
        for d in generate_round(target.strategy("compile"), round_seed(seed, r), size):
            g = as_generated(d.program)
            ref = fast_reference(g.program,
                                 prove_race_free=not g.race_free_by_construction)
            if _not_compared(ref) is not None:
                continue  # the campaign builds no kernel for it
            try:
                k = compile_program(g.program,
                                    CompileOptions(sync=SYNC_OF_PROPERTY["compile"]))
            except Exception:  # noqa: BLE001, S112 - not compiled: not built either
                continue
            stmts = statements(g.program.main) + sum(statements(f.body)
                                                     for f in g.program.fns)
            found.append({"family": family(g.program, g.race_free_by_construction),
                          "statements": stmts, "bytes": len(k.source),
                          "name": k.name, "source": k.source})
        out.append(found)
    return out


def nvrtc_call():
    """(build(list of (name, source)) -> CPU ms, what NVRTC it is)."""
    from gpusem.compiler.backends import cpu_source, nvrtc_lib
    from gpusem.compiler.backends.cuda_worker import BUILD_SPEEDUPS, NVRTC_OPTIONS

    lib = nvrtc_lib.find_nvrtc()[0]
    options = [*NVRTC_OPTIONS, *BUILD_SPEEDUPS]

    def build(batch: list[tuple[str, str]]) -> float:
        unit = cpu_source.namespaced_unit(
            [(i, f"k{i}_src", src, "") for i, (_, src) in enumerate(batch)],
            for_cpu=False)
        exprs = {i: f"gs_k{i}::{name}" for i, (name, _) in enumerate(batch)}
        start = time.process_time()
        binary, _, log = nvrtc_lib.compile_unit(lib, unit, exprs, options)
        ms = 1e3 * (time.process_time() - start)
        if binary is None:
            raise RuntimeError(f"NVRTC failed: {log[:2000]}")
        return ms

    return build, {"library": lib.path, "version": f"{lib.version[0]}.{lib.version[1]}",
                   "options": options}


def measure_seed(seed: int, rounds: int, size: int, repeat: int,
                 round_only: bool = False) -> dict:
    """This tree's kernels of `seed`'s rounds and their NVRTC costs (one process)."""
    build, nvrtc = nvrtc_call()
    drawn = draw_kernels(seed, rounds, size)
    build([("bundl_main", EMPTY)])  # NVRTC loaded, its first-call costs paid
    header: list[float] = []
    rows, round_ms = [], []
    for found in drawn:
        batch = list(dict.fromkeys((k["name"], k["source"]) for k in found))
        round_ms.append(min(build(batch) for _ in range(repeat)) if batch else 0.0)
        for k in found if not round_only else ():
            alone = min(build([(k["name"], k["source"])]) for _ in range(repeat))
            header.append(build([("bundl_main", EMPTY)]))  # one between each kernel
            rows.append({x: k[x] for x in ("family", "statements", "bytes")}
                        | {"alone_ms": round(alone, 2)})
    if round_only:  # the kernels' sizes, no call of their own
        rows = [{x: k[x] for x in ("family", "statements", "bytes")} | {"alone_ms": 0.0}
                for found in drawn for k in found]
        header = [build([("bundl_main", EMPTY)]) for _ in range(repeat)]
    fixed = statistics.median(header) if header else 0.0
    for r in rows:
        r["kernel_ms"] = round(r["alone_ms"] - fixed, 2)
    return {"seed": seed, "rounds": rounds, "round_size": size, "nvrtc": nvrtc,
            "header_ms": round(fixed, 2), "round_call_ms": [round(x, 1) for x in round_ms],
            "kernels": rows}


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def summary(seeds: list[dict]) -> dict:
    rows = [r for s in seeds for r in s["kernels"]]
    ms = [r["kernel_ms"] for r in rows]
    total = sum(ms) or 1.0
    by_size = sorted(rows, key=lambda r: r["bytes"])
    n = len(by_size)
    deciles = []
    for q in range(10):
        part = by_size[q * n // 10:(q + 1) * n // 10]
        if part:
            deciles.append({"bytes": [part[0]["bytes"], part[-1]["bytes"]],
                            "statements_mean": round(statistics.mean(
                                r["statements"] for r in part), 1),
                            "kernel_ms_mean": round(statistics.mean(
                                r["kernel_ms"] for r in part), 2),
                            "share": round(sum(r["kernel_ms"] for r in part) / total, 3)})
    families = {}
    for f in sorted({r["family"] for r in rows}):
        part = [r for r in rows if r["family"] == f]
        families[f] = {"kernels": len(part),
                       "bytes_mean": round(statistics.mean(r["bytes"] for r in part)),
                       "kernel_ms_mean": round(statistics.mean(
                           r["kernel_ms"] for r in part), 2),
                       "bytes_max": max(r["bytes"] for r in part),
                       "share": round(sum(r["kernel_ms"] for r in part) / total, 3)}
    drawn = sum(s["rounds"] * s["round_size"] for s in seeds)
    return {"kernels_built": n, "programs_drawn": drawn,
            "kernel_ms": {"p50": round(quantile(ms, .5), 2),
                          "p90": round(quantile(ms, .9), 2),
                          "p99": round(quantile(ms, .99), 2),
                          "max": round(max(ms, default=0), 2),
                          "mean": round(statistics.mean(ms), 2) if ms else 0},
            "bytes": {"p50": quantile([r["bytes"] for r in rows], .5),
                      "p90": quantile([r["bytes"] for r in rows], .9),
                      "p99": quantile([r["bytes"] for r in rows], .99),
                      "max": max((r["bytes"] for r in rows), default=0)},
            "round_call_cpu_ms_per_program_drawn": round(
                sum(sum(s["round_call_ms"]) for s in seeds) / drawn, 2),
            "header_ms": round(statistics.median(s["header_ms"] for s in seeds), 2),
            "size_deciles": deciles, "families": families}


def _run_tree(tree: str, args: argparse.Namespace, seed: int) -> dict:
    env = tree_env(tree)
    cmd = [sys.executable, os.path.abspath(__file__), "--one-seed", str(seed),
           "--rounds", str(args.rounds), "--round-size", str(args.round_size),
           "--repeat", str(args.repeat), *(["--round-only"] if args.round_only else [])]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3, help="calls per kernel (least)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="with --tree: this many (tree, seed) processes at once, the "
                         "trees side by side (a loaded machine's load on both alike)")
    ap.add_argument("--tree", action="append", default=[],
                    help="a source tree (repeatable); default: this process's gpusem")
    ap.add_argument("--one-seed", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--round-only", action="store_true",
                    help="only the round calls (no call per kernel: kernel_ms is 0)")
    ap.add_argument("--rows", action="store_true", help="keep every kernel's row")
    args = ap.parse_args(argv)
    if args.one_seed is not None:
        print(json.dumps(measure_seed(args.one_seed, args.rounds, args.round_size,
                                      args.repeat, args.round_only)))
        return 0
    trees = args.tree or [""]
    runs = runs_over_trees(trees, args.seeds, args.jobs,
                           lambda tree, seed: _run_tree(tree, args, seed),
                           lambda seed: measure_seed(seed, args.rounds, args.round_size,
                                                     args.repeat, args.round_only))
    result: dict = {"trees": []}
    for tree, seeds in runs.items():
        entry = {"tree": tree or "(this process)", "commit": tree_commit(tree or "."),
                 "nvrtc": seeds[0]["nvrtc"], **summary(seeds),
                 "per_seed": {s["seed"]: summary([s]) for s in seeds}}
        for per in entry["per_seed"].values():
            del per["size_deciles"]
        if args.rows:
            entry["rows"] = {s["seed"]: s["kernels"] for s in seeds}
        result["trees"].append(entry)
    if len(trees) == 2:
        a, b = result["trees"]
        result["ratio_b_over_a"] = {
            "round_call_cpu_ms_per_program_drawn": round(
                b["round_call_cpu_ms_per_program_drawn"]
                / a["round_call_cpu_ms_per_program_drawn"], 3),
            **({} if args.round_only else {"kernel_ms_mean": round(
                b["kernel_ms"]["mean"] / a["kernel_ms"]["mean"], 3)})}
    result.update({"seeds": args.seeds, "rounds": args.rounds, "jobs": args.jobs,
                   "round_size": args.round_size, "repeat": args.repeat,
                   "cores": os.cpu_count(),
                   "loadavg": [round(x, 2) for x in os.getloadavg()],
                   "command": shlex.join([os.path.basename(sys.executable), *sys.argv])})
    write_result(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
