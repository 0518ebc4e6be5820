"""Typing against the semantics (Lemma A.7, progress): programs the fixed rules accept
never get stuck in the small-step interpreter under `--rules fixed`, and each hole that
a `fixed` flag closes is a program the paper's rules accept and the semantics rejects.

The corpus exercises every statement rule at the perspectives where it is legal; the
expected final memories are computed by hand from the programs' meaning.
"""

from __future__ import annotations

import itertools

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.bundl.walk import statement_count
from gpusem.calculus.errors import BadInput, IllTyped
from gpusem.fuzz.bundl.strategies.anything import syntax_programs
from gpusem.interpreter.bundl import preservation
from gpusem.interpreter.bundl.schedulers import run_program
from gpusem.typing_rules.bundl.stmt import check_program, type_errors
from hypothesis import HealthCheck, given, settings

HEAD = ("machine blocks = 2, threads = 4;\nglobal A : int[8] = iota;\n"
        "global out : int[8];\n")
# `out` narrowed to one element per thread (o : Global int[] @ thread[1]).
# partition_id is taken at code thread[4], where it is the thread's index in the block
# (at thread[1] it would be 0: the index of the thread inside its own perspective).
OWN = ("lower out into ob {{ destruct {{ partition ob into o1 by 2 {{ group 2 {{ "
       "{block} lower o1 into ot {{ destruct {{ partition ot into o by 4 {{ "
       "let i : int @ thread[1] = partition_id; group 4 {{ {body} }} }} }} }} }} }} "
       "}} }}")


def own(body: str, block: str = "", fns: str = "") -> str:
    return f"{HEAD}{fns}main {{ {OWN.format(block=block, body=body)} }}\n"


ADD = ("fn add(a : Global int[] @ thread[1], k : int @ thread[1]) at thread[1] "
       "uses 0 { a[0] = a[0] + k; }\n")

CORPUS = {
    # thread i of block b writes global element 4b + i; partition_id = i in block.
    "decl_read_up": (own("o[0] = A[i] + n;", block="let n : int @ block[1] = 10;"),
                     [10, 11, 12, 13, 10, 11, 12, 13]),
    "if_while": (own("let s : int @ thread[1] = 0; let j : int @ thread[1] = 0; "
                     "while j < i { j = j + 1; s = s + j; } "
                     "if s > 2 { o[0] = s; } else { o[0] = 0 - 1; }"),
                 [-1, -1, 3, 6, -1, -1, 3, 6]),
    "call_and_local": (own("alloc l : int[2] in Local; l[1] = i * 2; o[0] = l[1]; "
                           "add(o, 1);", fns=ADD),
                       [1, 3, 5, 7, 1, 3, 5, 7]),
    # s is written through a partition, then read by every thread after the barrier
    # that ends `lower` (init; dec; wait).
    "shared_then_read_up": (own(
        "o[0] = s[(i + 1) % 4];",
        block="alloc s : int[4] in Shared; lower s into st { destruct { "
              "partition st into mine by 4 { let k : int @ thread[1] = partition_id; "
              "group 4 { mine[0] = k * 100; } } } }"),
        [100, 200, 300, 0, 100, 200, 300, 0]),
    "split_arms": (own("skip;", block="lower o1 into w { destruct { partition w into q "
                                      "by 4 { split(2, 2) { group 2 { q[0] = 5; } } "
                                      "{ skip; } } } }"),
                   [5, 5, 0, 0, 5, 5, 0, 0]),
    # claim keeps the whole array: c has 4 elements, so `partition c by 2` gives
    # claimant p the piece starting at 2p (S-Partition: chunk = len div c).
    "claim": (own("skip;", block="lower o1 into w { destruct { claim w into c at 2 { "
                                 "partition c into q by 2 { group 2 { q[0] = 7; } } } "
                                 "} }"),
              [7, 0, 7, 0, 7, 0, 7, 0]),
    "memcpy_async": (own("alloc l : int[1] in Local; l[0] = i + 40; "
                         "async_partition o into a { async_memcpy(a, l); }"),
                     [40, 41, 42, 43, 40, 41, 42, 43]),
}


@pytest.mark.parametrize("name", sorted(CORPUS))
@pytest.mark.parametrize("schedule", ["rr", "random:7"])
def test_well_typed_programs_make_progress(name, schedule):
    src, expected = CORPUS[name]
    prog = parse_program(src, f"{name}.bundl")
    check_program(prog, "fixed")
    outcome = run_program(prog, schedule, max_steps=200_000, rules="fixed")
    assert outcome.kind == "terminated", (outcome.rule, outcome.message)
    assert outcome.globals["out"] == expected


