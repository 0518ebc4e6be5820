"""Which rules of the Bundl semantics (Appendix A.3) a run exercises (issue 14, item 7).

With `Config.seen` set to a set, `small_step.step_thread` adds to it, at every step,
the rule applied, the congruence rules of the evaluation context around the redex
(S-Seq-First, S-Split-Left, ...; the fixed S-Claim's body is S-Claim-Body), S-Program
(the machine rule every step is an instance of), and the expression rules (A.3.7) of
the expressions the rule evaluates (`redex_rules`): an expression rule counts when the
statement evaluating the expression steps (the right operand of `&&` / `||` counts
even where it is short-circuited).

`STEP_RULES` and `EXPR_RULES` are every name a run of a well-typed program can add:
the universe a coverage table counts against.
"""

from __future__ import annotations

from gpusem.calculus.bundl.ast import (
    ArrAssign,
    Assign,
    BinOp,
    BoolLit,
    Call,
    Decl,
    Expr,
    FloatLit,
    Fma,
    If,
    Index,
    IntLit,
    PartitionId,
    UnOp,
    Var,
)
from gpusem.calculus.bundl.walk import child_exprs
from gpusem.interpreter.bundl.debug_rules import RULES, SURFACE_RULES

# names of stuck states where no single rule of a family applies: never a step
STUCK_ONLY = frozenset({"S-If", "S-Split", "S-Arr-Assn-Shared"})
STEP_RULES = tuple(r for r in RULES if r not in STUCK_ONLY and r not in SURFACE_RULES)
EXPR_RULES = ("E-Int", "E-Float", "E-Bool", "E-Var", "E-Partition-Id", "E-Arr-Access",
              "E-Bop", "E-Cmp", "E-Unop", "E-Fma")
CMP_OPS = frozenset({"==", "!=", "<", "<=", ">", ">="})
# the statement rules that evaluate expressions, and which of the statement's
# expressions each evaluates
EVALUATING = frozenset({"S-Decl", "S-Assn", "S-Arr-Assn", "S-If-True", "S-If-False",
                        "S-Function-Call"})


def expr_rules(e: Expr, out: set[str]) -> None:
    """The A.3.7 rule of `e` and of every sub-expression."""
    match e:
        case IntLit():
            out.add("E-Int")
        case FloatLit():
            out.add("E-Float")
        case BoolLit():
            out.add("E-Bool")
        case Var():
            out.add("E-Var")
        case PartitionId():
            out.add("E-Partition-Id")
        case Index():
            out.add("E-Arr-Access")
        case BinOp(op):
            out.add("E-Cmp" if op in CMP_OPS else "E-Bop")
        case UnOp():
            out.add("E-Unop")
        case Fma():
            out.add("E-Fma")
    for c in child_exprs(e):
        expr_rules(c, out)


def redex_rules(s: object, rule: str) -> frozenset[str]:
    """The expression rules a step of `rule` on redex `s` evaluates."""
    if rule not in EVALUATING:
        return frozenset()
    out: set[str] = set()
    match s:
        case Decl(init=e) | Assign(value=e) | If(cond=e):
            expr_rules(e, out)
        case ArrAssign(array=a, index=i, value=v):
            for e in (a, i, v):
                expr_rules(e, out)
        case Call(args=args):
            for e in args:
                expr_rules(e, out)
    return frozenset(out)
