"""Random mappings of Fig. 5's GEMM (examples/cypress/gemm.cyp), seed 001's claim that
a mapping "can only affect performance, not correctness" (l.163) as a measurement:
for each drawn mapping (tile sizes U, V, W, warpgroups, pipeline depth 1-4, warp
specialisation on/off, A/B placements), the legality rules decide; a legal one must
compute A @ B under the sequential reading (exactly: integer data), and its event IR
(our dependence analysis) must be race-free and give the same result under a random
schedule. An illegal one is counted with the rule that rejected it.

    PYTHONPATH=src python scripts/cypress_mappings.py N [SEED] [--passes]

With --passes, vectorisation, copy elimination, allocation and warp specialisation
with pipelining (compiler/cypress_cuda) run after the dependence analysis, and each
one's IR is checked the same way (a finding names the pass: finding:race:copyelim).

Prints one JSON object: counts of legal / illegal (by rule) / agreeing / findings."""

from __future__ import annotations

import json
import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.ast import Program
from gpusem.calculus.cypress.inputs import make_inputs
from gpusem.calculus.cypress.reader import read_program
from gpusem.calculus.errors import IllTyped, Trap
from gpusem.compiler.cypress_cuda.allocate import allocate
from gpusem.compiler.cypress_cuda.copyelim import eliminate_copies
from gpusem.compiler.cypress_cuda.dependence import dependence_analysis
from gpusem.compiler.cypress_cuda.vectorize import vectorize
from gpusem.compiler.cypress_cuda.warpspec import warp_specialise
from gpusem.interpreter.cypress.events import instantiate, orders, races, run_order
from gpusem.interpreter.cypress.seq import seq
from gpusem.interpreter.cypress.tree import check_tree, task_tree
from gpusem.typing_rules.cypress import check_program

GEMM = (Path(__file__).resolve().parents[1] / "examples/cypress/gemm.cyp").read_text()
INPUTS = "C=float32[128,128] A=float32[128,64] B=float32[64,128]"


def draw(rng: random.Random) -> str:
    wgs = rng.choice([1, 2])
    u = rng.choice([64 * wgs, 128])
    v, w = rng.choice([32, 64, 128]), rng.choice([16, 32, 64])
    text = GEMM.replace('"U": 256, "V": 256', f'"U": {u}, "V": {v}')
    text = text.replace('tunables={"W": 64}', f'tunables={{"W": {w}}}')
    text = text.replace('"WGS": 2', f'"WGS": {wgs}')
    text = text.replace("pipeline=3", f"pipeline={rng.randint(1, 4)}")
    text = text.replace("warpspecialize=True",
                        f"warpspecialize={rng.choice([True, False])}")
    for level in ("gemm_tile", "gemm_warpgroup", "gemm_warp", "gemm_thread"):
        mems = f"[{'REGISTER' if level == 'gemm_thread' else 'NONE'}, " \
               f"{rng.choice(['SHARED', 'GLOBAL'])}, {rng.choice(['SHARED', 'GLOBAL'])}]"
        text = re.sub(rf'(instance="{level}", variant="\w+", proc=\w+,\n\s+mems=)\[[^]]*\]',
                      lambda m: m[1] + mems, text)
    return text


def one(text: str, seed: int) -> str:
    program = read_program(text, "gemm.cyp")
    arrays, scalars = make_inputs(INPUTS)
    errors = check_program(program)
    if not errors:
        try:
            errors = check_tree(task_tree(program, arrays, scalars))
        except (IllTyped, Trap) as error:
            return f"illegal:{error.rule}"
    if errors:
        return f"illegal:{errors[0].rule}"
    try:  # the rules that watch the reading (Prange-NonInterference, None-...)
        out, _ = seq(program, arrays, scalars)
    except IllTyped as error:
        return f"illegal:{error.rule}"
    if not np.array_equal(out["C"], arrays["A"] @ arrays["B"]):
        return "finding:seq"
    ir = dependence_analysis(program, arrays, scalars)
    stages = [("", lambda x, _: x)] + (PASSES if WITH_PASSES else [])
    for name, run in stages:
        try:
            ir = run(ir, program)
        except IllTyped as error:  # allocation: out of memory
            return f"illegal:{error.rule}"
        inst = instantiate(ir, program, arrays)
        if races(inst):
            return f"finding:race{name}"
        got = run_order(inst, orders(inst, f"random:{seed}"))
        if not np.array_equal(got["C"], out["C"]):
            return f"finding:events{name}"
    return "agree"


# --passes: each pass after the dependence analysis checked on the event machine too
WITH_PASSES = "--passes" in sys.argv
PASSES: list[tuple[str, Callable[[E.EventProgram, Program], E.EventProgram]]] = [
    (":vectorize", lambda ir, p: vectorize(ir)),
    (":copyelim", eliminate_copies),
    (":allocate", lambda ir, p: allocate(ir, p)),
    (":warpspec", lambda ir, p: warp_specialise(ir, p)),
]


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--passes"]
    n = int(args[0])
    seed = int(args[1]) if len(args) > 1 else 0
    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    for i in range(n):
        counts[one(draw(rng), seed + i)] += 1
    print(json.dumps({"mappings": n, "seed": seed, "passes": WITH_PASSES,
                      **dict(sorted(counts.items()))}))


if __name__ == "__main__":
    main()
