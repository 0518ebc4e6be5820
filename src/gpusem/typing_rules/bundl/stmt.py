"""Statement typing Γ ⊢^π_m s and program typing (Prism, seed 004, Appendix A.2.2,
Figure 14, Sec 3.3-3.7). Expressions are in `bundl_expr`, contexts and rule sets in
`bundl/context`, the rules on data perspectives and asynchrony in `bundl/data`.

Conventions (paper -> Python):
  Γ -> `ctx`, π = (h, n) -> `persp`, m -> the int each check returns, ψ/φ -> labels,
  x/y of partition-like rules -> `s.source` / `s.target`, q (group) -> `s.q`,
  ↓π -> `destruct(persp, shape)`, `n1, n2 align to n` -> `align_to(n1, n2, n)`.

Note (algorithmic memory bound): the conclusions of T-Alloc, T-If and T-Seq compute m
bottom-up (m + n·size(τ), max(m1, m2)), so `check_stmt` synthesises the least m with
Γ ⊢^π_m s: skip and the sync forms need 0, `free n` needs n (T-Free: n ≤ m), a call
needs the callee's declared m' (T-Function-Call: m' ≤ m), split/if/seq the max of their
parts, alloc its body's m plus n·size(τ). A function's body must need at most its
declared `uses m` (V-Function). See errata ("memory bound m").

Every rule is one function or match arm named after it; `--rules paper|fixed` differ
only through the flags of `bundl/context.RuleSet` (each one an errata entry).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, assert_never

from gpusem.calculus.bundl.ast import (
    DEFAULT_MACHINE,
    Alloc,
    ArrAssign,
    ArrayType,
    Assign,
    AsyncMemcpy,
    AsyncPartition,
    BaseType,
    Call,
    Claim,
    Decl,
    Destruct,
    Expr,
    FnDef,
    Free,
    FunType,
    Group,
    If,
    Lower,
    Memcpy,
    MemKind,
    Param,
    Partition,
    Program,
    Seq,
    Skip,
    Split,
    Stmt,
    SyncDec,
    SyncInit,
    SyncWait,
    Type,
    While,
)
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    Perspective,
    align_to,
    destruct,
)
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.span import Span
from gpusem.typing_rules.bundl.context import (
    Context,
    MachineLike,
    RuleSet,
    machine_shape,
    program_context,
    rule_set,
    show_type,
    type_size,
)
from gpusem.typing_rules.bundl.data import DataRules
from gpusem.typing_rules.bundl.expr import (
    Judge,
    array_of,
    check_index,
    describe,
    require,
    type_expr,
    visible,
)

__all__ = [
    "Context", "check_expr", "check_program", "check_stmt", "program_context",
    "type_errors", "type_size",
]

R = TypeVar("R")


class StmtChecker(DataRules):
    """Γ ⊢^π_m s for one rule set and machine; `errors` set = collect, not raise."""

    def __init__(self, judge: Judge, errors: list[IllTyped] | None = None,
                 source: bool = False):
        self.j = judge
        self.errors = errors
        # A source program (check_program), not a runtime state (check_stmt). In a
        # runtime state Γ' also holds names whose scope has ended (η is never
        # popped), so only source programs get the no_rebinding and
        # source_runtime_forms restrictions.
        self.source_forms = source and judge.rules.source_runtime_forms
        self.source_binders = source and judge.rules.no_rebinding
        self.barriers: set[int] = set()  # ids of init/dec/wait in a barrier triple

    # -- error collection (STYLE 12): a failed premise poisons only its statement --

    def attempt(self, fn: Callable[[], R], default: R) -> R:
        if self.errors is None:
            return fn()
        try:
            return fn()
        except IllTyped as err:
            self.errors.append(err)
            return default

    def stmt(self, ctx: Context, persp: Perspective, s: Stmt) -> int:
        if self.errors is None:  # the fast path: check_stmt runs after every step
            return self.rule(ctx, persp, s)
        return self.attempt(lambda: self.rule(ctx, persp, s), 0)

    # -------------------------------------------------------------- the judgment

    def rule(self, ctx: Context, persp: Perspective, s: Stmt) -> int:
        match s:
            case Skip():
                return 0  # T-Skip
            case SyncInit() | SyncDec() | SyncWait():
                # T-Sync-Init, T-Sync-Dec, T-Sync-Wait (no premises as printed)
                if self.source_forms:
                    self.source_barrier(s)
                return 0
            case Free(amount, span):  # T-Free: n ≤ m
                require(amount >= 0, "T-Free", span,
                        lambda: f"bad free: free {amount} is negative")
                # Note: S-Alloc-* appends `free k` itself; a source `free n` frees
                # memory that residual frees again. See errata ("runtime forms").
                require(not self.source_forms or amount == 0, "T-Free", span,
                        lambda: f"runtime form: free {amount} in a source program "
                                "would free memory its allocation frees again; only "
                                "`free 0` is allowed")
                return amount
            case Seq(stmts):  # T-Seq: max(m1, m2)
                if self.source_forms:
                    self.mark_barriers(stmts)
                return max((self.stmt(ctx, persp, x) for x in stmts), default=0)
            case Decl():
                return self.t_decl(ctx, persp, s)
            case Alloc():
                return self.t_alloc(ctx, persp, s)
            case Assign():
                return self.t_assn(ctx, persp, s)
            case ArrAssign():
                return self.t_arr_assn(ctx, persp, s)
            case If(cond, then, orelse, span):  # T-If: max(m1, m2)
                self.attempt(lambda: self.condition(ctx, persp, cond, "T-If", "if"),
                             None)
                return max(self.stmt(ctx, persp, then), self.stmt(ctx, persp, orelse))
            case While(cond, body, span):  # T-While
                self.attempt(
                    lambda: self.condition(ctx, persp, cond, "T-While", "while"), None)
                return self.stmt(ctx, persp, body)
            case Split():
                return self.t_split(ctx, persp, s)
            case Group():
                return self.t_group(ctx, persp, s)
            case Destruct():
                return self.t_destruct(ctx, persp, s)
            case Partition():
                return self.t_partition(ctx, persp, s)
            case Claim():
                return self.t_claim(ctx, persp, s)
            case Lower():
                return self.t_lower(ctx, persp, s)
            case AsyncPartition():
                return self.t_async_partition(ctx, persp, s)
            case AsyncMemcpy():
                return self.t_async_memcpy(ctx, persp, s)
            case Memcpy():
                return self.t_memcpy(ctx, persp, s)
            case Call():
                return self.t_function_call(ctx, persp, s)
            case _:
                assert_never(s)

    def mark_barriers(self, stmts: tuple[Stmt, ...]) -> None:
        """Remember each consecutive `init ψ; dec ψ; wait ψ` of a source sequence."""
        for a, b, c in zip(stmts, stmts[1:], stmts[2:], strict=False):
            if (isinstance(a, SyncInit) and isinstance(b, SyncDec)
                    and isinstance(c, SyncWait) and a.label == b.label == c.label):
                self.barriers.update((id(a), id(b), id(c)))

    def source_barrier(self, s: SyncInit | SyncDec | SyncWait) -> None:
        # Note: a lone `dec ψ` underflows Ψ(ψ)(p) (stuck) and a lone init/wait pair
        # leaves the counter for the next user. See errata ("runtime forms").
        rule = {SyncInit: "T-Sync-Init", SyncDec: "T-Sync-Dec"}.get(type(s),
                                                                   "T-Sync-Wait")
        require(id(s) in self.barriers, rule, s.span,
                lambda: f"runtime form: in a source program {s.label!r} needs the "
                        f"whole barrier `init {s.label}; dec {s.label}; wait "
                        f"{s.label};` in one sequence")

    def condition(self, ctx: Context, persp: Perspective, cond: Expr, rule: str,
                  what: str) -> None:
        ty = type_expr(self.j, ctx, persp, cond)
        require(ty is BaseType.BOOL, rule, cond.span,
                lambda: f"type mismatch: {what} condition must be bool, got "
                        f"{show_type(ty)}")

    # ----------------------------------------------------------------- binders

    def bind(self, ctx: Context, name: str, persp: Perspective, ty: Type,
             rule: str, span: Span) -> Context:
        """Γ, x :^π τ, refusing (fixed) to rebind x at another type or perspective."""
        old = ctx.lookup(name)
        if self.source_binders and old is not None:
            # Note: S-Decl/S-Alloc write η[x ↦ v] and memories are never popped, so an
            # inner x at another type or perspective outlives its scope and breaks
            # Γ ⊢ η. See errata ("rebinding a name").
            require((old.persp, old.type) == (persp, ty), rule, span,
                    lambda: f"redeclaration: {name} is already bound as "
                            f"{show_type(old.type)} @ {old.persp}; cannot rebind it as "
                            f"{show_type(ty)} @ {persp}")
        return ctx.extend(name, persp, ty)

    def t_decl(self, ctx: Context, persp: Perspective, s: Decl) -> int:
        # T-Decl: Γ ⊢^π e : τ,  π' ≤ π (write down),  τ not an array type
        def head() -> Context:
            require(isinstance(s.type, BaseType), "T-Decl", s.span,
                    lambda: "type mismatch: let declares base types only, not "
                            f"{show_type(s.type)}")
            ty = type_expr(self.j, ctx, persp, s.init)
            require(ty == s.type, "T-Decl", s.init.span,
                    lambda: f"type mismatch: {s.name} is declared {show_type(s.type)} "
                            f"but its initialiser is {show_type(ty)}")
            self.write_down(persp, s.persp, s.name, "T-Decl", s.span)
            return self.bind(ctx, s.name, s.persp, s.type, "T-Decl", s.span)

        body_ctx = self.attempt(head, ctx.extend(s.name, s.persp, s.type))
        return self.stmt(body_ctx, persp, s.body)

    def t_alloc(self, ctx: Context, persp: Perspective, s: Alloc) -> int:
        # T-Alloc (Local, Global: x at π) and T-Alloc-Shared (x at (Block, 1))
        shared = s.mem is MemKind.SHARED
        rule = "T-Alloc-Shared" if shared else "T-Alloc"
        data_persp = BLOCK1 if shared else persp
        if s.persp is not None:  # T-Alloc-Local-At (our extension, errata)
            rule, data_persp = "T-Alloc-Local-At", s.persp
        ty = ArrayType(s.elem, s.mem)

        def head() -> Context:
            require(s.size > 0, rule, s.span, lambda: f"bad size: alloc of {s.size} "
                                                      "elements")
            if s.persp is not None:
                # a Local array is per-thread storage: declared at π' ≤ π exactly as
                # T-Decl declares a scalar (write down)
                require(s.mem is MemKind.LOCAL, rule, s.span,
                        lambda: f"bad alloc: only a Local array takes a perspective, "
                                f"not {s.mem.value}")
                self.write_down(persp, s.persp, s.name, rule, s.span)
            if shared and self.j.rules.alloc_shared_block:
                # Note: A.2's T-Alloc-Shared has no perspective premise but
                # S-Alloc-Shared steps only at (Block, 1). See errata.
                require(persp == BLOCK1, rule, s.span,
                        lambda: f"perspective mismatch: code at {persp} cannot "
                                f"allocate Shared memory (needs code at {BLOCK1})")
            return self.bind(ctx, s.name, data_persp, ty, rule, s.span)

        body_ctx = self.attempt(head, ctx.extend(s.name, data_persp, ty))
        return self.stmt(body_ctx, persp, s.body) + s.size * type_size(s.elem)

    # ------------------------------------------------------------------ writes

    def write_down(self, persp: Perspective, data_persp: Perspective, name: str,
                   rule: str, span: Span) -> None:
        """π' ≤ π: code may write only data at its own perspective or narrower."""
        require(self.j.leq(data_persp, persp), rule, span,
                lambda: f"perspective mismatch: code at {persp} cannot write {name} at "
                        f"{data_persp} (only data at {persp} or narrower is writable)")

    def t_assn(self, ctx: Context, persp: Perspective, s: Assign) -> int:
        # T-Assn: x :^π' τ ∈ Γ,  Γ ⊢^π e : τ,  π' ≤ π
        b = visible(ctx, s.name, "T-Assn", s.span)
        assignable = isinstance(b.type, BaseType) or (
            not self.j.rules.assign_base_only and isinstance(b.type, ArrayType))
        # Note: fixed assigns base types only: rebinding a pointer defeats partition's
        # substitution y ↦ y + k (the target would become `y + k = e`). See errata.
        require(assignable, "T-Assn", s.span,
                lambda: f"not assignable: {s.name} has type {show_type(b.type)}")
        ty = type_expr(self.j, ctx, persp, s.value)
        require(ty == b.type, "T-Assn", s.value.span,
                lambda: f"type mismatch: cannot assign {show_type(ty)} to {s.name} of "
                        f"type {show_type(b.type)}")
        self.write_down(persp, b.persp, s.name, "T-Assn", s.span)
        return 0

    def t_arr_assn(self, ctx: Context, persp: Perspective, s: ArrAssign) -> int:
        # T-Arr-Assn (Global, Local) and T-Arr-Assn-Shared (π ≤ (Block, 1))
        ty, data_persp = array_of(self.j, ctx, persp, s.array, "T-Arr-Assn")
        shared = ty.mem is MemKind.SHARED
        rule = "T-Arr-Assn-Shared" if shared else "T-Arr-Assn"
        check_index(self.j, ctx, persp, s.index, rule)
        vt = type_expr(self.j, ctx, persp, s.value)
        require(vt == ty.elem, rule, s.value.span,
                lambda: f"type mismatch: cannot store {show_type(vt)} into "
                        f"{show_type(ty)}")
        if shared:
            require(self.j.leq(persp, BLOCK1), rule, s.span,
                    lambda: f"perspective mismatch: code at {persp} cannot write "
                            f"Shared memory (needs {BLOCK1} or narrower)")
        self.write_down(persp, data_persp, describe(s.array), rule, s.span)
        return 0

    # ----------------------------------------------------- perspectives on code

    def t_split(self, ctx: Context, persp: Perspective, s: Split) -> int:
        # T-Split: Γ ⊢^(h,n1) s1,  Γ ⊢^(h,n2) s2,  n1, n2 align to n
        h, n = persp.level, persp.n
        require(align_to(s.n1, s.n2, n), "T-Split", s.span,
                lambda: f"misaligned split: split({s.n1}, {s.n2}) of code at {persp} "
                        f"needs n1 + n2 <= {n}, n1 and n2 dividing {n}, and n2 "
                        "dividing n1")
        left = self.stmt(ctx, Perspective(h, s.n1), s.left)
        right = self.stmt(ctx, Perspective(h, s.n2), s.right)
        return max(left, right)

    def t_group(self, ctx: Context, persp: Perspective, s: Group) -> int:
        # T-Group: Γ ⊢^(h,n) s  gives  Γ ⊢^(h,q·n) group q s
        require(s.q >= 1 and persp.n % s.q == 0, "T-Group", s.span,
                lambda: f"bad group: group {s.q} does not divide code at {persp} into "
                        f"{s.q} equal {persp.level.keyword} perspectives")
        return self.stmt(ctx, Perspective(persp.level, persp.n // s.q), s.body)

    def t_destruct(self, ctx: Context, persp: Perspective, s: Destruct) -> int:
        # T-Destruct: Γ ⊢^↓π s
        require(persp in (BLOCK1, GRID1), "T-Destruct", s.span,
                lambda: f"bad destruct: destruct needs code at {GRID1} or {BLOCK1}; "
                        f"code is at {persp}")
        return self.stmt(ctx, destruct(persp, self.j.shape), s.body)

    # ---------------------------------------------------------------- functions

    def t_function_call(self, ctx: Context, persp: Perspective, s: Call) -> int:
        # T-Function-Call: f :^π Fun(x_i : τ_i, π, m'),  Γ ⊢^π e_i : τ_i,  m' ≤ m
        rule = "T-Function-Call"
        b = visible(ctx, s.fn, rule, s.span)
        ft = b.type
        require(isinstance(ft, FunType), rule, s.span,
                lambda: f"not a function: {s.fn} has type {show_type(ft)}")
        assert isinstance(ft, FunType)  # require raised otherwise
        require(ft.persp == persp, rule, s.span,
                lambda: f"perspective mismatch: {s.fn} is declared at {ft.persp}; code "
                        f"at {persp} cannot call it")
        require(len(s.args) == len(ft.params), rule, s.span,
                lambda: f"arity mismatch: {s.fn} takes {len(ft.params)} arguments, got "
                        f"{len(s.args)}")
        for i, (param, arg) in enumerate(zip(ft.params, s.args, strict=True), 1):
            def check(i: int = i, param: Param = param, arg: Expr = arg) -> None:
                self.argument(ctx, persp, s.fn, i, param, arg)

            self.attempt(check, None)
        return ft.uses

    def argument(self, ctx: Context, persp: Perspective, fn: str, i: int, param: Param,
                 arg: Expr) -> None:
        rule, where = "T-Function-Call", f"argument {i} ({param.name}) of {fn}"
        if not self.j.rules.param_persp:  # as printed: Γ ⊢^π e_i : τ_i
            ty = type_expr(self.j, ctx, persp, arg)
        elif isinstance(param.type, ArrayType):
            # Note: Sec 3.6: a (non-const) pointer argument must live at exactly the
            # parameter's perspective. See errata ("call arguments").
            ty, data_persp = array_of(self.j, ctx, persp, arg, rule)
            require(data_persp == param.persp, rule, arg.span,
                    lambda: f"perspective mismatch: {where} is a pointer at "
                            f"{param.persp}; the argument lives at {data_persp}")
        elif self.j.leq(param.persp, persp):
            # a primitive written down into a narrower (or equal) parameter: T-Decl
            ty = type_expr(self.j, ctx, persp, arg)
        else:
            # a broader primitive parameter: the argument must be readable there
            require(self.j.leq(persp, param.persp), rule, arg.span,
                    lambda: f"perspective mismatch: {where} lives at {param.persp}, "
                            f"incomparable with code at {persp}")
            ty = type_expr(self.j, ctx, param.persp, arg)
        require(ty == param.type, rule, arg.span,
                lambda: f"type mismatch: {where} must be {show_type(param.type)}, got "
                        f"{show_type(ty)}")


# --------------------------------------------------------------------- programs


def judge(rules: str | RuleSet, machine: MachineLike) -> Judge:
    return Judge(rule_set(rules), machine_shape(machine))


def check_fn(checker: StmtChecker, ctx: Context, f: FnDef) -> int:
    """V-Function: Γ, x_i :^π_i τ_i ⊢^π_m s with m the declared `uses`."""
    body_ctx = ctx
    for p in f.params:
        def bind(p: Param = p, c: Context = body_ctx) -> Context:
            require(sum(q.name == p.name for q in f.params) == 1, "V-Function",
                    p.span, lambda: f"redeclaration: parameter {p.name} of {f.name} is "
                                    "declared twice")
            return checker.bind(c, p.name, p.persp, p.type, "V-Function", p.span)

        body_ctx = checker.attempt(bind, body_ctx.extend(p.name, p.persp, p.type))
    used = checker.stmt(body_ctx, f.persp, f.body)
    checker.attempt(lambda: require(
        used <= f.uses, "V-Function", f.span,
        lambda: f"memory bound exceeded: {f.name} needs {used} bytes but declares uses "
                f"{f.uses}"), None)
    return used


def _check(prog: Program, rules: str | RuleSet,
           errors: list[IllTyped] | None) -> dict[str, int]:
    checker = StmtChecker(judge(rules, prog.machine), errors, source=True)
    ctx = program_context(prog)
    uses = {f.name: check_fn(checker, ctx, f) for f in prog.fns}
    uses["main"] = checker.stmt(ctx, GRID1, prog.main)  # main runs at (Grid, 1)
    return uses


def check_program(prog: Program, rules: str | RuleSet = "fixed") -> dict[str, int]:
    """Γ ⊢ prog for a source program: raise IllTyped at the first failing rule;
    else return the memory (bytes) each function body and `main` needs. Raises
    BadInput for duplicate top-level names."""
    return _check(prog, rules, None)


def type_errors(prog: Program, rules: str | RuleSet = "fixed") -> list[IllTyped]:
    """Every independent type error of `prog` (a failed premise poisons only its own
    statement; binders still bind their declared type), in source order."""
    errors: list[IllTyped] = []
    _check(prog, rules, errors)
    return errors


def check_stmt(
    ctx: Context, persp: Perspective, stmt: Stmt, rules: str | RuleSet = "fixed",
    machine: MachineLike = DEFAULT_MACHINE,
) -> int:
    """Γ ⊢^π_m s for a statement in any runtime state (the preservation check):
    return the least m, or raise IllTyped. Runtime forms (free, init/dec/wait, pointer
    offsets) type as printed, and a binder may shadow a name of Γ' whose scope has
    ended: the source-only restrictions of `check_program` (errata: "rebinding",
    "runtime forms in source") do not apply. `machine`: ast.Machine, MachineShape or
    (B, T)."""
    return StmtChecker(judge(rules, machine)).rule(ctx, persp, stmt)


def check_expr(
    ctx: Context, persp: Perspective, expr: Expr, rules: str | RuleSet = "fixed",
    machine: MachineLike = DEFAULT_MACHINE,
) -> Type:
    """Γ ⊢^π e : τ."""
    return type_expr(judge(rules, machine), ctx, persp, expr)

