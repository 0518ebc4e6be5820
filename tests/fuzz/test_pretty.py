"""A failing hypothesis example prints the Bundl program's text, not an AST repr
(issue 18; fuzz/bundl/pretty.py)."""

from __future__ import annotations

import pytest
from gpusem import api, strategies
from gpusem.calculus.bundl.printer import print_program
from gpusem.fuzz.bundl.generated import Generated
from hypothesis import given, settings
from hypothesis.vendor.pretty import pretty

SOURCE = """machine blocks = 1, threads = 4;

global out : int[4];

main {
  out[0] = 7 / 2;
}
"""


def test_programs_pretty_print_as_text() -> None:
    prog = api.parse(SOURCE)
    assert pretty(prog) == print_program(prog).rstrip("\n")
    text = pretty(Generated(prog, race_free_by_construction=True))
    assert "out[0] = 7 / 2;" in text and "Program(" not in text


def test_a_falsifying_example_shows_the_program() -> None:
    @settings(max_examples=10, database=None, deadline=None)
    @given(strategies.bundl_programs(max_threads=2))
    def prop(program):
        raise AssertionError("always")

    with pytest.raises(AssertionError) as err:
        prop()
    notes = "\n".join(getattr(err.value, "__notes__", []))
    assert "machine blocks =" in notes and "Program(machine=" not in notes
