"""Rule coverage of lambda-cu programs (issue 29 step 6): which of the 28 rules of
Sec 6.2 (and our CPU-CMD) a set of programs applies under a rule set, and how often.
A rule no generated program reaches is a blind spot of the oracle (DESIGN.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from gpusem.calculus.errors import Stuck, Trap
from gpusem.calculus.lambdacu import ast
from gpusem.interpreter.lambdacu.machine import evaluate
from gpusem.interpreter.lambdacu.rules import FIXED, OURS, RULES, RuleSet
from gpusem.typing_rules.lambdacu.wellformed import check_program


@dataclass(frozen=True)
class Coverage:
    programs: int
    hits: Counter[str]       # rule -> applications over all programs
    reached_by: Counter[str]  # rule -> programs that applied it at least once
    outcomes: Counter[str]   # value | stuck:RULE | trap:RULE

    def table(self) -> str:
        rows = [f"| {'rule':<15} | {'programs':>8} | {'applications':>12} |",
                f"|{'-' * 17}|{'-' * 10}|{'-' * 14}|"]
        for rule in RULES + OURS:
            rows.append(f"| {rule:<15} | {self.reached_by[rule]:>8} | "
                        f"{self.hits[rule]:>12} |")
        return "\n".join(rows)


def coverage(programs: Iterable[ast.Program], rules: RuleSet = FIXED,
             max_steps: int = 1_000_000) -> Coverage:
    hits: Counter[str] = Counter()
    reached: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    n = 0
    for p in programs:
        n += 1
        checked = check_program(p)
        try:
            out = evaluate(checked.program, rules, max_steps, checked.elems)
        except (Stuck, Trap) as err:
            kind = "stuck" if isinstance(err, Stuck) else "trap"
            outcomes[f"{kind}:{err.rule}"] += 1
            continue
        outcomes["value"] += 1
        hits.update(out.seen)
        reached.update(set(out.seen))
    return Coverage(n, hits, reached, outcomes)
