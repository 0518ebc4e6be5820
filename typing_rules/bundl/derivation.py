"""The typing derivation of a Bundl program, rule by rule (`gpusem check --derivation`).

A reader holds the output beside Appendix A.2: every statement judgment Γ ⊢^π_m s the
checker establishes is one line naming its rule, the code perspective π, the memory m
it synthesised, and the source position, indented by depth in the derivation tree.
Expression judgments are not listed (they sit inside their statement's rule).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusem.calculus.bundl.ast import (
    Alloc,
    ArrAssign,
    Assign,
    AsyncMemcpy,
    AsyncPartition,
    Call,
    Claim,
    Decl,
    Destruct,
    Free,
    Group,
    If,
    Lower,
    Memcpy,
    MemKind,
    Partition,
    Program,
    Seq,
    Skip,
    Split,
    Stmt,
    SyncDec,
    SyncInit,
    SyncWait,
    While,
)
from gpusem.calculus.bundl.perspective import GRID1, Perspective
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.span import NO_SPAN, Span
from gpusem.typing_rules.bundl.context import Context, RuleSet, program_context
from gpusem.typing_rules.bundl.expr import Judge, array_of
from gpusem.typing_rules.bundl.stmt import StmtChecker, check_fn, judge

RULE_OF = {
    Skip: "T-Skip", SyncInit: "T-Sync-Init", SyncDec: "T-Sync-Dec",
    SyncWait: "T-Sync-Wait", Free: "T-Free", Seq: "T-Seq", Decl: "T-Decl",
    Assign: "T-Assn", If: "T-If", While: "T-While", Split: "T-Split",
    Group: "T-Group", Destruct: "T-Destruct", Partition: "T-Partition",
    Claim: "T-Claim", Lower: "T-Lower", AsyncPartition: "T-Async-Partition",
    AsyncMemcpy: "T-Async-Memcpy", Memcpy: "T-Memcpy", Call: "T-Function-Call",
}


@dataclass
class Step:
    """One judgment Γ ⊢^π_m s of the derivation (m is None where a premise of this
    rule itself failed; failures inside its sub-derivations are their own steps)."""

    depth: int
    rule: str
    persp: Perspective
    span: Span
    m: int | None = None


class TracingChecker(StmtChecker):
    """The statement judgment, recording each rule application in pre-order."""

    errors: list[IllTyped]  # always collecting

    def __init__(self, judge: Judge) -> None:
        super().__init__(judge, [], source=True)  # the judgment of check_program
        self.steps: list[Step] = []
        self.depth = 0
        self.child_errors: list[int] = []  # per open step: errors its children found

    def stmt(self, ctx: Context, persp: Perspective, s: Stmt) -> int:
        step = Step(self.depth, self.rule_name(ctx, persp, s), persp, s.span)
        self.steps.append(step)
        before = len(self.errors)
        self.depth += 1
        self.child_errors.append(0)
        try:
            step.m = self.rule(ctx, persp, s)
        except IllTyped as err:  # a premise of this rule failed
            self.errors.append(err)
        finally:
            self.depth -= 1
            total = len(self.errors) - before
            if total > self.child_errors.pop():  # some error is this rule's own
                step.m = None
            if self.child_errors:
                self.child_errors[-1] += total
        return step.m or 0

    def rule_name(self, ctx: Context, persp: Perspective, s: Stmt) -> str:
        match s:
            case Alloc(mem=MemKind.SHARED):
                return "T-Alloc-Shared"
            case Alloc():
                return "T-Alloc"
            case ArrAssign(array=array):
                try:
                    ty, _ = array_of(self.j, ctx, persp, array, "T-Arr-Assn")
                except IllTyped:
                    return "T-Arr-Assn"
                shared = ty.mem is MemKind.SHARED
                return "T-Arr-Assn-Shared" if shared else "T-Arr-Assn"
            case _:
                return RULE_OF[type(s)]


def derivation(prog: Program, rules: str | RuleSet = "fixed") -> dict[str, list[Step]]:
    """The derivation of every function body (V-Function) and of main, by name.
    Errors are collected (not raised); a failed step has m = None."""
    ctx = program_context(prog)
    out: dict[str, list[Step]] = {}
    for f in prog.fns:
        tracer = TracingChecker(judge(rules, prog.machine))
        check_fn(tracer, ctx, f)
        out[f.name] = tracer.steps
    tracer = TracingChecker(judge(rules, prog.machine))
    tracer.stmt(ctx, GRID1, prog.main)
    out["main"] = tracer.steps
    return out


def format_derivation(steps_by_body: dict[str, list[Step]]) -> str:
    lines = []
    for name, steps in steps_by_body.items():
        lines.append(f"{name}:")
        for st in steps:
            label = "  " * (st.depth + 1) + st.rule
            m = "failed" if st.m is None else f"m={st.m}"
            where = "-" if st.span is NO_SPAN else f"{st.span.line}:{st.span.column}"
            lines.append(f"{label:<40} {str(st.persp):<12} {m:<8} {where}")
    return "\n".join(lines)
