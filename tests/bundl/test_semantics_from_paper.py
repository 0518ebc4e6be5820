"""Rules of Appendix A.3 that the interpreters once read wrongly, pinned from the paper's
text (issue 14, items 1 and 2; proofs_notes/errata.md).

S-Function-Call:  Σ(f) = {[x_i : τ_i], s}   σ, Σ ⊢^π_π e_i ⇓ v_i   ⟹  f(e_i) ⇝ s with
                  η[x_i ↦ v_i]: every argument is evaluated at the CALLER's perspective,
                  ambient and target alike (the proof of Lemma A.8 writes ⊢^π e_i ⇓ v_i).
E-Arr-Access:     ⊢^π_π' e1 ⇓ ⟨l, n⟩   ⊢^π_π' e2 ⇓ i   ⟹  ⊢^π_π' e1[e2] ⇓ get(l + i):
                  the index is evaluated against the enclosing target π'.
S-Arr-Assn:       ⊢^π_π e1, ⊢^π_π e2: a stored-to index is evaluated at the code's π.

Each holds in the small-step machine (the living definition) and in the big-step
evaluator, which must agree with it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.interpreter.bundl.big_step import run_big_step
from gpusem.interpreter.bundl.schedulers import run_program
from gpusem.typing_rules.bundl.stmt import check_program

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "bundl"


def both(src: str, rules: str = "fixed"):
    """(small-step rr, big-step) outcomes of a program that type-checks under `rules`."""
    prog = parse_program(src)
    check_program(prog, rules=rules)
    small = run_program(prog, "rr", rules=rules)
    big = run_big_step(prog, rules=rules) if rules == "fixed" else small
    return small, big


# f(partition_id) into a parameter at perspective PARAM, called from code at CODE.
CALL = """machine blocks = 1, threads = 4;
global out : int[4];
fn f(a : int @ {param}, o : Global int[] @ thread[1]) at thread[1] uses 0 {{
  o[0] = a + 1;
}}
main {{ lower out into ob {{ destruct {{ lower ob into ot {{ destruct {{
  partition ot into o1 by 4 {{ group 4 {{ f(partition_id, o1); }} }}
}} }} }} }} }}
"""


@pytest.mark.parametrize("param", ["thread[1]", "thread[2]", "thread[4]", "block[1]"])
def test_s_function_call_evaluates_arguments_at_the_callers_perspective(param):
    """partition_id at ⊢^thread[1]_thread[1] is 0 for every thread, whether the parameter
    is at the code's perspective or broader (the broader ones used to get stuck in
    E-Partition-Id: the argument was evaluated with the parameter as target)."""
    small, big = both(CALL.format(param=param))
    assert small.kind == big.kind == "terminated", small.message
    assert small.globals["out"] == big.globals["out"] == [1, 1, 1, 1]


def test_narrower_parameter_gets_the_callers_value():
    """From block[1] into a thread[1] parameter: ⊢^block[1]_block[1] partition_id = 0,
    not the thread's index (which the target thread[1] would give)."""
    text = (EXAMPLES / "fn_args_at_caller_perspective.bundl").read_text()
    small, big = both(text)
    assert small.globals["out"] == big.globals["out"] == [1, 1, 1, 1]


PAPER_CALL = """machine blocks = 1, threads = 2;
fn f(a : int @ thread[2]) at block[1] uses 0 {}
main { destruct { f(partition_id); } }
"""


@pytest.mark.parametrize("rules", ["fixed", "paper"])
def test_call_argument_runs_under_both_rule_sets(rules):
    """The program that the errata once blamed on the paper (`stuck:E-Partition-Id`):
    well-typed under both rule sets, and under both the call steps, as printed."""
    small, _ = both(PAPER_CALL, rules)
    assert small.kind == "terminated", small.message


def test_e_arr_access_index_is_evaluated_against_the_enclosing_target():
    text = (EXAMPLES / "index_partition_id_target.bundl").read_text()
    small, big = both(text)
    assert small.globals["out"] == big.globals["out"] == [3, 2, 1, 0]


STORE = """machine blocks = 1, threads = 4;
global out : int[4];
main { lower out into ob { destruct { lower ob into ot { destruct {
  partition ot into o1 by 4 { group 4 { o1[partition_id] = 7; } }
} } } } }
"""


def test_s_arr_assn_index_is_evaluated_at_the_code_perspective():
    """o1[partition_id] = 7 at thread[1]: ⊢^thread[1]_thread[1] partition_id = 0, so each
    thread stores into its own piece's cell 0."""
    small, big = both(STORE)
    assert small.globals["out"] == big.globals["out"] == [7, 7, 7, 7]


# Ill-typed programs (the interpreters run unchecked ASTs too): big-step must report
# the stuck state small-step reports, not crash (issue 14, latent crashes).
ILL = {
    "partition of a scalar": ("main { let x : int @ grid[1] = 3; "
                              "partition x into y by 1 { skip; } }", "S-Partition"),
    "memcpy of scalars": ("main { let x : int @ grid[1] = 3; let z : int @ grid[1] = 4; "
                          "memcpy(x, z); }", "S-Memcpy"),
}


@pytest.mark.parametrize("name", sorted(ILL))
def test_big_step_reports_the_small_step_stuck_state(name):
    src, rule = ILL[name]
    prog = parse_program("machine blocks = 1, threads = 2;\n" + src)
    small, big = run_program(prog, "rr"), run_big_step(prog)
    assert small.kind == big.kind == "stuck"
    assert small.rule == big.rule == rule
    assert small.message.startswith("type mismatch:")
    assert big.message.startswith("type mismatch:")


# Found by the 100,000-program soundness run (scripts/soundness_run.py): a pointer
# argument living at a perspective narrower than the code (T-Function-Call, fixed: a
# pointer must live at exactly the parameter's perspective) was evaluated as a read of
# the variable, whose read-up check (E-Var, fixed) failed: stuck on every schedule.
NARROW_POINTER = """machine blocks = 1, threads = 1;
global g1 : int[2];
fn f(a : Global int[] @ block[1]) at grid[1] uses 0 {
  lower g1 into gb { destruct { (a + 1)[0] = 7; } }
}
main { lower g1 into v { f(v); } }
"""


def test_a_pointer_argument_is_passed_not_read():
    small, big = both(NARROW_POINTER)
    assert small.kind == big.kind == "terminated", small.message
    assert small.globals["g1"] == big.globals["g1"] == [0, 7]
