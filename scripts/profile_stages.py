"""Where the time goes per program of the `compile` property (issue 19).

Runs the stages of a campaign's rounds by hand (the rounds a campaign with the same
seed checks, drawn as its prefetch draws them) and times each stage separately (wall
seconds; the backend's worker and compiler processes are waited for, so their time is
inside `build` and `launch`):

  generate        hypothesis draws the round (generate-only, as the campaign's prefetch)
  typecheck       Γ ⊢ p: not a campaign stage (the generators make well-typed programs)
                  and not in the totals; measured to show what checking would cost
  reference       the interpreter's outcome, the campaign's fast path
                  (`fuzz/bundl/fast_reference.py`: big-step + the z3 proof where needed)
  full reference  the reference pipeline's, split (`before` total, not the campaign's):
    rr              the small-step run under round-robin
    race            the z3 race analysis (general programs; kernel-shaped ones are
                    race-free by construction)
    schedules       the other three schedules (greedy, greedy-reverse, random:1)
  compile         Bundl -> CUDA (the pipeline's passes and the emitter)
  jobs            the launch jobs: initial globals, one job per harness seed
  build           the backend's build of the round (g++ on cpu, NVRTC on cuda)
  launch          the backend's launches (harness fibres on cpu; on cuda the worker
                  round trips, the shared-memory scribble, the kernel, the copies),
    kernel          of which the kernels themselves (the backend's own timing)
  compare         outputs against the interpreter's memory

  python scripts/profile_stages.py --backend cpu --rounds 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from collections import Counter

CAMPAIGN = ("generate", "reference", "compile", "jobs", "build", "launch", "compare")
FULL = ("rr", "race", "schedules")  # the reference pipeline's reference, split
EXTRA = ("typecheck", "kernel")  # reported, in no total (kernel is inside launch)


def profile(backend_name: str, rounds: int, round_size: int, seed: int) -> dict:
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl import compile_property as cp
    from gpusem.fuzz.bundl.fast_reference import fast_reference
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.typing_rules.bundl.stmt import check_program as typecheck

    target = BundlTarget(backend=backend_name)
    backend = cp.shared_backend(backend_name)
    t = Counter[str]()
    kinds, verdicts = Counter[str](), Counter[str]()
    programs = 0
    _warm_up(target, backend, backend_name, seed)
    wall0, cpu0 = time.perf_counter(), _cpu_seconds()
    try:
        for r in range(rounds):
            t0 = time.perf_counter()
            gens = _round_programs(target, seed, r, round_size)
            t["generate"] += time.perf_counter() - t0
            jobs, owners, kernels, outcomes = [], [], {}, {}
            for n, g in enumerate(gens):
                programs += 1
                kinds["kernel-shaped" if g.race_free_by_construction else "general"] += 1
                prog, prove = g.program, not g.race_free_by_construction
                t0 = time.perf_counter()
                typecheck(prog)
                t["typecheck"] += time.perf_counter() - t0
                _timed_full_reference(prog, prove, t)
                t0 = time.perf_counter()
                outcome = fast_reference(prog, prove_race_free=prove).outcome
                t["reference"] += time.perf_counter() - t0
                if (skip := cp._not_compared(outcome)) is not None:
                    verdicts[skip.kind] += 1
                    continue
                outcomes[n] = outcome
                t0 = time.perf_counter()
                try:
                    kernel = compile_program(prog, CompileOptions(sync_motion=True))
                except Exception as err:  # noqa: BLE001 - counted as the campaign does
                    verdicts[cp._compile_failure(err).kind] += 1
                    continue
                finally:
                    t["compile"] += time.perf_counter() - t0
                kernels[n] = kernel
                t0 = time.perf_counter()
                for job in cp._jobs(prog, kernel, cp.HARNESS_SEEDS, backend_name):
                    jobs.append(job)
                    owners.append(n)
                t["jobs"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            _build(backend, [j.spec for j in jobs])
            t["build"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            results = backend.run(jobs) if jobs else []
            t["launch"] += time.perf_counter() - t0
            t["kernel"] += sum(res.elapsed for res in results)
            t0 = time.perf_counter()
            by_program: dict[int, list] = {}
            for n, res in zip(owners, results, strict=True):
                by_program.setdefault(n, []).append(res)
            for n, rs in by_program.items():
                v = cp.compare(gens[n].program, outcomes[n].globals, kernels[n].source,
                               rs, cp.HARNESS_SEEDS)
                verdicts[v.kind] += 1
            t["compare"] += time.perf_counter() - t0
    finally:
        target.close()
    wall, cpu = time.perf_counter() - wall0, _cpu_seconds() - cpu0
    per = {s: round(1000 * t[s] / max(1, programs), 3) for s in (*CAMPAIGN, *FULL, *EXTRA)}
    now = sum(per[s] for s in CAMPAIGN)
    before = now - per["reference"] + sum(per[s] for s in FULL)
    return {"programs": programs, "rounds": rounds, "round_size": round_size,
            "seed": seed, "backend": backend_name, "property": "compile",
            "ms_per_program": per,
            "share": {s: round(per[s] / now, 4) for s in CAMPAIGN},
            "campaign_ms_per_program": round(now, 3),
            "full_reference_ms_per_program": round(before, 3),
            "one_process_programs_per_min": round(60_000 / now, 1) if now else 0.0,
            "programs_by_kind": dict(kinds), "verdicts": dict(verdicts),
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "cores": os.cpu_count(),
            "loadavg": [round(x, 2) for x in os.getloadavg()],
            "note": "wall ms per program in one process. campaign: the stages as the "
                    "campaign runs them (the fast reference); full_reference: the same "
                    "with the reference pipeline's four small-step runs + z3 instead; "
                    "typecheck (not a campaign stage) and kernel (inside launch) are in "
                    "no total; build and launch include the backend's worker and "
                    "compiler processes; wall_s/cpu_s include the full reference, "
                    "which the campaign does not run",
            "command": shlex.join([os.path.basename(sys.executable), *sys.argv])}


def _warm_up(target, backend, backend_name: str, seed: int) -> None:
    """One small round of another seed, untimed: imports, hypothesis, the backend's
    worker (a CUDA context), g++'s precompiled header."""
    from gpusem.fuzz.bundl import compile_property as cp

    gens = _round_programs(target, seed + 1, 0, 10)
    cp.check_batch([g.program for g in gens], backend_name, cp.HARNESS_SEEDS, True,
                   [cp.reference(g.program) for g in gens])


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _round_programs(target, seed: int, r: int, round_size: int) -> list:
    """The programs of round r, drawn as the campaign draws them."""
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    drawn = generate_round(target.strategy("compile"), round_seed(seed, r), round_size)
    return [as_generated(d.program) for d in drawn]


