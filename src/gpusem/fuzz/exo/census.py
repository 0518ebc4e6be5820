"""A verdict census: many generated programs through both checkers, every verdict
tallied (issue 16, item 5: "at least 5,000 programs checked by both checkers"). Where
`gpusem fuzz --target exo` hunts and shrinks each new finding, the census counts: how
often each checker accepts, how often they agree under each rule set, which mutation
is rejected by whom, and the first program of every finding signature (the campaign's
bundles hold the shrunk ones).

Run: `python -m gpusem.fuzz.exo.census --programs 5000 --jobs 2 --out FILE.json`
(`--exo-python` or GPUSEM_EXO_PYTHON picks the Exo). Deterministic from `--seed`:
program k is drawn in round k // 100 with seed hash(seed, round), as a campaign does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import re
import sys
import time
from collections import Counter

ROUND = 100


def _round_seed(seed: int, r: int) -> int:
    return int.from_bytes(hashlib.sha256(f"exo-census:{seed}:{r}".encode()).digest()[:8],
                          "little")


def round_programs(seed: int, r: int, n: int = ROUND, steer: bool = False) -> list:
    """Round `r`'s programs; `steer`: the compile census's mix (strategies.
    compile_programs: Exo's async lowerings) instead of the verdict census's."""
    from gpusem.fuzz.exo.strategies import compile_programs, programs
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    out: list = []

    def collect(program) -> None:
        out.append(program)

    test = settings(max_examples=n, database=None, deadline=None,
                    phases=[Phase.generate], suppress_health_check=list(HealthCheck))(
        given(compile_programs() if steer else programs())(collect))
    hseed(_round_seed(seed, r))(test)()
    return out[:n]


def coverage_census(seed: int, rounds: list[int], per_round: int = ROUND) -> dict:
    """Issue 26's constructs (fuzz/exo/coverage.py) among the programs of `rounds`,
    counted from their syntax alone (no Exo): what a census of those rounds draws."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.fuzz.exo.coverage import constructs_of

    count: Counter = Counter()
    n = 0
    for r in rounds:
        for k in round_programs(seed, r, per_round):
            n += 1
            count.update(constructs_of(parse_module(k.source(), "gen.gpuir").procs[-1]))
    return {"programs": n, "coverage": count}


def census_rounds(rounds: list[int], seed: int, per_round: int = ROUND,
                  deadline: float = float("inf")) -> dict:
    """Check the programs of `rounds` (none started after `deadline`, a time.time());
    the tallies (mergeable with `merge`)."""
    from gpusem.compiler.gpuir_exo.driver import ExoDriver
    from gpusem.fuzz.exo.checking import check_program
    from gpusem.fuzz.exo.coverage import constructs_of
    from gpusem.fuzz.exo.findings import rule_key

    tally: dict = {"programs": 0, "unexpressible": 0, "exo": Counter(),
                   "unexpressible_constructs": Counter(),
                   "paper": Counter(), "fixed": Counter(), "pairs": Counter(),
                   "mutations": {}, "findings": {}, "exo_seconds": 0.0,
                   "by_round": {}, "coverage": Counter(),
                   "coverage_compared": Counter(), "by_construct": {}}
    with ExoDriver() as driver:
        tally["install"] = driver.install.as_json()
        for r in rounds:
            if time.time() >= deadline:
                break
            # each round's verdict pairs: two runs on two machines compare round by
            # round (the verdicts of a program do not depend on the machine)
            round_pairs = tally["by_round"].setdefault(str(r), Counter())
            for k in round_programs(seed, r, per_round):
                c = check_program(driver, k)
                tally["programs"] += 1
                used = constructs_of(c.proc) if c.proc is not None else frozenset()
                tally["coverage"].update(used)
                if c.unexpressible or c.exo is None:
                    tally["unexpressible"] += 1
                    round_pairs["unexpressible"] += 1
                    # the construct without its numbers: `Await(.., N) on an mbarrier`
                    what = re.sub(r"-?\d+", "N", c.unexpressible_construct.split(" (")[0])
                    tally["unexpressible_constructs"][what or "no Exo answer"] += 1
                    continue
                tally["exo_seconds"] += c.exo.seconds
                ex = c.exo.verdict.kind
                gp, gf = c.gpusem["paper"].kind, c.gpusem["fixed"].kind
                tally["exo"][ex] += 1
                tally["paper"][gp] += 1
                tally["fixed"][gf] += 1
                tally["pairs"][f"exo={ex}|paper={gp}|fixed={gf}"] += 1
                tally["coverage_compared"].update(used)
                for u in used:
                    tally["by_construct"].setdefault(u, Counter())[
                        f"exo={ex}|paper={gp}|fixed={gf}"] += 1
                round_pairs[f"exo={ex}|paper={gp}|fixed={gf}"] += 1
                m = tally["mutations"].setdefault(k.mutation or "none", Counter())
                m["total"] += 1
                m["exo_rejects"] += ex != "accept"
                m["paper_rejects"] += gp != "accept"
                m["fixed_rejects"] += gf != "accept"
                if not c.comparison.agree:
                    f = tally["findings"].setdefault(c.comparison.signature, {
                        "kind": c.comparison.kind, "rule": rule_key(c), "count": 0,
                        "first_program": c.source, "defines": c.defines,
                        "constructs": sorted(used)})
                    f["count"] += 1
    return tally


def merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for key in ("programs", "unexpressible", "exo_seconds"):
        out[key] = a.get(key, 0) + b.get(key, 0)
    for key in ("exo", "paper", "fixed", "pairs", "unexpressible_constructs",
                "coverage", "coverage_compared"):
        out[key] = Counter(a.get(key, {})) + Counter(b.get(key, {}))
    by = {u: Counter(v) for u, v in a.get("by_construct", {}).items()}
    for u, v in b.get("by_construct", {}).items():
        by[u] = by.get(u, Counter()) + Counter(v)
    out["by_construct"] = by
    muts = {m: Counter(v) for m, v in a.get("mutations", {}).items()}
    for m, v in b.get("mutations", {}).items():
        muts[m] = muts.get(m, Counter()) + Counter(v)
    out["mutations"] = muts
    finds = {s: dict(f) for s, f in a.get("findings", {}).items()}
    for s, f in b.get("findings", {}).items():
        if s in finds:
            finds[s]["count"] += f["count"]
        else:
            finds[s] = dict(f)
    out["findings"] = finds
    out["by_round"] = {**a.get("by_round", {}), **b.get("by_round", {})}
    out["install"] = a.get("install") or b.get("install")
    return out


def _job(args: tuple) -> dict:
    rounds, seed, per_round, deadline = args
    os.nice(5)
    return census_rounds(rounds, seed, per_round, deadline)


def run(programs: int, seed: int, jobs: int, seconds: float = 1e9) -> dict:
    """`seconds`: no round starts after that long (a device call's hard limit)."""
    nrounds = -(-programs // ROUND)
    shards = [[r for r in range(nrounds) if r % jobs == j] for j in range(jobs)]
    t0 = time.time()
    deadline = t0 + seconds
    if jobs == 1:
        parts = [census_rounds(shards[0], seed, ROUND, deadline)]
    else:
        with mp.get_context("spawn").Pool(jobs) as pool:
            parts = pool.map(_job, [(s, seed, ROUND, deadline) for s in shards if s])
    total: dict = {}
    for p in parts:
        total = merge(total, p) if total else p
    total["seconds"] = round(time.time() - t0, 1)
    total["seed"], total["jobs"] = seed, jobs
    both = total["programs"] - total["unexpressible"]
    total["checked_by_both"] = both
    agree = {r: sum(n for k, n in total["pairs"].items()
                    if (f"{r}=accept" in k) == ("exo=accept" in k)) for r in ("paper",
                                                                              "fixed")}
    total["agreement"] = {r: round(n / both, 4) if both else None
                          for r, n in agree.items()}
    total["coverage_share"] = {u: round(n / total["programs"], 4)
                               for u, n in sorted(total["coverage"].items())}
    return total


def common_arguments(ap: argparse.ArgumentParser) -> None:
    """The options the verdict census and the compile census share."""
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--exo-python")
    ap.add_argument("--seconds", type=float, default=1e9,
                    help="start no new round after this long")
    ap.add_argument("--out", required=True)


def require_exo(exo_python: str | None) -> None:
    """Point the driver at `exo_python` (else GPUSEM_EXO_PYTHON); where no Exo-GPU is
    installed, one line and exit 2, before any job starts."""
    if exo_python:
        os.environ["GPUSEM_EXO_PYTHON"] = exo_python
    from gpusem.calculus.errors import GpusemError
    from gpusem.compiler.gpuir_exo.driver import ExoDriver

    try:
        ExoDriver().close()
    except GpusemError as err:
        print(f"gpusem: {err.one_line()}", file=sys.stderr)
        raise SystemExit(2) from None


def write_json(total: dict, out: str) -> None:
    with open(out, "w") as f:
        json.dump(total, f, indent=1, sort_keys=True, default=dict)
        f.write("\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=1000)
    common_arguments(ap)
    a = ap.parse_args(argv)
    require_exo(a.exo_python)
    total = run(a.programs, a.seed, a.jobs, a.seconds)
    write_json(total, a.out)
    print(f"{total['checked_by_both']} programs checked by both checkers in "
          f"{total['seconds']} s; agreement {total['agreement']}; "
          f"{len(total['findings'])} finding signatures -> {a.out}")


if __name__ == "__main__":
    main()
