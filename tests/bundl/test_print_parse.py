"""Property: pretty-printing then parsing is the identity on ASTs (DESIGN.md, the
print/parse oracle), on generated well-typed programs and on arbitrary syntax trees
(runtime forms, labels, extreme literals included)."""

from __future__ import annotations

from gpusem.calculus.bundl.parser import parse_expr, parse_program, parse_stmt
from gpusem.calculus.bundl.printer import print_expr, print_program, print_stmt
from gpusem.calculus.bundl.walk import is_canonical
from gpusem.fuzz.bundl.strategies.anything import EXPRS, STMTS, syntax_programs
from gpusem.fuzz.bundl.strategies.programs import programs
from hypothesis import HealthCheck, given, settings

FAST = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(programs())
def test_print_parse_identity_on_well_typed_programs(prog):
    assert is_canonical(prog.main)
    text = print_program(prog)
    again = parse_program(text)
    assert again == prog
    assert print_program(again) == text  # the printed form is a fixpoint


@FAST
@given(syntax_programs())
def test_print_parse_identity_on_any_program(prog):
    assert parse_program(print_program(prog)) == prog


@FAST
@given(STMTS)
def test_print_parse_identity_on_any_statement(stmt):
    assert is_canonical(stmt)
    assert parse_stmt(print_stmt(stmt)) == stmt


@FAST
@given(EXPRS)
def test_print_parse_identity_on_any_expression(expr):
    assert parse_expr(print_expr(expr)) == expr
