"""`typing_rules/bundl/derivation`: the derivation tree, rule by rule, as the appendix
would draw it (rule names, code perspectives, synthesised m, failures)."""

from __future__ import annotations

from gpusem.calculus.bundl.parser import parse_program
from gpusem.typing_rules.bundl.derivation import derivation, format_derivation

SRC = """machine blocks = 2, threads = 4;
global out : int[8];
main {
  destruct {
    group 2 {
      alloc s : int[4] in Shared;
      s[0] = 1;
    }
  }
}
"""


def shape(steps):
    return [(st.depth, st.rule, str(st.persp), st.m) for st in steps]


def test_derivation_of_a_well_typed_program():
    steps = derivation(parse_program(SRC))["main"]
    # T-Destruct at grid[1] -> block[2]; T-Group 2 -> block[1]; 16 bytes of Shared.
    assert shape(steps) == [
        (0, "T-Destruct", "grid[1]", 16),
        (1, "T-Group", "block[2]", 16),
        (2, "T-Alloc-Shared", "block[1]", 16),
        (3, "T-Arr-Assn-Shared", "block[1]", 0),
    ]


def test_failed_rule_is_marked_and_its_siblings_still_derived():
    bad = SRC.replace("s[0] = 1;", "s[0] = 1.5;\n      s[1] = 2;")
    steps = derivation(parse_program(bad))["main"]
    assert shape(steps)[3:] == [
        (3, "T-Seq", "block[1]", 0),
        (4, "T-Arr-Assn-Shared", "block[1]", None),  # stores a float into int[]
        (4, "T-Arr-Assn-Shared", "block[1]", 0),
    ]
    text = format_derivation({"main": steps}).splitlines()
    assert "failed" in text[5] and "failed" not in text[6]


def test_a_failed_head_leaves_no_body_derivation():
    # group 3 of block[2]: the body's perspective is undefined, so it is not derived.
    steps = derivation(parse_program(SRC.replace("group 2", "group 3")))["main"]
    assert shape(steps) == [(0, "T-Destruct", "grid[1]", 0),
                            (1, "T-Group", "block[2]", None)]


def test_derivation_lists_functions_then_main():
    src = SRC.replace("main {", "fn f() at thread[1] uses 0 { skip; }\nmain {")
    result = derivation(parse_program(src))
    assert list(result) == ["f", "main"]
    assert shape(result["f"]) == [(0, "T-Skip", "thread[1]", 0)]


def test_derivation_applies_the_source_program_checks():
    # the same judgment as check_program: a source `free 4` is a failed T-Free
    steps = derivation(parse_program(SRC.replace("s[0] = 1;", "free 4;")))["main"]
    assert shape(steps)[-1] == (3, "T-Free", "block[1]", None)