def _timed_full_reference(prog, prove_race_free: bool, t: Counter) -> None:
    """compile_property.reference, stage by stage (the same calls in the same order)."""
    from gpusem.fuzz.bundl import compile_property as cp
    from gpusem.interpreter.bundl.schedulers import run_program

    t0 = time.perf_counter()
    outcome = run_program(prog, schedule="rr", max_steps=2_000_000)
    t["rr"] += time.perf_counter() - t0
    if outcome.kind != "terminated":
        return
    if prove_race_free:
        t0 = time.perf_counter()
        unproven = cp.unproven_race_freedom(prog)
        t["race"] += time.perf_counter() - t0
        if unproven is not None:
            return
    t0 = time.perf_counter()
    for schedule in cp.SCHEDULES[1:]:
        other = run_program(prog, schedule=schedule, max_steps=2_000_000)
        if other.kind != "terminated" or other.globals != outcome.globals:
            break
    t["schedules"] += time.perf_counter() - t0


def _build(backend, specs) -> None:
    """The backend's build step alone (the run that follows finds it cached)."""
    if not specs:
        return
    if hasattr(backend, "build"):
        backend.build(specs)  # cpu: g++ into one shared library
    else:
        backend._ensure_built(specs)  # cuda: NVRTC into one module, then loaded


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the result here (also printed)")
    args = ap.parse_args(argv)
    # A fresh build cache: a round's kernels are built, not found from an earlier run.
    with tempfile.TemporaryDirectory(prefix="gpusem-profile-") as cache:
        os.environ["GPUSEM_CACHE_DIR"] = cache
        result = profile(args.backend, args.rounds, args.round_size, args.seed)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