HOLE_SHARED = ("machine blocks = 1, threads = 2;\nmain { destruct { destruct { group 2 "
               "{ alloc s : int[2] in Shared; skip; } } } }\n")


def test_the_shared_alloc_hole_is_real():
    prog = parse_program(HOLE_SHARED)
    check_program(prog, "paper")  # accepted as printed
    outcome = run_program(prog, "rr", rules="paper")
    assert outcome.kind == "stuck" and outcome.rule == "S-Alloc-Shared"


# An inner `let x` (an int) outlives its scope in η and replaces the outer Local array x
# (S-Decl writes η[x ↦ v]; memories are never popped): errata, "rebinding a name".
HOLE_REBIND = """machine blocks = 1, threads = 1;
global out : int[1];
main {
  lower out into ob { destruct { partition ob into o1 by 1 { group 1 {
    lower o1 into ot { destruct { partition ot into o by 1 { group 1 {
      alloc x : int[2] in Local;
      x[0] = 7;
      if true { let x : int @ thread[1] = 5; }
      o[0] = x[0];
    } } } }
  } } } }
}
"""


def test_the_rebinding_hole_is_real():
    prog = parse_program(HOLE_REBIND)
    check_program(prog, "paper")
    with pytest.raises(IllTyped) as info:
        check_program(prog, "fixed")
    assert (info.value.rule, info.value.prefix) == ("T-Decl", "redeclaration")
    outcome = run_program(prog, "rr", rules="paper")
    assert outcome.kind == "stuck" and outcome.rule == "E-Arr-Access"


@pytest.mark.parametrize(("body", "rule"), [("dec a;", "S-Sync-Dec"),
                                             ("free 8;", "S-Free")])
def test_the_runtime_form_holes_are_real(body, rule):
    # Found by running arbitrary syntax trees: a lone `dec` underflows Ψ, a source
    # `free` frees memory nobody allocated (errata, "runtime forms in source").
    prog = parse_program("machine blocks = 1, threads = 2;\nmain { destruct { "
                         f"destruct {{ {body} }} }} }}\n")
    check_program(prog, "paper")
    with pytest.raises(IllTyped) as info:
        check_program(prog, "fixed")
    assert info.value.prefix == "runtime form"
    outcome = run_program(prog, "rr", rules="paper")
    assert outcome.kind == "stuck" and outcome.rule == rule


def test_the_checker_judges_arbitrary_syntax():
    """Arbitrary syntax trees: each gets a verdict (accepted, ill-typed, bad input),
    never an exception of the checker; the accepted ones (about 1 in 600: this finds
    few) make progress. Not vacuous as a robustness test: most trees are non-trivial
    (two statements or more)."""
    judged = []

    @settings(max_examples=200, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(syntax_programs())
    def check(prog):
        try:
            errors = type_errors(prog, "fixed")
        except BadInput:
            errors = ["bad input"]
        judged.append(statement_count(prog.main) >= 2)
        if not errors:
            outcome = run_program(prog, "rr", max_steps=20_000, rules="fixed")
            assert outcome.kind != "stuck" or outcome.trap, (outcome.rule,
                                                              outcome.message)

    check()
    assert sum(judged) >= 100, (sum(judged), len(judged))


def test_accepted_variants_of_generated_programs_make_progress():
    """Lemma A.7 beyond the generator's own shapes: edits of generated programs (the
    counterexample reducer's: statements deleted, control hoisted, machines, arrays and
    globals shrunk, functions inlined or dropped, expressions simplified) that the
    fixed rules still accept never get stuck. Not vacuous: at least 300 accepted
    variants that are not the program they came from, and take a step."""
    from gpusem.fuzz.bundl.sample import draw
    from gpusem.fuzz.bundl.shrink_passes import PASSES, typechecks
    from gpusem.fuzz.bundl.strategies.programs import programs

    accepted = 0
    for prog in draw(programs(max_blocks=2, max_threads=8), 80, 5):
        for make, _ in PASSES:
            for variant in itertools.islice(make(prog), 3):
                if variant == prog or not typechecks(variant):
                    continue
                out = run_program(variant, "rr", max_steps=50_000)
                assert out.kind != "stuck" or out.trap, (out.rule, out.message)
                accepted += out.steps > 0
    assert accepted >= 300, accepted


def test_sibling_rebinding_passes_the_preservation_check():
    prog = parse_program("machine blocks = 1, threads = 2;\nglobal out : float[2];\n"
                         "main { if true { let x : int @ grid[1] = 1; } "
                         "let x : float @ grid[1] = 2.5; }\n")
    check_program(prog, "fixed")  # siblings, not nested: no redeclaration
    check = preservation.preservation_check(prog)
    outcome = run_program(prog, "rr", rules="fixed", check=check)
    assert outcome.kind == "terminated", outcome.message
