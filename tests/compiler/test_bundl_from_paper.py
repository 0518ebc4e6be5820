"""The Bundl compiler on the rules it once miscompiled (issue 14, items 1 and 2), each
checked on the cpu backend against the interpreter, and the seeded fault that puts the
old lowering back caught on the same program:

  S-Function-Call  arguments at the caller's perspective (⊢^π_π), including a
                   partition_id passed into a broader parameter (the compiler used to
                   raise ValueError on it: level division thread/block);
  E-Arr-Access     an index evaluated against the enclosing target (⊢^π_π');
  S-Alloc-Global   one array per unit of the code perspective, shared by the unit's
                   threads, fresh and zeroed at every dynamic instance.

`gpusem exec` on a program it cannot compare exits nonzero and says why.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.fuzz.bundl.compile_property import Verdict, check_file, check_program
from gpusem.interpreter.bundl.machine import Outcome
from gpusem.interpreter.bundl.reference import Reference
from gpusem.typing_rules.bundl.stmt import check_program as typecheck

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "bundl"

BROADER = """machine blocks = 1, threads = 4;
global out : int[4];
fn f(a : int @ block[1], o : Global int[] @ thread[1]) at thread[1] uses 0 {
  o[0] = a + 1;
}
main { lower out into ob { destruct { lower ob into ot { destruct {
  partition ot into o1 by 4 { group 4 { f(partition_id, o1); } }
} } } } }
"""

# alloc in Global met three times by each block (a loop): a fresh zeroed array each
# time, shared by the block's threads.
LOOP = """machine blocks = 2, threads = 4;
global out : int[8];
main { lower out into ob { destruct { partition ob into o2 by 2 { group 2 {
  let i : int @ block[1] = 0;
  while i < 3 {
    alloc g : int[4] in Global;
    lower g into gt { destruct { let t : int @ thread[1] = partition_id;
      partition gt into g1 by 4 { group 4 { g1[0] = g1[0] + 10 * t + i; } } } }
    lower o2 into ot { destruct { let u : int @ thread[1] = partition_id;
      partition ot into o1 by 4 { group 4 { o1[0] = o1[0] + g[(u + 1) % 4]; } } } }
    i = i + 1;
  }
} } } } }
"""


def verdict(src: str):
    prog = parse_program(src)
    typecheck(prog)
    return check_program(prog, "cpu", (0, 1, 2, 3))


def test_partition_id_into_a_broader_parameter_compiles_and_agrees():
    v = verdict(BROADER)
    assert v.kind == "agree", v.describe()


def test_global_allocation_in_a_loop_is_fresh_per_instance():
    v = verdict(LOOP)
    assert v.kind == "agree", v.describe()
    assert v.expected["out"] == [33, 63, 93, 3] * 2


@pytest.mark.parametrize("example, fault", [
    ("index_partition_id_target", "index-at-code-perspective"),
    ("alloc_global_per_unit", "global-alloc-per-thread"),
])
def test_old_lowering_is_caught(example, fault, monkeypatch):
    path = str(EXAMPLES / f"{example}.bundl")
    assert check_file(path).kind == "agree"
    monkeypatch.setenv("GPUSEM_FAULT", fault)
    caught = check_file(path)
    assert caught.kind == "disagree", caught.describe()


def _ref(kind: str, trap: bool = False, rule: str = "E-Var") -> Reference:
    return Reference(Outcome(kind, {}, 0, rule=rule, message="m", trap=trap))


@pytest.mark.parametrize("ref, kind, code", [
    (_ref("stuck"), "stuck", 3),  # a well-typed program got stuck: our soundness bug
    (_ref("stuck", trap=True, rule="E-Bop"), "not-compared", 1),  # division by zero
    (_ref("deadlock", rule="S-Sync-Wait-Spin"), "not-compared", 1),
    (_ref("budget", rule="S-Program"), "not-compared", 2),
])
def test_programs_not_compared_exit_nonzero(ref, kind, code):
    prog = parse_program("main { skip; }")
    v = check_program(prog, "cpu", ref=ref)
    assert (v.kind, v.exit_code()) == (kind, code)
    assert not (v.kind == "stuck" and v.agree)  # a finding, never a silent pass


def test_racy_is_not_an_agreement():
    v = Verdict(True, "racy", "not proven race-free")
    assert v.exit_code() == 1


# A shared array allocated in a loop: every iteration's instance is fresh (S-Alloc-Shared
# allocates new cells each time), so a fast thread must not zero the slot while a slow
# one still reads the previous instance. The cpu harness switches fibres only at
# barriers, so it cannot show the missing barrier: the shape of the code is checked.
SHARED_LOOP = """machine blocks = 1, threads = 2;
global out : int[2];
main { lower out into ob { destruct {
  alloc l : int[1] in Local;
  let i : int @ block[1] = 0;
  while i < 3 { alloc s : int[1] in Shared; s[0] = i + 1; l[0] = l[0] * 10 + s[0];
                i = i + 1; }
  lower ob into ot { destruct { partition ot into o by 2 { group 2 { o[0] = l[0]; } } } }
} } }
"""


def test_shared_allocation_met_again_is_zeroed_between_barriers():
    from gpusem.compiler.bundl_cuda.pipeline import compile_program

    prog = parse_program(SHARED_LOOP)
    typecheck(prog)
    body = compile_program(prog).source.split("while (v_i < 3)")[1]
    zero = body.index("v_s[gs_i] = 0;")
    assert "__syncthreads();" in body[:zero]  # before the zeroing, inside the loop
    assert verdict(SHARED_LOOP).kind in ("agree", "racy")
    once = compile_program(parse_program(SHARED_LOOP.replace(
        "while i < 3 {", "if i < 3 {"))).source.split("if (v_i < 3)")[1]
    assert "__syncthreads();" not in once[:once.index("v_s[gs_i] = 0;")]
