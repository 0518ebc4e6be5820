"""The bug-finding power of what a campaign of the `compile` property draws (issue 31.3,
"cheaper programs": a bound on program size must not cost it). Needs NVRTC (for T1's
shape), not a GPU; the faults run on the cpu backend.

For each seed, the campaign's rounds (`fuzz/hunt.generate_round` over the bundl target's
`compile` strategy, `round_seed(seed, r)`, the campaign's round size), and over those
programs, in the order a campaign checks them:

  faults    for each seeded fault of the Bundl compiler (`compiler/bundl_cuda/faults`,
            switched on in this process as GPUSEM_FAULT does), the programs drawn until
            the first detection (1-based; null: none within the rounds). A program can
            show a fault only where the fault changes its CUDA text (or its
            compilation fails), so only those are checked (`compile_property
            .check_batch` on the cpu backend, fast reference confirmed by the full one
            as the campaign does): the same first detection as checking them all
  coverage  the names of `fuzz/bundl/coverage.universe("compile")` (typing rules,
            semantic rules, lowering paths) the programs exercise, their union
  t1        programs whose PTX (the newest NVRTC wheel, the cuda backend's options)
            the static PTX oracle flags `ld.nc-read-only`: T1's class (NVVM's
            `ld.global.nc` of a buffer the thread wrote, results/toolchain/FINDINGS.md:
            Global scratch written, then read in one arm)

`--tree A --tree B` runs each tree's src/ (one process a seed and tree, in turns) and
lines them up.

  python scripts/progsize_power.py --seeds 0 1 2 3 --rounds 5 --json out.json
  python scripts/progsize_power.py --tree /tmp/main --tree . --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

from tree_runs import runs_over_trees, tree_commit, tree_env, write_result

BATCH = 20  # changed programs checked per cpu build (one g++ call)


def draw(seed: int, rounds: int, size: int) -> list:
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    strategy = BundlTarget().strategy("compile")
    return [as_generated(d.program) for r in range(rounds)
            for d in generate_round(strategy, round_seed(seed, r), size)]


def _source(program, fault: str) -> str | None:
    """The program's CUDA under `fault` ("" none); None where compiling fails."""
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl.compile_property import SYNC_OF_PROPERTY

    os.environ["GPUSEM_FAULT"] = fault
    try:
        return compile_program(program, CompileOptions(
            sync=SYNC_OF_PROPERTY["compile"])).source
    except Exception:  # noqa: BLE001 - a compile error is what check_batch reports
        return None
    finally:
        os.environ.pop("GPUSEM_FAULT", None)


def first_detection(gens: list, clean: list[str | None], fault: str) -> int | None:
    """1-based index of the first program of `gens` on which `fault` is found."""
    from gpusem.fuzz.bundl import compile_property as cp
    from gpusem.interpreter.bundl.reference import fast_reference, reference

    def batches():  # the changed programs in draw order, BATCH at a time
        part = []
        for i, g in enumerate(gens):
            if _source(g.program, fault) != clean[i]:
                part.append(i)
            if len(part) == BATCH:
                yield part
                part = []
        if part:
            yield part

    for part in batches():
        progs = [gens[i] for i in part]
        refs = [fast_reference(g.program, prove_race_free=not g.race_free_by_construction)
                for g in progs]

        def confirm(k: int, progs=progs, refs=refs):
            g = progs[k]
            return reference(g.program, prove_race_free=not
                             g.race_free_by_construction) if refs[k].fast else None

        os.environ["GPUSEM_FAULT"] = fault
        try:
            verdicts = cp.check_batch([g.program for g in progs], "cpu",
                                      cp.HARNESS_SEEDS, True, refs, confirm,
                                      sync=cp.SYNC_OF_PROPERTY["compile"])
        finally:
            os.environ.pop("GPUSEM_FAULT", None)
        for i, v in zip(part, verdicts, strict=True):
            if v is not None and not v.agree:
                return i + 1
    return None


