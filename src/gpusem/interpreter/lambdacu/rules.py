"""The 28 rules of seed 002, Section 6.2 (l.600-973), the rule sets `paper` and
`fixed`, and what every lambda-cu judgment shares (the run's state: rule set, step
budget, coverage).

| rule            | line | judgment                                   | module     |
|-----------------|------|--------------------------------------------|------------|
| KERN-DEF        |  608 | F; prog -->p F'; prog'                     | machine.py |
| FUNC-DEF        |  611 | F; prog -->p F'; prog'                     | machine.py |
| EVAL-MAIN       |  620 | prog ⇓ v                                   | machine.py |
| CPU-LET-EXP     |  638 | F ⊢ V; cexp -->c V'; cexp'                 | cpu.py     |
| CPU-LET-VAL     |  643 |                                            | cpu.py     |
| CPU-IF-TRUE     |  651 |                                            | cpu.py     |
| CPU-IF-FALSE    |  657 |                                            | cpu.py     |
| CPU-FUNC-APP    |  664 |                                            | cpu.py     |
| CPU-PRIM        |  670 |                                            | cpu.py     |
| CPU-TUPLE       |  681 |                                            | cpu.py     |
| CPU-RUN         |  690 |                                            | cpu.py     |
| CPU-ATM-VAR     |  695 | V; catm -->a v                             | cpu.py     |
| CPU-ATM-VAL     |  698 |                                            | cpu.py     |
| KERN-LET        |  706 | V; kexp -->k V'; kexp'                     | kernel.py  |
| KERN-RET        |  711 |                                            | kernel.py  |
| IDX-THUNK       |  725 | V; Λ(i) ⇓t (v1, .., vn)                    | gpu.py     |
| SOAC-ONCE       |  735 | V; soac app ⇓s (v1, .., vn)                | soac.py    |
| SOAC-MAP        |  754 |                                            | soac.py    |
| SOAC-PERMUTE    |  781 |                                            | soac.py    |
| SOAC-REDUCE     |  814 |                                            | soac.py    |
| SOAC-SCAN       |  849 |                                            | soac.py    |
| SOAC-FILTER     |  888 |                                            | soac.py    |
| SOAC-PARTITION  |  937 |                                            | soac.py    |
| GPU-LET         |  952 | V; gexp -->g V'; gexp'                     | gpu.py     |
| GPU-IF-TRUE     |  957 |                                            | gpu.py     |
| GPU-IF-FALSE    |  962 |                                            | gpu.py     |
| GPU-PRIM        |  968 |                                            | gpu.py     |
| GPU-SUBSCRIPT   |  973 |                                            | gpu.py     |

Line numbers are those of the rule's name in seeds/002_8fb20fdcfa6d87e1.txt. Ours,
not the paper's: CPU-CMD (the grammar has commands, 6.2 no rule for them).

`--rules paper` runs the rules as printed, `--rules fixed` (the default) the corrected
ones; the difference is the flags of `RuleSet`, each an entry of
proofs_notes/errata.md ("lambda-cu") with the test that pins it
(tests/lambdacu/test_errata.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, fields

from gpusem.calculus.budgets import step_budget
from gpusem.calculus.errors import Stuck, Trap
from gpusem.calculus.span import Span

RULES = ("KERN-DEF", "FUNC-DEF", "EVAL-MAIN", "CPU-LET-EXP", "CPU-LET-VAL",
         "CPU-IF-TRUE", "CPU-IF-FALSE", "CPU-FUNC-APP", "CPU-PRIM", "CPU-TUPLE",
         "CPU-RUN", "CPU-ATM-VAR", "CPU-ATM-VAL", "KERN-LET", "KERN-RET", "IDX-THUNK",
         "SOAC-ONCE", "SOAC-MAP", "SOAC-PERMUTE", "SOAC-REDUCE", "SOAC-SCAN",
         "SOAC-FILTER", "SOAC-PARTITION", "GPU-LET", "GPU-IF-TRUE", "GPU-IF-FALSE",
         "GPU-PRIM", "GPU-SUBSCRIPT")
OURS = ("CPU-CMD",)


@dataclass(frozen=True)
class RuleSet:
    """One flag per erratum: True runs the corrected rule (errata.md, lambda-cu)."""

    # L1 CPU-LET-EXP drops the environment the rhs's step made (V' unused).
    let_exp_keeps_rhs_env: bool = True
    # L2 GPU-LET and IDX-THUNK accept only `ret x..` as the final thread expression;
    #    a primitive, a subscript or an atom ends in a value, for which no rule fires.
    gpu_value_result: bool = True
    # L3 IDX-THUNK binds one parameter; FILTER/PARTITION apply the predicate to a tuple.
    thunk_binds_tuple: bool = True
    # L4 SOAC-FILTER/PARTITION count u_s reads p_s, one past the last element.
    filter_count_in_range: bool = True
    # L5 SOAC-FILTER/PARTITION o_i = min{j | u_j = i} is off by one (u is inclusive).
    filter_index_off_by_one: bool = True
    # L6 SOAC-PARTITION's false side reads v^{i - o_i}.
    partition_false_side: bool = True
    # L7 SOAC-PERMUTE as printed gathers (vs[i] = v^{idx_i}); the text scatters.
    permute_scatters: bool = True
    # L8 No rule for commands cmd(catm..) (5.5): ours, CPU-CMD.
    cpu_cmd: bool = True
    # L9 IDX-THUNK evaluates the body in all of V, not only what `using` captures.
    thunk_reads_using_only: bool = True


FIXED = RuleSet()
PAPER = RuleSet(**{f.name: False for f in fields(RuleSet)})


def rule_set(name: str) -> RuleSet:
    if name == "fixed":
        return FIXED
    if name == "paper":
        return PAPER
    raise ValueError(f"unknown rule set: {name} (expected paper or fixed)")


@dataclass
class Run:
    """What one evaluation shares: the rules, the step budget, which rules fired
    (`seen`, for the coverage table) and what commands printed."""

    rules: RuleSet = FIXED
    max_steps: int = 1_000_000
    steps: int = 0
    seen: Counter[str] = field(default_factory=Counter)
    printed: list[str] = field(default_factory=list)
    # id(SOAC application) -> the base types of its thunk's components, from the
    # checker: the element type of an empty array no thunk ran to produce
    elems: dict[int, tuple[str, ...]] = field(default_factory=dict)
    # called with the run and each rule applied, in the order the derivations
    # complete (the debugger's trace, interpreter/lambdacu/debug.py)
    on_fire: Callable[[Run, str, Span], None] | None = None

    def fire(self, rule: str, span: Span) -> None:
        self.seen[rule] += 1
        self.steps += 1
        if self.on_fire is not None:
            self.on_fire(self, rule, span)
        if self.steps > self.max_steps:
            raise step_budget(self.max_steps, "rule applications", span, rule)


def stuck(rule: str, span: Span, message: str, where: str = "") -> Stuck:
    """No rule applies; `rule` is the one that would have, `where` the element."""
    at = f" ({where})" if where else ""
    return Stuck(f"stuck: {message}{at}", rule=rule, span=span)


def trap(rule: str, span: Span, message: str, where: str = "") -> Trap:
    at = f" ({where})" if where else ""
    return Trap(f"{message}{at}", rule=rule, span=span)
