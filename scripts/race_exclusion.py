"""How many generated well-typed Bundl programs does the compile oracle exclude as racy
or undecided, and how many of those are truly racy? (issue 14, item 3)

    python scripts/race_exclusion.py --programs 1000 --seed 1 --out results/bundl/race_exclusion.json

Programs: the general well-typed generator as the `compile` property draws it
(`generated_programs(max_blocks=2, max_threads=8)`: not race-free by construction, so
the z3 analysis must prove each one before it is compared). For each: the round-robin
run (not terminated: excluded for another reason), then `race.analyse` with the oracle's
limits (`unproven_race_freedom`: z3 resource units, RLIMIT_PAIR per pair and
RLIMIT_PROGRAM per program, since issue 24; 300 ms per pair and 1.5 s per program of
wall-clock time before): race-free, racy (a witness), undecided (z3 unknown, the
budget, or a walk that could not see every access). `rlimit` in the result: the z3
resource units the programs spent (the largest, and the 99th percentile).

Ground truth, on the sampled programs whose machine has at most `--gt-threads` threads
and whose round-robin run takes at most `--gt-steps` steps (the first `--gt-limit` of
them): exhaustive exploration of every interleaving (interpreter/bundl/explore.py,
partial-order reduced, `--gt-transitions` at most): deterministic (one final memory),
racy (several final memories, or a schedule that deadlocks), unknown (budget). A program the analysis
calls race-free but exploration finds racy would be a soundness bug of the analysis;
one it calls racy but exploration finds deterministic is a false exclusion (precision).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


USED: list[int] = []  # the z3 resource units each analysed program spent


def classify(prog) -> tuple[str, int, str]:
    """(oracle verdict, round-robin steps, the race analysis's description):
    not-terminated | race-free | racy | undecided."""
    from gpusem.interpreter.bundl.schedulers import run_program
    from gpusem.typing_rules.bundl.race import RLIMIT_PROGRAM, analyse

    out = run_program(prog, "rr", max_steps=2_000_000)
    if out.kind != "terminated":
        return "not-terminated", out.steps, ""
    report = analyse(prog, rlimit_total=RLIMIT_PROGRAM)  # as the oracle asks
    USED.append(report.rlimit)
    if report.race_free:
        return "race-free", out.steps, ""
    race = report.races[0]
    if report.undecided or race.first == "analysis":
        return "undecided", out.steps, report.describe()
    return "racy", out.steps, report.describe()


def ground_truth(prog, transitions: int) -> str:
    """deterministic | racy | unknown, by exhaustive exploration."""
    from gpusem.interpreter.bundl.schedulers import run_program

    out = run_program(prog, "exhaustive", max_steps=transitions)
    if out.kind == "budget":
        return "unknown"
    if out.kind != "terminated":
        return "racy"  # some schedule deadlocks or gets stuck: not schedule-independent
    return "deterministic" if len(out.final_memories) == 1 else "racy"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gt-threads", type=int, default=4)
    ap.add_argument("--gt-transitions", type=int, default=20_000)
    ap.add_argument("--gt-steps", type=int, default=2_000)
    ap.add_argument("--gt-limit", type=int, default=300)
    ap.add_argument("--out", default=None)
    ap.add_argument("--label", default="", help="what this run measures (before/after)")
    ap.add_argument("--excluded", default=None,
                    help="write every excluded program here (JSON lines: verdict, "
                         "the analysis's race, ground truth if explored, program)")
    args = ap.parse_args()

    from gpusem.calculus.bundl.printer import print_program
    from gpusem.fuzz.bundl.sample import draw
    from gpusem.fuzz.bundl.strategies.programs import generated_programs

    t0 = time.monotonic()
    drawn = draw(generated_programs(max_blocks=2, max_threads=8), args.programs,
                 args.seed)
    verdicts: Counter[str] = Counter()
    confusion: Counter[str] = Counter()
    false_exclusions: list[str] = []
    unsound: list[str] = []
    excluded_rows: list[dict] = []
    for g in drawn:
        prog = g.program
        verdict, steps, why = classify(prog)
        verdicts[verdict] += 1
        small = (prog.machine.blocks * prog.machine.threads <= args.gt_threads
                 and steps <= args.gt_steps)
        explore = verdict != "not-terminated" and small and (
            sum(confusion.values()) < args.gt_limit)
        truth = ground_truth(prog, args.gt_transitions) if explore else None
        if verdict in ("racy", "undecided"):
            excluded_rows.append({"verdict": verdict, "race": why, "truth": truth,
                                  "program": print_program(prog)})
        if truth is None:
            continue
        confusion[f"{verdict}/{truth}"] += 1
        if verdict in ("racy", "undecided") and truth == "deterministic":
            if len(false_exclusions) < 5:
                false_exclusions.append(print_program(prog))
        if verdict == "race-free" and truth == "racy":
            unsound.append(print_program(prog))
    n = sum(verdicts.values())
    terminated = n - verdicts["not-terminated"]
    excluded = verdicts["racy"] + verdicts["undecided"]
    gt_total = sum(v for k, v in confusion.items() if not k.endswith("/unknown"))
    gt_racy = sum(v for k, v in confusion.items() if k.endswith("/racy"))
    result = {
        "label": args.label,
        "command": "python " + " ".join(sys.argv),
        "machine": f"{platform.machine()} {platform.system()}, python "
                   f"{platform.python_version()}",
        "seconds": round(time.monotonic() - t0, 1),
        "programs": n,
        "verdicts": dict(verdicts),
        "excluded_fraction_of_terminated": round(excluded / max(terminated, 1), 4),
        "racy_fraction_of_terminated": round(verdicts["racy"] / max(terminated, 1), 4),
        "undecided_fraction_of_terminated": round(
            verdicts["undecided"] / max(terminated, 1), 4),
        "ground_truth": {
            "sample": f"the first {args.gt_limit} terminating programs of at most "
                      f"{args.gt_threads} threads and {args.gt_steps} round-robin steps; "
                      f"exhaustive exploration (<= {args.gt_transitions} transitions)",
            "analysis/truth": dict(confusion),
            "true_racy_fraction": round(gt_racy / max(gt_total, 1), 4),
            "excluded_fraction_in_sample": round(sum(
                v for k, v in confusion.items() if k.split("/")[0] != "race-free"
                and not k.endswith("/unknown")) / max(gt_total, 1), 4),
        },
        "rlimit": {"max": max(USED, default=0),
                   "p99": sorted(USED)[int(0.99 * (len(USED) - 1))] if USED else 0},
        "unsound_race_free_claims": unsound,
        "false_exclusion_examples": false_exclusions,
    }
    text = json.dumps(result, indent=1)
    if args.excluded:
        Path(args.excluded).write_text(
            "".join(json.dumps(row) + "\n" for row in excluded_rows))
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
