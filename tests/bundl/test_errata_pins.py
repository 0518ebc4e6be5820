"""Pins of errata entries re-read against Appendix A (issue 14, item 4): each test shows
the fact its entry rests on (proofs_notes/errata.md names the test).
"""

from __future__ import annotations

from gpusem.calculus.bundl.parser import parse_program
from gpusem.interpreter.bundl.schedulers import run_program
from gpusem.typing_rules.bundl.stmt import check_program, type_errors

# A block-uniform scalar read by thread code under the printed T-Var (exact π): copied
# down into a thread[1] variable at block[1] (T-Var at block[1], T-Decl writes down),
# then read at thread[1]. No read up is needed.
COPY_DOWN = """machine blocks = 1, threads = 2;
main { destruct {
  let r : int @ block[1] = 7;
  let r1 : int @ thread[1] = r;
  destruct { group 2 {
    alloc l : int[1] in Local;
    l[0] = r1 + 1;
  } }
} }
"""


def test_t_var_copy_down_reads_up_under_paper():
    """Errata "T-Var and read up": the printed rules already let thread code use a
    block-uniform scalar; reading it directly (fixed's var_read_up) is an extension."""
    prog = parse_program(COPY_DOWN)
    check_program(prog, rules="paper")
    assert run_program(prog, "rr", rules="paper").kind == "terminated"
    direct = parse_program(COPY_DOWN.replace("l[0] = r1 + 1;", "l[0] = r + 1;"))
    assert [e.rule for e in type_errors(direct, "paper")] == ["T-Var"]
    check_program(direct, rules="fixed")


# A pointer assignment inside a partition's body (T-Assn without "not an array").
REBIND = """machine blocks = 1, threads = 1;
global out : int[1];
main { lower out into ob { destruct { lower ob into ot { destruct {
  partition ot into o by 1 {
    alloc z : int[1] in Global;
    o = z;
    o[0] = 5;
  }
} } } } }
"""


def test_pointer_rebinding_under_paper_redirects_the_store():
    """Errata "T-Assn assigns arrays": S-Partition substitutes o + 0 for o, so the
    printed body has `(o + 0) = z`, not a statement; bound instead of substituted, the
    assignment rebinds the piece and the store lands in z: out stays 0. One thread,
    so no barrier is involved (the deadlock once cited as evidence is Ψ's)."""
    prog = parse_program(REBIND)
    check_program(prog, rules="paper")
    out = run_program(prog, "rr", rules="paper")
    assert out.kind == "terminated" and out.globals["out"] == [0]
    assert [e.rule for e in type_errors(prog, "fixed")] == ["T-Assn"]
    fine = parse_program(REBIND.replace("    o = z;\n", ""))
    assert run_program(fine, "rr", rules="paper").globals["out"] == [5]


# Two equal deferred copies in one async_partition (a thread's Φ(φ) is a FIFO list, not
# a set: both run at the unwind; S-Async-Partition-Unwind takes each out of Φ in turn).
TWO_COPIES = """machine blocks = 1, threads = 1;
global out : int[1];
main { lower out into ob { destruct { lower ob into ot { destruct {
  partition ot into o by 1 {
    alloc z : int[1] in Local;
    z[0] = 3;
    async_partition [phi] o into oa {
      async_memcpy(oa, z);
      async_memcpy(oa, z);
    }
    o[0] = o[0] + 1;
  }
} } } } }
"""


def test_phi_unwind_runs_each_deferred_copy_once():
    """Errata "Φ, deferred copies": the printed S-Async-Partition-Unwind already takes
    the statement out of Φ(φ) (Φ = Φ'[φ ↦ Φ'(φ) ∪ {s}], the output is Φ'); two equal
    copies are two statements (a list), both run, each once."""
    prog = parse_program(TWO_COPIES)
    check_program(prog)
    seen: set[str] = set()
    out = run_program(prog, "rr", seen=seen)
    assert out.globals["out"] == [4]
    assert {"S-Async-Partition-Unwind", "S-Async-Partition-Done"} <= seen
