"""Typing of the runtime forms and of the residual programs the S- rules produce
(what preservation, Lemma A.8, needs), the memory bound m, error collection, and the
API the interpreter uses (`check_stmt`, `program_context`, `Context.extend`)."""

from __future__ import annotations

import inspect

import pytest
from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.ast import (
    ArrayType,
    AsyncType,
    BaseType,
    BinOp,
    IntLit,
    MemKind,
    Var,
    seq,
)
from gpusem.calculus.bundl.parser import parse_program, parse_stmt
from gpusem.calculus.bundl.perspective import BLOCK1, GRID1, THREAD1, Level, Perspective
from gpusem.calculus.errors import BadInput, IllTyped
from gpusem.typing_rules.bundl import expr as bundl_expr
from gpusem.typing_rules.bundl import stmt as bundl
from gpusem.typing_rules.bundl.context import FIXED, Context, rule_set, type_size
from gpusem.typing_rules.bundl.stmt import (
    check_expr,
    check_program,
    check_stmt,
    program_context,
    type_errors,
)

GINT = ArrayType(BaseType.INT, MemKind.GLOBAL)
MACHINE = ast.Machine(2, 8)
THREAD8 = Perspective(Level.THREAD, 8)

PROG = parse_program(
    "machine blocks = 2, threads = 8;\nglobal out : int[16];\nglobal A : int[16];\n"
    "fn f(a : Global int[] @ thread[1], i : int @ thread[1]) at thread[1] uses 8 {\n"
    "  alloc l : int[2] in Local;\n  l[0] = i;\n  a[0] = l[0];\n}\n"
    "main { skip; }\n", "p.bundl")


def ctx_with(**bindings) -> Context:
    ctx = program_context(PROG)
    for name, (persp, ty) in bindings.items():
        ctx = ctx.extend(name, persp, ty)
    return ctx


def stmt(text: str) -> ast.Stmt:
    return parse_stmt(text)


def test_program_context_globals_at_grid1_and_functions_at_their_perspective():
    ctx = program_context(PROG)
    assert ctx.lookup("out").persp == GRID1 and ctx.lookup("out").type == GINT
    f = ctx.lookup("f")
    assert f.persp == THREAD1 and f.type.uses == 8 and len(f.type.params) == 2


def test_program_context_rejects_duplicates():
    # The parser refuses these too; ASTs built by code reach the checker directly.
    g = ast.GlobalDecl("a", BaseType.INT, 1, None)
    f = ast.FnDef("a", (), GRID1, 0, ast.Skip())
    dup = ast.Program(MACHINE, (g,), (f,), ast.Skip())
    with pytest.raises(BadInput, match="duplicate"):
        program_context(dup)


def test_context_extend_is_persistent():
    base = Context()
    one = base.extend("x", THREAD1, BaseType.INT)
    assert "x" in one and "x" not in base
    hidden = one.hide("x", "T-Partition")
    assert hidden.lookup("x").hidden_by == "T-Partition"
    assert one.lookup("x").hidden_by is None


def test_rule_set_names():
    assert rule_set("fixed") is FIXED
    with pytest.raises(BadInput):
        rule_set("lax")


def test_type_size_bytes():
    assert [type_size(b) for b in BaseType] == [1, 4, 4]  # bool, int, float


# ------------------------------------------------------------- residual programs


def test_s_partition_residual_types():
    # partition ot into o by 8 { group 8 { o[0] = 1; } }  at thread[8], o at thread[1]
    # steps to  init psi; group 8 { (o + k)[0] = 1; }; dec psi; wait psi  (fixed:
    # k = p div (n/c) * chunk); Γ' = Γ, o :^thread[1] τ[].
    ctx = ctx_with(ot=(THREAD8, GINT))
    before = stmt("partition [psi] ot into o by 8 { group 8 { o[0] = 1; } }")
    assert check_stmt(ctx, THREAD8, before, machine=MACHINE) == 0
    offset = BinOp("+", Var("o"), IntLit(3))
    body = ast.Group(8, ast.ArrAssign(offset, IntLit(0), IntLit(1)))
    after = seq(ast.SyncInit("psi"), body, ast.SyncDec("psi"), ast.SyncWait("psi"))
    for rules in ("fixed", "paper"):
        ctx2 = ctx.extend("o", THREAD1, GINT)
        assert check_stmt(ctx2, THREAD8, after, rules, machine=MACHINE) == 0


