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
    ArrayType,
    Assign,
    AsyncMemcpy,
    AsyncPartition,
    BinOp,
    BoolLit,
    Call,
    Claim,
    Decl,
    Destruct,
    Expr,
    FloatLit,
    Fma,
    Free,
    Group,
    If,
    Index,
    IntLit,
    Lower,
    Memcpy,
    MemKind,
    Partition,
    PartitionId,
    Program,
    Seq,
    Skip,
    Split,
    Stmt,
    SyncDec,
    SyncInit,
    SyncWait,
    UnOp,
    Var,
    While,
)
from gpusem.calculus.bundl.perspective import GRID1, Perspective
from gpusem.calculus.bundl.walk import child_exprs
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.span import NO_SPAN, Span
from gpusem.typing_rules.bundl.context import Context, RuleSet, program_context
from gpusem.typing_rules.bundl.expr import EQ_OPS, ORD_OPS, Judge, array_of, type_expr
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
        self.expressions: set[str] = set()  # the expression rules used (`expr_rules`)

    def stmt(self, ctx: Context, persp: Perspective, s: Stmt) -> int:
        step = Step(self.depth, self.rule_name(ctx, persp, s), persp, s.span)
        self.steps.append(step)
        for e in _direct_exprs(s):
            self.expr_rules(ctx, persp, e)
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

    def expr_rules(self, ctx: Context, persp: Perspective, e: Expr) -> None:
        """The A.2.1 rules of the derivation of `e` (and its sub-expressions), into
        `self.expressions`: the expression part of the derivation, which is not listed
        line by line (coverage, issue 14 item 7)."""
        out = self.expressions
        match e:
            case IntLit():
                out.add("T-Int")
            case FloatLit():
                out.add("T-Float")
            case BoolLit():
                out.add("T-Bool")
            case Var():
                out.add("T-Var")
            case PartitionId():
                out.add("T-Partition-Id")
            case Index(array=array):
                shared = self._array_mem(ctx, persp, array) is MemKind.SHARED
                out.add("T-Arr-Access-Shared" if shared else "T-Arr-Access")
            case BinOp("+", left) if self._is_array(ctx, persp, left):
                out.add("T-Ptr-Offset")
            case BinOp(op):
                out.add("T-Cmp" if op in EQ_OPS | ORD_OPS else "T-Bop")
            case UnOp():
                out.add("T-Unop")
            case Fma():
                out.add("T-Fma")
        for c in child_exprs(e):
            self.expr_rules(ctx, persp, c)

    def _array_mem(self, ctx: Context, persp: Perspective, e: Expr) -> MemKind | None:
        try:
            ty, _ = array_of(self.j, ctx, persp, e, "T-Arr-Access")
        except IllTyped:
            return None
        return ty.mem

    def _is_array(self, ctx: Context, persp: Perspective, e: Expr) -> bool:
        try:
            return isinstance(type_expr(self.j, ctx, persp, e), ArrayType)
        except IllTyped:
            return False

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


def rules_used(prog: Program, rules: str | RuleSet = "fixed") -> set[str]:
    """Every typing rule of the program's derivation: the statement rules, the
    expression rules inside them, and V-Function per function (coverage)."""
    ctx = program_context(prog)
    used: set[str] = {"V-Function"} if prog.fns else set()
    tracers = []
    for f in prog.fns:
        tracer = TracingChecker(judge(rules, prog.machine))
        check_fn(tracer, ctx, f)
        tracers.append(tracer)
    tracer = TracingChecker(judge(rules, prog.machine))
    tracer.stmt(ctx, GRID1, prog.main)
    tracers.append(tracer)
    for t in tracers:
        used.update(step.rule for step in t.steps)
        used.update(t.expressions)
    return used


def _direct_exprs(s: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement's own rule types (not those of nested statements)."""
    match s:
        case Decl(init=e) | Assign(value=e) | If(cond=e) | While(cond=e):
            return (e,)
        case ArrAssign(array=a, index=i, value=v):
            return (a, i, v)
        case Call(args=args):
            return args
    return ()


# every rule name `rules_used` can report (the universe of a coverage table)
TYPING_RULES = tuple(sorted({
    *RULE_OF.values(), "T-Alloc", "T-Alloc-Shared", "T-Arr-Assn", "T-Arr-Assn-Shared",
    "T-Int", "T-Float", "T-Bool", "T-Var", "T-Partition-Id", "T-Arr-Access",
    "T-Arr-Access-Shared", "T-Ptr-Offset", "T-Bop", "T-Cmp", "T-Unop", "T-Fma",
    "V-Function"}))


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
