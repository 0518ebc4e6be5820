"""The tallies of the verdict census (census.py): which programs a round draws, one
round through both checkers (every verdict counted: each checker's, the pairs under
both rule sets, per round, per mutation, per construct, the first program of every
finding signature), and how tallies of disjoint rounds merge into one census.

Program k of a census is drawn in round k // 100 with seed hash(seed, round), as a
campaign does: a round is the same programs wherever and whenever it is checked.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from functools import cache
from pathlib import Path

ROUND = 100


def _round_seed(seed: int, r: int) -> int:
    digest = hashlib.sha256(f"exo-census:{seed}:{r}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


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


@cache
def generator_fingerprint() -> str:
    """What decides which programs a round draws: hypothesis's version and the
    generator's sources. Rounds drawn under two of these are not the same programs."""
    import hypothesis

    h = hashlib.sha256(hypothesis.__version__.encode())
    for name in ("strategies", "pipelines", "constructs"):
        h.update(Path(__file__).with_name(f"{name}.py").read_bytes())
    return f"hypothesis {hypothesis.__version__}, generator {h.hexdigest()[:16]}"


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


def empty_tally() -> dict:
    return {"programs": 0, "unexpressible": 0, "exo": Counter(),
            "unexpressible_constructs": Counter(),
            "paper": Counter(), "fixed": Counter(), "pairs": Counter(),
            "mutations": {}, "findings": {}, "exo_seconds": 0.0,
            "by_round": {}, "program_verdicts": {}, "coverage": Counter(),
            "coverage_compared": Counter(), "by_construct": {},
            "stage_seconds": Counter()}


def census_rounds(rounds: list[int], seed: int, per_round: int = ROUND,
                  deadline: float = float("inf")) -> dict:
    """Check the programs of `rounds` (none started after `deadline`, a time.time());
    the tallies (mergeable with `merge`)."""
    from gpusem.compiler.gpuir_exo.driver import ExoDriver

    tally = empty_tally()
    with ExoDriver() as driver:
        tally["install"] = driver.install.as_json()
        for r in rounds:
            if time.time() >= deadline:
                break
            tally = merge(tally, census_round(driver, seed, r, per_round))
    return tally


def census_round(driver, seed: int, r: int, per_round: int = ROUND) -> dict:
    """The tally of round `r`'s programs through `driver`'s Exo and gpusem's checker,
    with the verdict pair of each program (`program_verdicts`) and where the round's
    time went (`stage_seconds`: wall seconds drawing the programs, in Exo's checks,
    in the rest of each check: gpusem's parse, checker under both rule sets, emit,
    Exo's `explain` of a disagreeing hazard; `job_cpu`: this process's CPU)."""
    from gpusem.fuzz.exo.checking import check_program
    from gpusem.fuzz.exo.coverage import constructs_of
    from gpusem.fuzz.exo.findings import rule_key

    tally = empty_tally()
    tally["install"] = driver.install.as_json()
    tally["generator"] = generator_fingerprint()
    stage = tally["stage_seconds"]
    cpu0, t0 = time.process_time(), time.perf_counter()
    programs = round_programs(seed, r, per_round)
    stage["generate"] += time.perf_counter() - t0
    # each round's verdict pairs: two runs on two machines compare round by round
    # (the verdicts of a program do not depend on the machine)
    round_pairs = tally["by_round"].setdefault(str(r), Counter())
    verdicts = tally["program_verdicts"].setdefault(str(r), [])
    for k in programs:
        t = time.perf_counter()
        c = check_program(driver, k)
        spent = time.perf_counter() - t
        stage["exo_check"] += c.exo.seconds if c.exo is not None else 0.0
        stage["gpusem_and_rest"] += spent - (c.exo.seconds if c.exo else 0.0)
        tally["programs"] += 1
        used = constructs_of(c.proc) if c.proc is not None else frozenset()
        tally["coverage"].update(used)
        if c.unexpressible or c.exo is None:
            tally["unexpressible"] += 1
            round_pairs["unexpressible"] += 1
            verdicts.append("unexpressible")
            # the construct without its numbers: `Await(.., N) on an mbarrier`
            what = re.sub(r"-?\d+", "N", c.unexpressible_construct.split(" (")[0])
            tally["unexpressible_constructs"][what or "no Exo answer"] += 1
            continue
        tally["exo_seconds"] += c.exo.seconds
        ex = c.exo.verdict.kind
        gp, gf = c.gpusem["paper"].kind, c.gpusem["fixed"].kind
        pair = f"exo={ex}|paper={gp}|fixed={gf}"
        verdicts.append(pair)
        tally["exo"][ex] += 1
        tally["paper"][gp] += 1
        tally["fixed"][gf] += 1
        tally["pairs"][pair] += 1
        tally["coverage_compared"].update(used)
        for u in used:
            tally["by_construct"].setdefault(u, Counter())[pair] += 1
        round_pairs[pair] += 1
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
    stage["job_cpu"] += time.process_time() - cpu0
    return tally


def merge(a: dict, b: dict) -> dict:
    """The tally of two tallies of disjoint rounds: every count summed (a count of 0
    is kept: `exo_rejects: 0` of a mutation is a result), the first program of each
    finding signature taken from `a`."""
    out = dict(a)
    for key in ("programs", "unexpressible", "exo_seconds"):
        out[key] = a.get(key, 0) + b.get(key, 0)
    for key in ("exo", "paper", "fixed", "pairs", "unexpressible_constructs",
                "coverage", "coverage_compared", "stage_seconds"):
        out[key] = _add(a.get(key, {}), b.get(key, {}))
    for key in ("by_construct", "mutations"):
        out[key] = {k: _add(a.get(key, {}).get(k, {}), b.get(key, {}).get(k, {}))
                    for k in {**a.get(key, {}), **b.get(key, {})}}
    finds = {s: dict(f) for s, f in a.get("findings", {}).items()}
    for s, f in b.get("findings", {}).items():
        if s in finds:
            finds[s]["count"] += f["count"]
        else:
            finds[s] = dict(f)
    out["findings"] = finds
    for key in ("by_round", "program_verdicts"):  # disjoint rounds
        out[key] = {**a.get(key, {}), **b.get(key, {})}
    out["install"] = a.get("install") or b.get("install")
    out["generator"] = a.get("generator") or b.get("generator")
    return out


def _add(a: dict, b: dict) -> Counter:
    """a + b, keeping keys whose sum is 0 (Counter's + drops them)."""
    out = Counter(a)
    out.update(b)
    return out


def summarise(total: dict, seed: int) -> dict:
    """The census's headline numbers from its merged tallies: programs checked by
    both checkers, the share of them on which each rule set agrees with Exo about
    acceptance, each construct's share of the programs, the seconds per program of
    each stage."""
    total["seed"] = seed
    both = total["programs"] - total["unexpressible"]
    total["checked_by_both"] = both
    agree = {r: sum(n for k, n in total["pairs"].items()
                    if (f"{r}=accept" in k) == ("exo=accept" in k)) for r in ("paper",
                                                                              "fixed")}
    total["agreement"] = {r: round(n / both, 4) if both else None
                          for r, n in agree.items()}
    total["coverage_share"] = {u: round(n / total["programs"], 4)
                               for u, n in sorted(total["coverage"].items())}
    total["stage_seconds_per_program"] = {
        s: round(v / total["programs"], 4)
        for s, v in sorted(total.get("stage_seconds", {}).items())}
    return total
