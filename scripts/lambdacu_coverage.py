"""lambda-cu over generated programs (issue 29): the rule coverage table of Sec 6.2
under `fixed`, and, for each erratum flag of interpreter/lambdacu/rules.RuleSet, how
many programs the rule as printed (that flag alone off) gets stuck on or gives another
value for; then `paper` (every flag off) the same way.

    PYTHONPATH=src python scripts/lambdacu_coverage.py --programs 1000 --seed 29 \
        --out results/lambdacu/coverage.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections import Counter

from gpusem.calculus.errors import Stuck, Trap
from gpusem.calculus.lambdacu.values import same_value
from gpusem.fuzz.bundl.sample import draw
from gpusem.fuzz.lambdacu.coverage import coverage
from gpusem.fuzz.lambdacu.programs import programs
from gpusem.interpreter.lambdacu.machine import evaluate
from gpusem.interpreter.lambdacu.rules import FIXED, OURS, PAPER, RULES, RuleSet
from gpusem.typing_rules.lambdacu.wellformed import check_program


def differs(progs: list, rules: RuleSet) -> Counter[str]:
    """How each program ends under `rules` against `fixed`."""
    out: Counter[str] = Counter()
    for p in progs:
        checked = check_program(p)
        want = evaluate(checked.program, FIXED, elems=checked.elems).value
        try:
            got = evaluate(checked.program, rules, elems=checked.elems).value
        except (Stuck, Trap) as err:
            kind = "stuck" if isinstance(err, Stuck) else "trap"
            out[f"{kind}:{err.rule}"] += 1
            continue
        out["same" if same_value(got, want) else "different value"] += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    t0 = time.monotonic()
    progs = draw(programs(), args.programs, seed=args.seed)
    cov = coverage(progs)
    flags = {f.name: dict(differs(progs, dataclasses.replace(FIXED, **{f.name: False})))
             for f in dataclasses.fields(RuleSet)}
    doc = {"programs": args.programs, "seed": args.seed,
           "outcomes_fixed": dict(cov.outcomes),
           "rules": {r: {"programs": cov.reached_by[r], "applications": cov.hits[r]}
                     for r in RULES + OURS},
           "printed_rule_alone": flags, "paper": dict(differs(progs, PAPER)),
           "seconds": round(time.monotonic() - t0, 1)}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(cov.table())
    print(json.dumps({k: doc[k] for k in ("printed_rule_alone", "paper", "seconds")},
                     indent=1))


if __name__ == "__main__":
    main()