def test_s_while_unrolling_stays_typed():
    s = stmt("while i < 3 { let t : int @ thread[1] = i; i = t + 1; }")
    ctx = ctx_with(i=(THREAD1, BaseType.INT))
    assert check_stmt(ctx, THREAD1, s, machine=MACHINE) == 0
    assert isinstance(s, ast.While)
    unrolled = ast.If(s.cond, seq(s.body, s), ast.Skip())
    # seq moves the `while` into the `let`'s scope: t is rebound at the same type.
    assert check_stmt(ctx, THREAD1, unrolled, machine=MACHINE) == 0
    ctx_after_decl = ctx.extend("t", THREAD1, BaseType.INT)  # η holds t now
    assert check_stmt(ctx_after_decl, THREAD1, unrolled, machine=MACHINE) == 0


def test_s_alloc_residual_needs_no_more_memory():
    s = stmt("alloc l : int[4] in Local; l[0] = 1;")
    assert check_stmt(ctx_with(), THREAD1, s, machine=MACHINE) == 16
    assert isinstance(s, ast.Alloc)
    residual = seq(s.body, ast.Free(16))  # s; free (n·size(τ))
    ctx = ctx_with(l=(THREAD1, ArrayType(BaseType.INT, MemKind.LOCAL)))
    assert check_stmt(ctx, THREAD1, residual, machine=MACHINE) <= 16


def test_s_function_call_residual_is_the_body_with_params_bound():
    f = PROG.fn("f")
    ctx = ctx_with(a=(THREAD1, GINT), i=(THREAD1, BaseType.INT))
    assert check_stmt(ctx, THREAD1, f.body, machine=MACHINE) <= f.uses


def test_runtime_context_may_hold_dead_bindings():
    # Γ' built from η keeps x : int after `if c { let x : int .. }` has finished; the
    # sibling `let x : float` that follows is legal (the source check saw no nesting).
    ctx = ctx_with(x=(THREAD1, BaseType.INT))
    s = stmt("let x : float @ thread[1] = 2.0; let y : float @ thread[1] = x;")
    assert check_stmt(ctx, THREAD1, s, machine=MACHINE) == 0
    nested = ("machine blocks = 1, threads = 1;\nmain { let x : int @ grid[1] = 1; "
              "if true { let x : float @ grid[1] = 2.0; } }\n")
    with pytest.raises(IllTyped, match="^redeclaration"):
        check_program(parse_program(nested))


def test_deferred_memcpy_with_async_destination():
    # S-Async-Memcpy stores memcpy(x, y) with x : async τ[] in Φ; Γ ⊢ Φ needs it typed.
    ctx = ctx_with(x=(THREAD1, AsyncType(GINT)), y=(THREAD1, GINT))
    deferred = ast.Memcpy("x", "y")
    assert check_stmt(ctx, THREAD1, deferred, "fixed", machine=MACHINE) == 0
    with pytest.raises(IllTyped, match="not an array") as info:
        check_stmt(ctx, THREAD1, deferred, "paper", machine=MACHINE)
    assert info.value.rule == "T-Memcpy"


def test_s_claim_residual_runs_the_body_at_the_claimed_perspective():
    ctx = ctx_with(st=(THREAD8, GINT))
    claim = stmt("claim [psi] st into w at 4 { w[0] = 1; }")
    assert check_stmt(ctx, THREAD8, claim, machine=MACHINE) == 0
    # fixed S-Claim: like split(4, 4) with an empty right arm, then a barrier.
    inner = ast.Split(4, 4, stmt("w[0] = 1;"), ast.Skip())
    after = seq(ast.SyncInit("psi"), inner, ast.SyncDec("psi"), ast.SyncWait("psi"))
    ctx2 = ctx.extend("w", Perspective(Level.THREAD, 4), GINT)
    assert check_stmt(ctx2, THREAD8, after, machine=MACHINE) == 0


