"""The two generation modes of `hunt.generate_round` (issue 31.3: `engine`, hypothesis's
generate phase; `direct`, a fresh ConjectureData per program, `fuzz/direct.py`)
compared on the same rounds: what a program costs to generate and what the programs
are. Rounds are the campaign's (`round_seed(seed, r)`, `--round-size` programs of the
bundl target's `compile` strategy) for seeds `--seeds` and rounds 0 .. `--rounds`-1.

  cost      generation CPU ms per program, the modes in turns round by round (one
            process, after an untimed warm-up round of each, under the campaign's
            garbage-collector settings), `--turns` passes; the ratio direct/engine
  quality   per mode over the same rounds: program size (statements: the target's
            `size`) and choices (mean, quartiles, share > 20 statements), kernel-shaped
            share, duplicates (printed text met before: within its round, and over
            all rounds), coverage (`fuzz/bundl/coverage.py`: names of the compile
            property's universe reached, mean per program, names one mode reaches
            and the other does not)
  faults    per seeded fault of the Bundl compiler (`compiler/bundl_cuda/faults.py`,
            GPUSEM_FAULT=name, cpu backend), per mode and seed: the number of
            programs checked (compile property, in round order, batch-checked as the
            campaign does) until the first finding, or none within `--cap`; each
            fault in a child process of its own (the fault is on only there), a
            baseline child with no fault must find nothing

  python scripts/generation_quality.py cost quality --seeds 0,1 --rounds 4 \
      --json results/scale/gendirect/quality_cpu_dev.json
  python scripts/generation_quality.py faults --seeds 0,1,2 --cap 200 \
      --baseline-cap 100 --parallel 2 --json results/scale/gendirect/faults_cpu_dev.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

MODES = ("engine", "direct")


def _rounds(args: argparse.Namespace) -> list[tuple[int, int]]:
    return [(s, r) for s in args.seeds for r in range(args.rounds)]


def _gc():
    try:
        from gpusem.fuzz.gc_tuning import campaign_gc
    except ImportError:
        return nullcontext()
    return campaign_gc()


def _draw(strategy, seed: int, r: int, size: int, mode: str) -> list:
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    return generate_round(strategy, round_seed(seed, r), size, generation=mode)


def cost(args: argparse.Namespace) -> dict:
    from gpusem.fuzz.bundl.target import BundlTarget

    target = BundlTarget(backend="cpu")
    strategy = target.strategy("compile")
    cpu = {m: 0.0 for m in MODES}
    programs = {m: 0 for m in MODES}
    per_turn: list[dict] = []
    with _gc():
        for m in MODES:  # imports, strategies made ready: untimed
            _draw(strategy, 10_000, 0, args.round_size, m)
        for turn in range(args.turns):
            here = {m: [0.0, 0] for m in MODES}
            for seed, r in _rounds(args):
                order = MODES if (turn + r) % 2 == 0 else MODES[::-1]
                for m in order:
                    t0 = time.process_time()
                    n = len(_draw(strategy, seed, r, args.round_size, m))
                    here[m][0] += time.process_time() - t0
                    here[m][1] += n
            per_turn.append({m: round(1e3 * c / max(n, 1), 3)
                             for m, (c, n) in here.items()})
            for m in MODES:
                cpu[m] += here[m][0]
                programs[m] += here[m][1]
    target.close()
    ms = {m: round(1e3 * cpu[m] / max(programs[m], 1), 3) for m in MODES}
    return {"cpu_ms_per_program": ms, "programs": programs, "per_turn": per_turn,
            "direct_over_engine": round(ms["direct"] / ms["engine"], 3)}


def _quartiles(xs: list[float]) -> list[float]:
    return [round(q, 1) for q in statistics.quantiles(xs, n=4)] if len(xs) > 1 else xs


def quality(args: argparse.Namespace) -> dict:
    from gpusem.calculus.bundl.printer import print_program
    from gpusem.fuzz.bundl.coverage import coverage, universe
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.bundl.target import BundlTarget

    target = BundlTarget(backend="cpu")
    strategy = target.strategy("compile")
    names = set(universe("compile"))
    out: dict = {}
    reached: dict[str, dict[str, int]] = {}
    for m in MODES:
        sizes, choices, kernels = [], [], 0
        dup_in_round = dup_overall = 0
        seen_all: set[str] = set()
        counts: dict[str, int] = {}
        total = 0
        for seed, r in _rounds(args):
            seen_round: set[str] = set()
            for d in _draw(strategy, seed, r, args.round_size, m):
                g = as_generated(d.program)
                text = print_program(g.program)
                dup_in_round += text in seen_round
                dup_overall += text in seen_all
                seen_round.add(text)
                seen_all.add(text)
                sizes.append(target.size(d.program))
                choices.append(len(d.choices or ()))
                kernels += g.race_free_by_construction
                for name in coverage(g.program, "compile"):
                    counts[name] = counts.get(name, 0) + 1
                total += 1
        reached[m] = counts
        out[m] = {
            "programs": total,
            "statements_mean": round(statistics.mean(sizes), 2),
            "statements_quartiles": _quartiles(sizes),
            "statements_max": max(sizes),
            "over_20_statements_share": round(sum(s > 20 for s in sizes) / total, 3),
            "choices_mean": round(statistics.mean(choices), 1),
            "choices_quartiles": _quartiles(choices),
            "kernel_shaped_share": round(kernels / total, 3),
            "duplicates_in_round_share": round(dup_in_round / total, 4),
            "duplicates_overall_share": round(dup_overall / total, 4),
            "distinct_programs": len(seen_all),
            "coverage_names_reached": len(set(counts) & names),
            "coverage_universe": len(names),
            "coverage_names_per_program": round(sum(counts.values()) / total, 2),
        }
    target.close()
    e, d = set(reached["engine"]), set(reached["direct"])
    out["coverage_only_engine"] = {n: reached["engine"][n] for n in sorted(e - d)}
    out["coverage_only_direct"] = {n: reached["direct"][n] for n in sorted(d - e)}
    # names reached by both, where one mode reaches them at under half the other's rate
    rare = {}
    for n in sorted(e & d):
        a, b = reached["engine"][n], reached["direct"][n]
        if min(a, b) * 2 < max(a, b):
            rare[n] = {"engine": a, "direct": b}
    out["coverage_rate_differs_2x"] = rare
    return out


CHILD = """
import json, sys
sys.path.insert(0, {scripts!r})
from generation_quality import first_detections
print(json.dumps(first_detections({seeds!r}, {cap!r}, {size!r}, {batch!r})))
"""


def first_detections(seeds: list[int], cap: int, size: int, batch: int = 50) -> dict:
    """In this process (its GPUSEM_FAULT): per mode, per seed, the 1-based number of
    the first program whose compile check is a finding (not an internal error), or
    None within `cap` programs; with the first finding's kind. Programs are
    batch-checked `batch` at a time (one g++ build each), then read in order."""
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.targets import INTERNAL, checked

    out: dict = {}
    warm = BundlTarget(backend="cpu")  # imports, g++'s precompiled header: untimed
    for m in MODES:
        warm.prefetch([d.program for d in _draw(warm.strategy("compile"), 10_000, 0,
                                                10, m)], "compile")
    warm.close()
    for m in MODES:
        target = BundlTarget(backend="cpu")  # a fresh verdict cache per mode
        strategy = target.strategy("compile")
        rows = []
        cpu0, wall0 = time.process_time(), time.monotonic()
        for seed in seeds:
            found, kind, n, r = None, None, 0, 0
            while found is None and n < cap:
                drawn = [d.program for d in _draw(strategy, seed, r, size, m)]
                r += 1
                for i in range(0, len(drawn), batch):
                    some = drawn[i:i + batch][:cap - n]
                    target.prefetch(some, "compile")
                    for p in some:
                        n += 1
                        res = checked(target, p, "compile")
                        if res.status == "finding" and res.kind != INTERNAL:
                            found, kind = n, res.kind
                            break
                    if found is not None or n >= cap:
                        break
            rows.append({"seed": seed, "first": found, "kind": kind, "checked": n})
        checked_all = sum(x["checked"] for x in rows)
        # generation and checking together, this process's CPU (g++ runs apart) and
        # the wall time (g++ in it): what a program costs end to end in each mode
        out[m + "_cost"] = {"programs": checked_all, "cpu_ms_per_program": round(
            1e3 * (time.process_time() - cpu0) / max(checked_all, 1), 2),
            "wall_ms_per_program": round(
            1e3 * (time.monotonic() - wall0) / max(checked_all, 1), 2)}
        target.close()
        out[m] = rows
    return out


def faults(args: argparse.Namespace) -> dict:
    from gpusem.compiler.bundl_cuda.faults import FAULTS

    names = ["", *(args.faults.split(",") if args.faults else FAULTS)]
    scripts = os.path.dirname(os.path.abspath(__file__))

    def one(fault: str) -> dict:
        # no fault: every program is checked to the cap, so a smaller one there
        cap = args.cap if fault or args.baseline_cap is None else args.baseline_cap
        code = CHILD.format(scripts=scripts, seeds=args.seeds, cap=cap,
                            size=args.round_size, batch=args.batch)
        env = dict(os.environ, GPUSEM_FAULT=fault)
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", code], env=env, text=True,
                              capture_output=True, check=False)
        if proc.returncode != 0:
            return {"fault": fault or "(none)",
                    "error": proc.stderr.strip().splitlines()[-3:]}
        rows = json.loads(proc.stdout.strip().splitlines()[-1])
        row: dict = {"fault": fault or "(none)", "cap": cap,
                     "wall_s": round(time.monotonic() - t0)}
        for m in MODES:
            row[m + "_cost"] = rows[m + "_cost"]
            firsts = [x["first"] for x in rows[m]]
            hit = [f for f in firsts if f is not None]
            row[m] = {"first": firsts, "found": len(hit),
                      "kinds": sorted({x["kind"] for x in rows[m] if x["kind"]}),
                      "median_first_capped": statistics.median(
                          [f if f is not None else cap + 1 for f in firsts])}
        print(json.dumps(row), flush=True)
        return row

    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        rows = list(pool.map(one, names))
    summary = {m: {"seeds_found": sum(r[m]["found"] for r in rows[1:] if m in r),
                   "faults_found_every_seed": sum(r[m]["found"] == len(args.seeds)
                                                  for r in rows[1:] if m in r),
                   "sum_median_first_capped": sum(r[m]["median_first_capped"]
                                                  for r in rows[1:] if m in r)}
               for m in MODES}
    better = worse = 0
    for r in rows[1:]:
        if "engine" in r:
            a, b = r["engine"]["median_first_capped"], r["direct"]["median_first_capped"]
            better += b < a
            worse += b > a
    summary["direct_earlier_faults"], summary["direct_later_faults"] = better, worse
    base = rows[0]  # no fault: every mode checks its whole cap, a like-for-like cost
    if "engine_cost" in base:
        summary["no_fault_cost"] = {m: base[m + "_cost"] for m in MODES}
    return {"cap": args.cap, "rows": rows, "summary": summary}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parts", nargs="+", choices=("cost", "quality", "faults"))
    ap.add_argument("--seeds", default="0,1", help="comma-separated campaign seeds")
    ap.add_argument("--rounds", type=int, default=4, help="cost/quality: rounds a seed")
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--turns", type=int, default=2, help="cost: passes over the rounds")
    ap.add_argument("--cap", type=int, default=400, help="faults: programs a seed")
    ap.add_argument("--faults", default="", help="faults: comma-separated (all)")
    ap.add_argument("--batch", type=int, default=50, help="faults: programs a build")
    ap.add_argument("--baseline-cap", type=int, default=None,
                    help="faults: the cap of the no-fault child (default --cap)")
    ap.add_argument("--parallel", type=int, default=1, help="faults: children at once")
    ap.add_argument("--json", help="write the result here (also printed)")
    args = ap.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",")]
    result: dict = {"command": " ".join(["python", *sys.argv]),
                    "machine": f"{platform.machine()} {os.cpu_count()} cpus",
                    "loadavg_before": [round(x, 2) for x in os.getloadavg()],
                    "seeds": args.seeds, "rounds": args.rounds,
                    "round_size": args.round_size}
    try:
        import hypothesis

        result["hypothesis"] = hypothesis.__version__
        result["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                          capture_output=True, text=True,
                                          check=False).stdout.strip()
    except ImportError:
        pass
    for part in args.parts:
        result[part] = {"cost": cost, "quality": quality, "faults": faults}[part](args)
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
