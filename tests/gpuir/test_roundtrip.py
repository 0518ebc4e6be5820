"""Print/parse property (DESIGN.md): printing a GPU IR tree and parsing the text gives
back the same tree, for generated trees covering every production and for every
example program."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.calculus.gpuir.printer import print_module
from gpusem.calculus.gpuir.walk import walk
from hypothesis import HealthCheck, given, settings

from .strategies import modules

EXAMPLES = sorted((Path(__file__).parents[2] / "examples" / "gpuir").glob("*.gpuir"))
CONFORMANCE = [p for p in sorted((Path(__file__).parent / "conformance").glob("*.gpuir"))
               if "# expect: badinput" not in p.read_text()]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_print_then_parse_is_identity(m: A.Module) -> None:
    text = print_module(m)
    assert parse_module(text) == m, text


@pytest.mark.parametrize("path", EXAMPLES + CONFORMANCE, ids=lambda p: p.name)
def test_examples_round_trip(path: Path) -> None:
    m = parse_module(path.read_text(), str(path))
    text = print_module(m)
    again = parse_module(text)
    assert again == m
    assert print_module(again) == text  # printing is a fixed point too


def test_every_statement_form_is_generated() -> None:
    """The generator reaches every Stmt class (so the property covers the grammar).

    Note: collected by a plain @given run; `hypothesis.find` with a predicate that
    accumulates state replayed inconsistently (FlakyFailure) in a full run."""
    from hypothesis import HealthCheck, given

    seen: set[type] = set()

    @settings(max_examples=400, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(modules())
    def collect(m: A.Module) -> None:
        for p in m.procs:
            seen.update(type(s) for s in walk(p.body))

    collect()
    assert seen >= set(A.Stmt.__args__), set(A.Stmt.__args__) - seen
