"""The AST-level reducer of Bundl counterexamples (fuzz/bundl/shrink.py, issue 5)."""

from __future__ import annotations

import time

import pytest
from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.bundl.perspective import Level, Perspective
from gpusem.calculus.bundl.walk import child_stmts, is_canonical, statement_count
from gpusem.fuzz.bundl import shrink as S
from gpusem.fuzz.bundl import shrink_passes as P
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.bundl.target import BundlTarget
from gpusem.fuzz.targets import CheckResult
from gpusem.typing_rules.bundl.stmt import check_program

# A kernel the generator could have built (staging through shared memory, then every
# thread reads a slot another thread wrote), bloated with code that has nothing to do
# with the missing barrier: a loop, an if, extra writes, an unused input.
BLOATED = """
machine blocks = 1, threads = 2;

global x0 : int[7] = [0, 0, 0, 1, 0, 0, 0];
global x1 : int[2] = [4, 5];
global out : int[4];

main {
  lower out into ob {
    destruct {
      alloc s : int[2] in Shared;
      lower s into st {
        lower ob into ot {
          destruct {
            partition st into s2 by 2 {
              group 2 {
                s2[0] = 3;
              }
            }
            partition ot into o by 2 {
              group 2 {
                let acc : int @ thread[1] = 5;
                let n : int @ thread[1] = 0;
                while (n < 3) {
                  acc = acc + x1[1];
                  n = n + 1;
                }
                if (acc > 7) {
                  o[1] = acc * 2;
                } else {
                  o[1] = 1;
                }
                o[0] = x0[(st[(0 % 2 + 2) % 2] % 7 + 7) % 7];
              }
            }
          }
        }
      }
    }
  }
}
"""


def test_bloated_kernel_shrinks_under_a_fault_with_the_same_signature(monkeypatch):
    monkeypatch.setenv("GPUSEM_FAULT", "drop-partition-barrier")
    # as the kernel generator would have drawn it: race-free by construction
    program = Generated(parse_program(BLOATED), race_free_by_construction=True)
    target = BundlTarget()
    target.shrink_budget_s = 300  # a loaded machine must not cut it short (cap: below)
    monkeypatch.delenv("GPUSEM_SHRINK_S", raising=False)
    found = target.check(program)
    assert found.status == "finding", found.detail
    assert found.size == statement_count(program.program) >= 20

    small = target.minimise(program, found, "compile")

    assert small.signature == found.signature
    assert small.size <= 10  # the staging skeleton, one fill, one read
    final = parse_program(small.files["program.bundl"])  # the bundle shows the result
    assert statement_count(final) == small.size
    check_program(final, "fixed")
    assert "while" not in small.files["program.bundl"]
    assert "x1" not in small.files["program.bundl"]
    assert target.check(final).signature == found.signature  # it replays
    stats = target.shrink_stats[found.signature]
    assert stats["before"] == found.size and stats["after"] == small.size
    # ... and the campaign's bundle meta carries the statistics
    assert target.finding_meta(small)["minimised"]["after"] == small.size
    monkeypatch.delenv("GPUSEM_FAULT")
    assert target.check(final).status == "pass"  # the fault, not the program, is to blame


FLAT = """
machine blocks = 1, threads = 2;
global out : int[4];
main {
  out[0] = 3;
  out[1] = 4;
  out[2] = 5;
}
"""


def _writes(p: B.Program) -> set[int]:
    found: set[int] = set()

    def visit(s):
        if isinstance(s, B.ArrAssign) and isinstance(s.value, B.IntLit):
            found.add(s.value.value)
        for c in child_stmts(s):
            visit(c)
    visit(p.main)
    return found


def fake_oracle(p: B.Program) -> CheckResult:
    """A finding A while 3 and 4 are both written; B with 3 alone."""
    w = _writes(p)
    if {3, 4} <= w:
        return CheckResult("finding", signature="A", size=statement_count(p))
    if 3 in w:
        return CheckResult("finding", signature="B", size=statement_count(p))
    return CheckResult("pass")


def _plain(p: B.Program) -> Generated:
    return Generated(p, race_free_by_construction=False)


def _of_program(oracle):
    """An oracle of programs as the reducer calls it, on `Generated` candidates."""
    return lambda g: oracle(g.program)