def test_sync_runtime_forms_at_any_perspective():
    for persp in (GRID1, BLOCK1, THREAD8, THREAD1):
        for s in (ast.SyncInit("p"), ast.SyncDec("p"), ast.SyncWait("p")):
            assert check_stmt(Context(), persp, s, machine=MACHINE) == 0


def test_t_free_needs_its_amount():
    assert check_stmt(Context(), THREAD1, ast.Free(12), machine=MACHINE) == 12
    with pytest.raises(IllTyped) as info:
        check_stmt(Context(), THREAD1, ast.Free(-1), machine=MACHINE)
    assert info.value.rule == "T-Free"


def test_check_expr_pointer_offset_keeps_the_array_type():
    ctx = ctx_with(o=(THREAD1, GINT))
    e = BinOp("+", BinOp("+", Var("o"), IntLit(2)), IntLit(1))
    assert check_expr(ctx, THREAD1, e, machine=MACHINE) == GINT


# ------------------------------------------------------------------ memory bound m


def test_memory_is_max_over_branches_and_sums_nested_allocations():
    src = ("machine blocks = 2, threads = 8;\nmain { destruct { group 2 {\n"
           "  if true { alloc a : int[4] in Shared; alloc b : bool[3] in Shared;\n"
           "    skip; }\n"
           "  else { alloc c : float[5] in Shared; skip; }\n"
           "  alloc d : int[1] in Shared; skip;\n} } }\n")
    # then-branch 16 + 3 = 19, else 20: max 20; d (4 bytes) follows the if: max 20.
    assert check_program(parse_program(src))["main"] == 20


def test_memory_of_a_call_is_the_declared_bound():
    src = ("fn g() at grid[1] uses 100 { skip; }\n"
           "main { g(); alloc x : int[2] in Global; g(); }\n")
    assert check_program(parse_program(src))["main"] == 108  # 8 + max(100, 100)


# ------------------------------------------------------------------ error handling


def test_type_errors_collects_independent_errors_in_source_order():
    src = ("machine blocks = 2, threads = 8;\nglobal out : int[4];\n"
           "main {\n"
           "  let a : int @ grid[1] = true;\n"          # T-Decl type mismatch
           "  out[0] = 1;\n"                            # ok at grid[1]
           "  if 3 { skip; }\n"                         # T-If
           "  destruct { destruct { skip; } }\n"        # T-Destruct at block[2]
           "  let b : int @ grid[1] = a + 1;\n"         # a still bound as int: ok
           "}\n")
    errors = type_errors(parse_program(src, "e.bundl"))
    assert [e.rule for e in errors] == ["T-Decl", "T-If", "T-Destruct"]
    assert [e.span.line for e in errors] == [4, 6, 7]
    with pytest.raises(IllTyped) as info:
        check_program(parse_program(src, "e.bundl"))
    assert info.value.rule == "T-Decl"


def test_one_line_error_format():
    src = "main {\n  let a : int @ grid[1] = true;\n}\n"
    (err,) = type_errors(parse_program(src, "x.bundl"))
    assert err.one_line().startswith("x.bundl:2:")
    assert "[T-Decl] type mismatch:" in err.one_line()


def test_every_syntax_class_has_a_typing_rule():
    # STYLE 9: a meta-test fails when an AST class lacks its clause.
    stmt_src = inspect.getsource(bundl.StmtChecker.rule)
    for cls in ast.STMT_CLASSES:
        assert f"{cls.__name__}(" in stmt_src, cls
    expr_src = inspect.getsource(bundl_expr.type_expr)
    for cls in ast.EXPR_CLASSES:
        assert f"case {cls.__name__}(" in expr_src, cls
