"""Programs: F; prog -->p F'; prog' and prog ⇓ v (seed 002, 6.2, l.600-620):
KERN-DEF, FUNC-DEF, EVAL-MAIN; the one entry point of the lambda-cu interpreter.

`evaluate` runs `main` under a rule set (`paper` | `fixed`) and a step budget, and
returns its value with what commands printed and which rules fired (`Outcome.seen`,
for the coverage table). A stuck state, a trap or the budget raise the `Stuck`,
`Trap`, `BudgetExhausted` of calculus/errors.py, each naming its rule and span.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import Value, one
from gpusem.calculus.span import Span
from gpusem.interpreter.lambdacu.cpu import Defs, Expr, Stack, is_value, step_c
from gpusem.interpreter.lambdacu.rules import FIXED, RuleSet, Run, stuck


@dataclass(frozen=True)
class Outcome:
    value: Value
    printed: tuple[str, ...]
    seen: Counter[str]
    steps: int


def collect(run: Run, program: ast.Program) -> Defs:
    """∅; prog -->*p F; ε: KERN-DEF once per kernel, then FUNC-DEF for the functions."""
    kernels: dict[str, ast.Kernel] = {}
    for k in program.kernels:  # KERN-DEF
        run.fire("KERN-DEF", k.span)
        kernels[k.name] = k
    run.fire("FUNC-DEF", program.span)  # FUNC-DEF
    return Defs(kernels, {f.name: f for f in program.functions})


def evaluate(program: ast.Program, rules: RuleSet = FIXED, max_steps: int = 1_000_000,
             elems: dict[int, tuple[str, ...]] | None = None,
             on_fire: Callable[[Run, str, Span], None] | None = None) -> Outcome:
    """prog ⇓ v (EVAL-MAIN); `on_fire(run, rule, span)` sees each rule applied."""
    run = Run(rules=rules, max_steps=max_steps, elems=dict(elems or {}),
              on_fire=on_fire)
    defs = collect(run, program)
    main = defs.functions.get("main")
    if main is None or main.params:
        raise stuck("EVAL-MAIN", program.span, "no function main()")
    run.fire("EVAL-MAIN", main.span)
    stack: Stack = ({},)
    e: Expr = main.body
    while not is_value(e):
        stack, e = step_c(run, defs, stack, e)
    assert isinstance(e, ast.CTuple)
    value = one(tuple(a.value for a in e.atoms if isinstance(a, ast.Lit)))
    return Outcome(value, tuple(run.printed), run.seen, run.steps)
