"""The fusion property of lambda-cu (issue 29): over generated kernel-invocation graphs
(fuzz/lambdacu/graphs.py), is the fused program (compiler/lambdacu_fusion) well-formed
and does it mean what the unfused one means? Counts findings by kind for the fixed
rules, for VFUSE-CLUSTER as printed (errata F1) and for thunk combination as printed
(F3, F4, F5), with one example program of each kind, and for each rewrite of Sec 9.2
(MAP-MAP, MAP-PERMUTE, MAP-REDUCE, FILTER-FILTER, FILTER-REDUCE) on how many graphs
it fired (`graphs with RULE`) and how often (`RULE`). `--packs` also generates packs
(`FILTER {i => a[i]} ..`: the consumers FILTER-FILTER fuses).

    PYTHONPATH=src python scripts/lambdacu_fusion.py --programs 10000 --seed 1 \
        --config fixed:fixed --out results/lambdacu/fusion_fixed_10k.json
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from gpusem.calculus.errors import GpusemError
from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.calculus.lambdacu.printer import print_program
from gpusem.calculus.lambdacu.values import same_value
from gpusem.compiler.lambdacu_fusion.pipeline import fuse_program
from gpusem.fuzz.bundl.sample import rounds
from gpusem.fuzz.lambdacu.graphs import fusion_programs
from gpusem.interpreter.lambdacu.machine import evaluate
from gpusem.typing_rules.lambdacu.wellformed import check_program


def verdict(p, ilp: str, comb: str) -> tuple[str, str, int, Counter[str]]:
    checked = check_program(p)
    want = evaluate(checked.program, elems=checked.elems).value
    fused, fz = fuse_program(checked.program, ilp=ilp, combine_rules=comb)
    text = print_program(fused)
    clusters = text.count("kernel fused")
    try:
        again = check_program(parse_program(text, "fused.lcu"))
        got = evaluate(again.program, elems=again.elems).value
    except GpusemError as err:
        return f"{type(err).__name__}:{err.rule}", text, clusters, fz.rewrites
    return ("same" if same_value(got, want) else "different value"), text, \
        clusters, fz.rewrites


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--config", action="append", required=True,
                    help="ILP:COMBINE rules, e.g. fixed:fixed, paper:fixed")
    ap.add_argument("--out", required=True)
    ap.add_argument("--packs", action="store_true",
                    help="generate packs too (fusion_programs(packs=True))")
    args = ap.parse_args()
    configs = [tuple(c.split(":")) for c in args.config]
    t0 = time.monotonic()
    doc: dict[str, object] = {"programs": args.programs, "seed": args.seed,
                              "packs": args.packs}
    tallies = {c: Counter() for c in configs}
    examples: dict[str, dict[str, str]] = {f"{a}:{b}": {} for a, b in configs}
    n = 0
    for batch in rounds(fusion_programs(packs=args.packs), args.seed):
        for p in batch[: args.programs - n]:
            n += 1
            for ilp, comb in configs:
                kind, text, clusters, fired = verdict(p, ilp, comb)
                t = tallies[(ilp, comb)]
                t[kind] += 1
                t["fused kernels"] += clusters
                t["thunk combinations"] += sum(fired.values())
                t["programs with a fusion"] += int(clusters > 0)
                for rule, times in fired.items():
                    t[rule] += times
                    t[f"graphs with {rule}"] += 1
                ex = examples[f"{ilp}:{comb}"]
                if kind != "same" and kind not in ex:
                    ex[kind] = print_program(p) + "\n// fused:\n" + text
        if n >= args.programs:
            break
    doc["configs"] = {f"{a}:{b}": dict(t) for (a, b), t in tallies.items()}
    doc["examples"] = examples
    doc["seconds"] = round(time.monotonic() - t0, 1)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(json.dumps(doc["configs"], indent=1), doc["seconds"])


if __name__ == "__main__":
    main()
