"""The soundness property of the Bundl target over many generated programs, with the
coverage table of the rules they reach (issue 14, "Done when").

    python scripts/soundness_run.py --programs 100000 --seed 1 --jobs 1 \\
        --out results/soundness/soundness_100k.json

Theorem 4.1 (progress), under the default rules: a well-typed program never gets stuck.
Each program is drawn from the target's `soundness` strategy (the general well-typed
generator, `programs(max_blocks=2, max_threads=8)`), checked well-typed, and run with
a seeded random schedule (its seed from the program's number), recording every rule it
applies. Verdicts: terminated; trap (division by zero, out of bounds: the calculus's
own errors); budget (the step budget); stuck (a finding: a soundness bug); deadlock
(not Theorem 4.1's business, but the generator promises deadlock-free programs: a
finding of the generator); ill-typed (a generator bug). Every `--preservation-every`-th
program is run again under round-robin with the run-time preservation check (Lemma
A.8: after every step the thread's whole term type-checks again).

Programs are drawn in rounds of 100 seeded by hash(seed, round) (fuzz/bundl/sample.py,
as a campaign seeds its rounds); with `--jobs J`, job j takes the rounds r = j mod J, so
a run's programs do not depend on J. The coverage table counts, per rule (typing T-*,
semantic S-* and E-*), the programs that exercised it, and per 10,000 programs.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import platform
import sys
import time
from pathlib import Path

ROUND = 100
MAX_STEPS = 200_000


def run_job(job: int, jobs: int, programs: int, seed: int, preservation_every: int,
            queue) -> None:
    """Check this job's share of the `programs` programs; put (counts, findings)."""
    from gpusem.calculus.bundl.printer import print_program
    from gpusem.calculus.errors import GpusemError
    from gpusem.fuzz.bundl.coverage import typing_rules
    from gpusem.fuzz.bundl.sample import draw_round
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.interpreter.bundl.preservation import preservation_check
    from gpusem.interpreter.bundl.schedulers import run_program
    from gpusem.typing_rules.bundl.stmt import check_program

    strategy = BundlTarget().strategy("soundness")
    verdicts: collections.Counter[str] = collections.Counter()
    rules: collections.Counter[str] = collections.Counter()
    findings: list[dict] = []
    rounds = (programs + ROUND - 1) // ROUND
    for r in range(job, rounds, jobs):
        want = min(ROUND, programs - r * ROUND)
        for k, prog in enumerate(draw_round(strategy, seed, r)[:want]):
            number = r * ROUND + k
            try:
                check_program(prog)
            except GpusemError as err:
                verdicts["ill-typed"] += 1
                findings.append({"program": number, "verdict": "ill-typed",
                                 "detail": err.one_line(), "source": print_program(prog)})
                continue
            seen: set[str] = set()
            out = run_program(prog, f"random:{number}", max_steps=MAX_STEPS, seen=seen)
            verdict = "trap" if out.trap else out.kind
            verdicts[verdict] += 1
            rules.update(seen | typing_rules(prog))
            if verdict in ("stuck", "deadlock"):
                findings.append({"program": number, "verdict": verdict,
                                 "detail": f"[{out.rule}] {out.message}",
                                 "source": print_program(prog)})
            if preservation_every and number % preservation_every == 0:
                try:
                    run_program(prog, "rr", max_steps=MAX_STEPS,
                                check=preservation_check(prog))
                    verdicts["preservation checked"] += 1
                except GpusemError as err:
                    verdicts["preservation failed"] += 1
                    findings.append({"program": number, "verdict": "preservation",
                                     "detail": err.one_line(),
                                     "source": print_program(prog)})
        queue.put(("progress", job, sum(v for k, v in verdicts.items()
                                        if not k.startswith("preservation"))))
    queue.put(("done", job, (dict(verdicts), dict(rules), findings)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--preservation-every", type=int, default=50)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from gpusem.fuzz.bundl.target import BundlTarget

    t0 = time.monotonic()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=run_job, args=(j, args.jobs, args.programs, args.seed,
                                               args.preservation_every, queue))
             for j in range(args.jobs)]
    for p in procs:
        p.start()
    verdicts: collections.Counter[str] = collections.Counter()
    rules: collections.Counter[str] = collections.Counter()
    findings: list[dict] = []
    done, progress = 0, [0] * args.jobs
    while done < args.jobs:
        try:
            kind, job, payload = queue.get(timeout=30)
        except Exception:  # noqa: BLE001 - queue.Empty: is every job still alive?
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise SystemExit(f"a job died (exit {dead[0].exitcode}): see above")
            continue
        if kind == "progress":
            progress[job] = payload
            n = sum(progress)
            rate = n / max(time.monotonic() - t0, 1e-9)
            print(f"{n} programs, {rate:.1f}/s", file=sys.stderr, flush=True)
            continue
        done += 1
        v, r, f = payload
        verdicts.update(v)
        rules.update(r)
        findings += f
    for p in procs:
        p.join()
    seconds = time.monotonic() - t0
    n = sum(v for k, v in verdicts.items() if not k.startswith("preservation"))
    universe = BundlTarget().coverage_universe("soundness")
    table = {name: {"programs": rules[name], "per_10000": round(rules[name] * 1e4 / n, 1)}
             for name in universe}
    result = {
        "command": "python " + " ".join(sys.argv),
        "device": f"{os.cpu_count()} CPUs ({platform.machine()} {platform.system()}), "
                  f"{args.jobs} job(s), python {platform.python_version()}",
        "property": "soundness (Theorem 4.1, progress; preservation on a sample)",
        "rules": "fixed",
        "programs": n,
        "seconds": round(seconds, 1),
        "programs_per_s": round(n / seconds, 1),
        "verdicts": dict(verdicts),
        "findings": findings[:20],
        "findings_total": len(findings),
        "coverage": table,
        "blind_spots": [name for name in universe if rules[name] == 0],
    }
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "coverage"}, indent=1))


if __name__ == "__main__":
    main()