def t1_count(gens: list, clean: list[str | None]) -> list[int]:
    """1-based indices of the programs whose PTX has T1's `.nc` load of a written
    buffer (the `ld.nc-read-only` check)."""
    from gpusem.compiler.backends import nvrtc_lib
    from gpusem.compiler.backends.ptx_check import check_ptx

    lib = nvrtc_lib.find_nvrtc()[0]
    hits = []
    for i, src in enumerate(clean):
        if src is None:
            continue
        ptx = nvrtc_lib.compile_ptx(lib, src)
        if ptx.ptx is None:
            continue
        verdict = check_ptx(ptx.ptx, lib.label, src)
        if any(f.check == "ld.nc-read-only" for f in verdict.findings):
            hits.append(i + 1)
    return hits


def measure_seed(seed: int, rounds: int, size: int, faults: list[str]) -> dict:
    from gpusem.fuzz.bundl.coverage import coverage

    t0 = time.perf_counter()
    gens = draw(seed, rounds, size)
    clean = [_source(g.program, "") for g in gens]
    seen: set[str] = set()
    for g in gens:
        seen |= coverage(g.program, "compile")
    t1 = t1_count(gens, clean)
    found = {f: first_detection(gens, clean, f) for f in faults}
    return {"seed": seed, "programs": len(gens), "faults": found,
            "coverage": sorted(seen), "t1": t1,
            "seconds": round(time.perf_counter() - t0, 1)}


def _run_tree(tree: str, args: argparse.Namespace, seed: int) -> dict:
    env = tree_env(tree, drop=["GPUSEM_FAULT"])
    cmd = [sys.executable, os.path.abspath(__file__), "--one-seed", str(seed),
           "--rounds", str(args.rounds), "--round-size", str(args.round_size),
           "--faults", *args.faults]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def summary(seeds: list[dict], faults: list[str]) -> dict:
    from gpusem.fuzz.bundl.coverage import universe

    union = set().union(*(s["coverage"] for s in seeds))
    per_fault = {}
    for f in faults:
        found = [s["faults"][f] for s in seeds]
        hits = sorted(x for x in found if x is not None)
        per_fault[f] = {"found_in_seeds": len(hits), "of": len(found),
                        "programs_to_first": found,
                        "median_when_found": hits[len(hits) // 2] if hits else None}
    programs = sum(s["programs"] for s in seeds)
    t1 = sum(len(s["t1"]) for s in seeds)
    return {"programs": programs, "faults": per_fault,
            "faults_found_in_every_seed": sum(
                p["found_in_seeds"] == p["of"] for p in per_fault.values()),
            "fault_seed_pairs_found": sum(p["found_in_seeds"]
                                          for p in per_fault.values()),
            "coverage": {"union": len(union), "universe": len(universe("compile")),
                         "names": sorted(union)},
            "t1": {"programs": t1, "per_1000": round(1000 * t1 / programs, 2),
                   "at": {s["seed"]: s["t1"] for s in seeds}}}


def main(argv: list[str] | None = None) -> int:
    from gpusem.compiler.bundl_cuda.faults import FAULTS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--faults", nargs="+", default=sorted(FAULTS))
    ap.add_argument("--jobs", type=int, default=1,
                    help="with --tree: this many (tree, seed) processes at once, the "
                         "trees side by side (a loaded machine's load on both alike)")
    ap.add_argument("--tree", action="append", default=[])
    ap.add_argument("--one-seed", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.one_seed is not None:
        print(json.dumps(measure_seed(args.one_seed, args.rounds, args.round_size,
                                      args.faults)))
        return 0
    trees = args.tree or [""]
    runs = runs_over_trees(trees, args.seeds, args.jobs,
                           lambda tree, seed: _run_tree(tree, args, seed),
                           lambda seed: measure_seed(seed, args.rounds, args.round_size,
                                                     args.faults))
    result: dict = {"trees": [{"tree": tree or "(this process)",
                               "commit": tree_commit(tree or "."),
                               "seconds": [s["seconds"] for s in seeds],
                               **summary(seeds, args.faults)}
                              for tree, seeds in runs.items()]}
    if len(trees) == 2:
        a, b = (set(t["coverage"]["names"]) for t in result["trees"])
        result["coverage_lost"] = sorted(a - b)
        result["coverage_gained"] = sorted(b - a)
    result.update({"seeds": args.seeds, "rounds": args.rounds, "jobs": args.jobs,
                   "round_size": args.round_size, "backend": "cpu",
                   "command": shlex.join([os.path.basename(sys.executable), *sys.argv])})
    write_result(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