def test_a_candidate_that_changes_the_signature_is_rejected():
    program = parse_program(FLAT)
    small, res, stats = S.shrink(_plain(program), "A", _of_program(fake_oracle))
    assert _writes(small.program) == {3, 4}  # deleting `out[1] = 4` would give B: kept
    assert res.signature == "A" and statement_count(small.program) == 2
    assert stats.before == 3 and stats.after == 2 and stats.kept >= 1
    assert not stats.capped


def test_no_candidate_is_kept_when_every_one_changes_the_signature():
    program = parse_program(FLAT)
    small, res, stats = S.shrink(_plain(program), "A", lambda p: CheckResult("finding",
                                                                     signature="C"))
    assert small.program == program and res is None and stats.kept == 0 and stats.tried > 0


def test_the_time_cap_holds():
    program = parse_program(BLOATED)

    def slow(p):
        time.sleep(0.05)
        return CheckResult("pass")

    _, res, stats = S.shrink(_plain(program), "A", slow, budget_s=0.3)
    assert stats.capped and res is None
    # at most one batch past the cap, counted in checks (each takes >= 0.05 s), not
    # in seconds, which a loaded machine stretches (issue 32.11)
    assert 0 < stats.tried <= 0.3 / 0.05 + S.BATCH, stats


def test_the_candidate_cap_holds():
    program = parse_program(BLOATED)
    _, _, stats = S.shrink(_plain(program), "A", lambda p: CheckResult("pass"),
                           max_tried=5)
    assert stats.capped and 5 <= stats.tried < 5 + S.BATCH


def test_every_candidate_is_strictly_smaller_well_typed_and_canonical():
    program = parse_program(BLOATED)
    key = P.size_key(program)
    cands = [c for c, _ in S._candidates(program, set())]
    assert len(cands) > 20
    for cand in cands:
        assert P.size_key(cand) < key
        assert is_canonical(cand.main)
        check_program(cand, "fixed")
    assert any(statement_count(c) < statement_count(program) - 1 for c in cands)


def _sync_nodes(p: B.Program) -> list[str]:
    out: list[str] = []

    def visit(s):
        if isinstance(s, P.SYNCING):
            out.append(type(s).__name__)
        for c in child_stmts(s):
            visit(c)
    visit(p.main)
    return sorted(out)


def test_race_safe_passes_move_no_barrier():
    """Candidates inherit race-freedom by construction only from passes that keep every
    synchronising construct; a deletion of a partition is not one of them."""
    program = parse_program(BLOATED)
    before = _sync_nodes(program)
    unsafe_changes = 0
    for make, safe in P.PASSES:
        for cand in make(program):
            if safe:
                assert _sync_nodes(cand) == before
            elif _sync_nodes(cand) != before:
                unsafe_changes += 1
    assert unsafe_changes > 0


def test_trust_is_inherited_only_from_a_trusted_parent_through_safe_edits():
    """A candidate is race-free by construction iff its parent is and the pass that
    made it is race-safe (it moves no barrier)."""
    checked: list[Generated] = []

    def oracle(g: Generated) -> CheckResult:
        checked.append(g)
        return fake_oracle(g.program)

    S.shrink(_plain(parse_program(FLAT)), "A", oracle)
    assert checked and not any(g.race_free_by_construction for g in checked)
    checked.clear()
    S.shrink(Generated(parse_program(FLAT), race_free_by_construction=True), "A", oracle)
    trusted = [g.program for g in checked if g.race_free_by_construction]
    assert trusted and all(_sync_nodes(p) == [] for p in trusted)
    # a kernel whose candidates are never kept: every one's parent is the kernel
    kernel = parse_program(BLOATED)
    checked.clear()
    S.shrink(Generated(kernel, race_free_by_construction=True), "A", oracle,
             max_tried=10_000)
    assert all(_sync_nodes(g.program) == _sync_nodes(kernel) for g in checked
               if g.race_free_by_construction)
    assert any(not g.race_free_by_construction for g in checked)  # unsafe passes


def test_hoisting_a_view_renames_it_back():
    program = parse_program(BLOATED)
    part = next(c for c in P.in_program(program, P.hoist)
                if "s2" not in str(c.main) and "st[0] = 3" in _print(c))
    assert "st[0] = 3" in _print(part)


def _print(p: B.Program) -> str:
    from gpusem.calculus.bundl.printer import print_program

    return print_program(p)


@pytest.mark.parametrize("text,n", [(FLAT, 3), (BLOATED, statement_count(
    parse_program(BLOATED)))])
def test_size_counts_statements_first(text, n):
    assert P.size_key(parse_program(text))[0] == n


