"""Expression typing Γ ⊢^π e : τ (Prism, seed 004, Appendix A.2.1 and Figure 14).

Conventions (paper -> Python):
  Γ -> `ctx` (bundl/context.Context), π -> `persp` (the code perspective),
  π' -> `data_persp` (the perspective a datum lives at), τ -> `ty`,
  B, T -> `j.shape`, the rule set (`--rules fixed|paper`) -> `j.rules`.

Read up (Sec 3.4.1) is where the rule sets differ most: A.2's T-Var demands that a
variable live at exactly the code perspective, and only T-Arr-Access reads an array
"from a broader perspective". `fixed` lets T-Var read any variable at a perspective at
least as broad as the code's (see errata, "T-Var and read up").

Arrays are typed by `array_of`, which synthesises both the array type and the
perspective π' the premise `Γ ⊢^π' e1 : τ[]^l` of T-Arr-Access(-Shared) and
T-Arr-Assn(-Shared) leaves open: the perspective of the array variable, carried through
pointer offsets `e + k` (the runtime form S-Partition substitutes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn, assert_never

from gpusem.calculus.bundl.ast import (
    ArrayType,
    BaseType,
    BinOp,
    BoolLit,
    Expr,
    FloatLit,
    Fma,
    FunType,
    Index,
    IntLit,
    MemKind,
    PartitionId,
    Type,
    UnOp,
    Var,
)
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    MachineShape,
    Perspective,
)
from gpusem.calculus.errors import IllTyped
from gpusem.calculus.span import Span
from gpusem.typing_rules.bundl.context import Binding, Context, RuleSet, show_type

INT, FLOAT, BOOL = BaseType.INT, BaseType.FLOAT, BaseType.BOOL
ARITH_OPS = frozenset({"+", "-", "*", "/", "%"})
LOGIC_OPS = frozenset({"&&", "||"})
EQ_OPS = frozenset({"==", "!="})
ORD_OPS = frozenset({"<", "<=", ">", ">="})


@dataclass(frozen=True, slots=True)
class Judge:
    """What every rule consults besides Γ and π: the rule set and the machine shape."""

    rules: RuleSet
    shape: MachineShape

    def leq(self, a: Perspective, b: Perspective) -> bool:
        return self.rules.leq(a, b, self.shape)


def fail(rule: str, span: Span, message: str) -> NoReturn:
    raise IllTyped(message, rule=rule, span=span)


def require(cond: bool, rule: str, span: Span, message: Callable[[], str]) -> None:
    """A premise: when `cond` fails, raise IllTyped with `message()` (built lazily:
    messages name perspectives and types, and most premises hold)."""
    if not cond:
        fail(rule, span, message())


def visible(ctx: Context, name: str, rule: str, span: Span) -> Binding:
    """The binding of `name`, which must exist and not be hidden by a partition."""
    b = ctx.lookup(name)
    if b is None:
        fail(rule, span, f"unbound variable: {name}")
    if b.hidden_by is not None:
        what = b.hidden_by.removeprefix("T-").lower()
        use = f"use {b.renamed_to}" if b.renamed_to else "use the new name"
        fail(rule, span, f"hidden variable: {name} cannot be used inside its {what} "
                         f"({use})")
    return b


# ------------------------------------------------------------------------ judgment


def type_expr(j: Judge, ctx: Context, persp: Perspective, e: Expr) -> Type:
    """Γ ⊢^π e : τ; raises IllTyped naming the rule whose premise fails."""
    match e:
        case IntLit():
            return INT  # T-Int
        case FloatLit():
            return FLOAT  # T-Float
        case BoolLit():
            return BOOL  # T-Bool
        case Var(name, span):
            return t_var(j, ctx, persp, name, span)
        case PartitionId(span):  # T-Partition-Id
            require(j.rules.lt(persp, GRID1, j.shape), "T-Partition-Id", span,
                    lambda: "perspective mismatch: partition_id needs code narrower "
                            f"than {GRID1}; code is at {persp}")
            return INT
        case Index(array, index, span):
            return t_arr_access(j, ctx, persp, array, index, span)
        case BinOp(op, left, right, span):
            return t_binop(j, ctx, persp, op, left, right, span)
        case UnOp(op, operand, span):
            return t_unop(j, ctx, persp, op, operand, span)
        case Fma(a, b, c, span):
            return t_fma(j, ctx, persp, (a, b, c), span)
        case _:
            assert_never(e)


def t_var(j: Judge, ctx: Context, persp: Perspective, name: str, span: Span) -> Type:
    # T-Var
    b = visible(ctx, name, "T-Var", span)
    require(not isinstance(b.type, FunType), "T-Var", span,
            lambda: f"not a value: {name} is a function")
    if j.rules.var_read_up:
        # Note: read up (Sec 3.4.1): a datum at π' is uniform over each π' unit, so
        # code at any narrower π may read it. See errata ("T-Var and read up").
        require(j.leq(persp, b.persp), "T-Var", span,
                lambda: f"perspective mismatch: code at {persp} cannot read {name} at "
                        f"{b.persp} (only data at {persp} or broader is readable)")
    else:
        require(b.persp == persp, "T-Var", span,
                lambda: f"perspective mismatch: code at {persp} cannot read {name} at "
                        f"{b.persp} (T-Var needs the same perspective)")
    return b.type


def array_of(
    j: Judge, ctx: Context, persp: Perspective, e: Expr, rule: str
) -> tuple[ArrayType, Perspective]:
    """The type τ[]^l and perspective π' of the array expression `e` (see docstring).

    `rule` is the rule whose premise `Γ ⊢^π' e : τ[]^l` is being established.
    """
    match e:
        case Var(name, span):
            b = visible(ctx, name, rule, span)
            require(isinstance(b.type, ArrayType), rule, span,
                    lambda: f"not an array: {name} has type {show_type(b.type)}")
            assert isinstance(b.type, ArrayType)  # require raised otherwise
            return b.type, b.persp
        case BinOp("+", base, offset, span):  # T-Ptr-Offset (runtime form)
            ty, data_persp = array_of(j, ctx, persp, base, rule)
            off = type_expr(j, ctx, persp, offset)
            require(off is INT, "T-Ptr-Offset", span,
                    lambda: "type mismatch: a pointer offset must be int, got "
                            f"{show_type(off)}")
            return ty, data_persp
        case _:
            fail(rule, e.span, "not an array: only a variable or a pointer offset "
                               "`x + k` denotes an array")


def t_arr_access(
    j: Judge, ctx: Context, persp: Perspective, array: Expr, index: Expr, span: Span
) -> Type:
    ty, data_persp = array_of(j, ctx, persp, array, "T-Arr-Access")
    rule = "T-Arr-Access-Shared" if ty.mem is MemKind.SHARED else "T-Arr-Access"
    check_index(j, ctx, persp, index, rule)
    if ty.mem is MemKind.SHARED:  # T-Arr-Access-Shared
        require(j.leq(persp, BLOCK1), rule, span,
                lambda: f"perspective mismatch: code at {persp} cannot read Shared "
                        f"memory (needs {BLOCK1} or narrower)")
    # T-Arr-Access: π ≤ π' (read up)
    require(j.leq(persp, data_persp), rule, span,
            lambda: f"perspective mismatch: code at {persp} cannot read "
                    f"{describe(array)} at {data_persp} (only data at {persp} or "
                    "broader is readable)")
    return ty.elem


def check_index(j: Judge, ctx: Context, persp: Perspective, index: Expr,
                rule: str) -> None:
    ty = type_expr(j, ctx, persp, index)
    require(ty is INT, rule, index.span,
            lambda: f"type mismatch: an array index must be int, got {show_type(ty)}")


def t_binop(
    j: Judge, ctx: Context, persp: Perspective, op: str, left: Expr, right: Expr,
    span: Span,
) -> Type:
    lt = type_expr(j, ctx, persp, left)
    if op == "+" and isinstance(lt, ArrayType):  # T-Ptr-Offset (runtime form)
        rt = type_expr(j, ctx, persp, right)
        require(rt is INT, "T-Ptr-Offset", span,
                lambda: "type mismatch: a pointer offset must be int, got "
                        f"{show_type(rt)}")
        return lt
    rt = type_expr(j, ctx, persp, right)

    def pair() -> str:
        return f"{show_type(lt)} and {show_type(rt)}"

    if op in ARITH_OPS:  # T-Bop
        # Note: A.2's T-Bop is int-only; float arithmetic (not %) is the spec's
        # extension, typed alike. See errata ("T-Bop/T-Cmp extensions").
        ok = lt == rt and (lt is INT or (lt is FLOAT and op != "%"))
        floats = "" if op == "%" else " or two floats"
        require(ok, "T-Bop", span,
                lambda: f"type mismatch: operator {op} needs two ints{floats}, got "
                        f"{pair()}")
        return lt
    if op in LOGIC_OPS:  # T-Bop (extension: && || on bool)
        require(lt is BOOL and rt is BOOL, "T-Bop", span,
                lambda: f"type mismatch: operator {op} needs two bools, got {pair()}")
        return BOOL
    if op in EQ_OPS:  # T-Cmp (extension: == != also on float and bool)
        require(lt == rt and isinstance(lt, BaseType), "T-Cmp", span,
                lambda: f"type mismatch: operator {op} needs two values of one base "
                        f"type, got {pair()}")
        return BOOL
    if op in ORD_OPS:  # T-Cmp
        require(lt == rt and lt in (INT, FLOAT), "T-Cmp", span,
                lambda: f"type mismatch: operator {op} needs two ints or two floats, "
                        f"got {pair()}")
        return BOOL
    fail("T-Bop", span, f"unknown operator: {op}")


def t_fma(
    j: Judge, ctx: Context, persp: Perspective, operands: tuple[Expr, Expr, Expr],
    span: Span,
) -> Type:
    # T-Fma (extension: explicit fused multiply-add; see errata): T-Bop's float case
    # with three operands, each typed at the code perspective π as T-Bop's are.
    tys = [type_expr(j, ctx, persp, x) for x in operands]
    require(all(t is FLOAT for t in tys), "T-Fma", span,
            lambda: "type mismatch: fma needs three floats, got "
                    + ", ".join(show_type(t) for t in tys))
    return FLOAT


def t_unop(
    j: Judge, ctx: Context, persp: Perspective, op: str, operand: Expr, span: Span
) -> Type:
    # T-Unop (extension: the paper has no unary operators; see errata)
    ty = type_expr(j, ctx, persp, operand)
    if op == "-":
        require(ty in (INT, FLOAT), "T-Unop", span,
                lambda: "type mismatch: unary - needs int or float, got "
                        f"{show_type(ty)}")
        return ty
    if op == "!":
        require(ty is BOOL, "T-Unop", span,
                lambda: f"type mismatch: ! needs bool, got {show_type(ty)}")
        return BOOL
    fail("T-Unop", span, f"unknown operator: {op}")


def describe(e: Expr) -> str:
    """A short name for an array expression in messages."""
    match e:
        case Var(name):
            return name
        case BinOp("+", base, _):
            return describe(base)
        case _:
            return "the array"

