"""The well-typed Bundl generator (`gpusem.fuzz.bundl.strategies.programs`): its programs
type-check under `--rules fixed`, are canonical, cover every surface statement form,
and stay small enough to shrink well."""

from __future__ import annotations

from gpusem.calculus.bundl import ast
from gpusem.calculus.bundl.perspective import GRID1, THREAD1, MachineShape, size
from gpusem.calculus.bundl.walk import child_stmts, is_canonical
from gpusem.fuzz.bundl.strategies.programs import (
    BASES,
    Env,
    VarInfo,
    expressions,
    memory_need,
    programs,
)
from gpusem.typing_rules.bundl import stmt as typing_rules
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

SURFACE = set(ast.STMT_CLASSES) - {ast.SyncInit, ast.SyncDec, ast.SyncWait, ast.Free}


def stmt_classes(s: ast.Stmt, acc: set) -> set:
    acc.add(type(s))
    for c in child_stmts(s):
        stmt_classes(c, acc)
    return acc


def program_classes(p: ast.Program) -> set:
    acc: set = set()
    stmt_classes(p.main, acc)
    for f in p.fns:
        stmt_classes(f.body, acc)
    return acc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_programs_type_check_fixed(prog):
    used = typing_rules.check_program(prog, rules="fixed")
    assert is_canonical(prog.main)
    for f in prog.fns:  # V-Function: the declared `uses` bounds the body's need
        assert used[f.name] <= f.uses


def test_generator_covers_every_surface_statement_form():
    seen: set = set()

    @settings(max_examples=250, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def collect(prog):
        seen.update(program_classes(prog))

    collect()
    assert SURFACE <= seen, sorted(c.__name__ for c in SURFACE - seen)


def test_generator_respects_its_size_parameters():
    sizes = []

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(max_blocks=1, max_threads=2, max_depth=1, max_stmts=2, max_fns=0))
    def collect(prog):
        assert prog.machine.blocks == 1 and prog.machine.threads in (1, 2)
        assert not prog.fns
        sizes.append(count_stmts(prog.main))

    collect()
    # two statements; a `descend` chain nests at most 4 moves, each maybe carrying an
    # array (lower/partition), around a body of at most two statements
    assert max(sizes) <= 2 * (1 + 4 * 2 + 3)


def count_stmts(s: ast.Stmt) -> int:
    return 1 + sum(count_stmts(c) for c in child_stmts(s))


def test_generator_shrinks_to_a_small_witness():
    # hypothesis's minimal program that partitions an array: the draws are local, so
    # everything unrelated shrinks away (STYLE 17).
    minimal = find(
        programs(),
        lambda p: ast.Partition in program_classes(p),
        settings=settings(max_examples=500, deadline=None, derandomize=True,
                          database=None, suppress_health_check=list(HealthCheck)),
    )
    assert count_stmts(minimal.main) <= 4, minimal


@settings(max_examples=100, deadline=None)
@given(st.data(), st.sampled_from(BASES))
def test_expressions_are_well_typed_in_their_context(data, ty):
    env = Env(THREAD1, (VarInfo("x", GRID1, ast.BaseType.INT),
                        VarInfo("a", GRID1, ast.ArrayType(ast.BaseType.FLOAT,
                                                          ast.MemKind.GLOBAL), 4)))
    shape = MachineShape(2, 4)
    ctx = typing_rules.Context().extend("x", GRID1, ast.BaseType.INT).extend(
        "a", GRID1, ast.ArrayType(ast.BaseType.FLOAT, ast.MemKind.GLOBAL))
    for source in (env, ctx):  # the generator's Env, or the type checker's Context
        e = data.draw(expressions(source, ty, shape, persp=THREAD1))
        assert typing_rules.check_expr(ctx, THREAD1, e, machine=shape) == ty


def test_memory_need_follows_t_alloc_and_t_seq():
    inner = ast.Alloc("s", ast.BaseType.INT, 3, ast.MemKind.SHARED, ast.Skip())
    prog = ast.seq(ast.Alloc("a", ast.BaseType.BOOL, 2, ast.MemKind.LOCAL, ast.Skip()),
                   ast.Call("f", ()), inner)
    # 2 bools (<= 4 bytes each) + max(f's 5, 3 ints) = 8 + 12
    assert memory_need(prog, {"f": 5}) == 8 + 12


def reads_memory(e: ast.Expr) -> bool:
    match e:
        case ast.Index():
            return True
        case ast.BinOp(_, left, right):
            return reads_memory(left) or reads_memory(right)
        case ast.UnOp(_, operand):
            return reads_memory(operand)
        case _:
            return False


def branch_inputs(s: ast.Stmt, shape: MachineShape, out: list) -> list:
    """Expressions that decide control flow or land in data shared by several threads."""
    match s:
        case ast.If(cond) | ast.While(cond):
            out.append(cond)
        case ast.Decl(persp=p, init=e) if size(p, shape) > 1:
            out.append(e)
    for c in child_stmts(s):
        branch_inputs(c, shape, out)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(max_blocks=2, max_threads=8))
def test_control_flow_never_reads_racy_memory(prog):
    # errata "generator: racy reads and control flow": a racy read in a condition can
    # split a perspective at a barrier (deadlock); the generator never makes one.
    shape = MachineShape(prog.machine.blocks, prog.machine.threads)
    bodies = [prog.main, *(f.body for f in prog.fns)]
    for e in (x for b in bodies for x in branch_inputs(b, shape, [])):
        assert not reads_memory(e), e