SUB_BLOCK = """
machine blocks = 1, threads = 96;
global out : int[96];
main {
  lower out into ob {
    destruct {
      alloc s : int[96] in Shared;
      lower s into st {
        lower ob into ot {
          destruct {
            partition st into sg by 2 {
              partition ot into og by 2 {
                group 2 {
                  partition sg into s1 by 48 {
                    group 48 {
                      s1[0] = 1;
                    }
                  }
                  partition og into o by 48 {
                    o[0] = sg[0];
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}
"""


def test_flattening_a_group_level_renames_the_views_and_scales_the_counts():
    program = parse_program(SUB_BLOCK)
    flat = [c for c in P.in_program(program, P.hoist)
            if "group 2" not in _print(c) and P.typechecks(c)]
    assert flat, "the partition-partition-group triple goes in one well-typed step"
    text = _print(flat[0])
    assert "partition st into s1 by 96" in text and "group 96" in text
    assert "sg" not in text and "og" not in text
    assert statement_count(flat[0]) == statement_count(program) - 3


def _sizes(p: B.Program) -> list[int]:
    out = [g.size for g in p.globals]

    def visit(s):
        if isinstance(s, B.Alloc):
            out.append(s.size)
        for c in child_stmts(s):
            visit(c)
    visit(p.main)
    return out


def test_shorter_arrays_are_race_safe_only_without_partitions():
    """A length the partition count does not divide is well typed: the pieces of a
    partitioned program's shortened array go to the race analysis."""
    kernel, flat = parse_program(BLOATED), parse_program(FLAT)
    safe_kernel = [c for make, safe in P.PASSES if safe for c in make(kernel)]
    assert all(_sizes(c) == _sizes(kernel) or len(_sizes(c)) < len(_sizes(kernel))
               for c in safe_kernel)  # (dropping a global is safe: it is unused)
    assert any(_sizes(c) != _sizes(kernel) for make, safe in P.PASSES if not safe
               for c in make(kernel))
    assert any(_sizes(c) < _sizes(flat) for make, safe in P.PASSES if safe
               for c in make(flat))


def test_an_operator_the_reducer_does_not_know_still_shrinks_to_its_operands():
    from dataclasses import dataclass

    @dataclass(frozen=True, slots=True)
    class Op3:  # stands for an extension (e.g. an explicit fma)
        a: B.Expr
        b: B.Expr
        c: B.Expr

    e = Op3(B.IntLit(5), B.Var("x"), B.BinOp("+", B.IntLit(2), B.IntLit(3)))
    variants = list(P.expr_variants(e))
    assert e.a in variants and e.b in variants and e.c in variants
    assert Op3(e.a, e.b, B.IntLit(2)) in variants  # and inside its operands


def test_a_let_assigned_once_is_inlined():
    s = B.Decl("a", B.BaseType.INT, Perspective(Level.THREAD, 1), B.Var("t"), B.seq(
        B.Assign("a", B.BinOp("+", B.Var("a"), B.IntLit(2))),
        B.ArrAssign(B.Var("o"), B.IntLit(0), B.Var("a"))))
    folded, = list(P.inline(s))  # `a` is assigned: only the first form applies
    assert folded.init == B.BinOp("+", B.Var("t"), B.IntLit(2))
    assert statement_count(folded) == statement_count(s) - 1
    gone = list(P.inline(folded))
    assert B.ArrAssign(B.Var("o"), B.IntLit(0), folded.init) in gone


def test_a_long_block_of_stores_goes_in_chunks_not_one_by_one():
    """A generated claim body of hundreds of stores (seen on the H100: 346 statements)
    must not cost one oracle call per store: halves and quarters go first."""
    stores = "\n".join(f"  out[{i}] = {1000 + i};" for i in range(256))
    program = parse_program(f"machine blocks = 1, threads = 1;\n"
                            f"global out : int[256];\nmain {{\n{stores}\n}}\n")
    keeps = {1000 + 137, 1000 + 3}

    def oracle(p):  # the finding needs two of the stores, far apart
        if keeps <= _writes(p):
            return CheckResult("finding", signature="A", size=statement_count(p))
        return CheckResult("pass")

    small, _, stats = S.shrink(_plain(program), "A", _of_program(oracle),
                               max_tried=10_000)
    assert _writes(small.program) == keeps and statement_count(small.program) == 2
    assert stats.tried < 400, stats  # 112; one store at a time: 254 batches of 6
