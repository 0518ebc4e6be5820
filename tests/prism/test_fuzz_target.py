"""The prism fuzz target (fuzz/prism): generated surface programs elaborate,
type-check and compile; the elaboration property (surface reading = Bundl reading)
and the compile property hold on them, and the property has teeth (a seeded
mis-elaboration is found)."""

from __future__ import annotations

import collections

import pytest
from gpusem.calculus.prism import ast as S
from gpusem.calculus.prism import elaborate_expr
from gpusem.fuzz.bundl.sample import draw
from gpusem.fuzz.prism.strategies import EXCHANGE
from gpusem.fuzz.prism.target import PrismTarget
from gpusem.fuzz.targets import checked


def test_elaboration_holds_and_every_construct_is_reached():
    target = PrismTarget()
    seen: collections.Counter[str] = collections.Counter()
    for program in draw(target.strategy("elaboration"), 150, 5):
        result = checked(target, program, "elaboration")
        assert result.status == "pass", (result.signature, result.detail, program)
        seen.update(target.coverage(program))
    exchange = {f"prism:{c}" for c in EXCHANGE}  # drawn for the compiler properties
    assert [c for c in target.coverage_labels()
            if seen[c] == 0 and c not in exchange] == []
    assert [c for c in exchange if seen[c]] == []


def test_the_compiler_properties_reach_every_construct_with_the_exchange():
    target = PrismTarget()
    seen: collections.Counter[str] = collections.Counter()
    for program in draw(target.strategy("prism-sync"), 200, 5):
        seen.update(target.coverage(program))
    assert [c for c in target.coverage_labels() if seen[c] == 0] == []


@pytest.mark.parametrize("prop", ["compile", "prism-sync"])
def test_compile_properties_hold_on_cpu(prop):
    target = PrismTarget()
    exchanges = 0
    for program in draw(target.strategy(prop), 6, 9):
        result = checked(target, program, prop)
        assert result.status == "pass", (result.signature, result.detail, program)
        exchanges += "prism:shared" in target.coverage(program)
    assert exchanges > 0


def test_a_seeded_mis_elaboration_is_found(monkeypatch):
    real = elaborate_expr.expr

    def wrong(e, sc, want=None):  # `a - b` elaborated as `a + b`
        if isinstance(e, S.Bin) and e.op == "-":
            e = S.Bin("+", e.left, e.right, e.span)
        return real(e, sc, want)

    monkeypatch.setattr(elaborate_expr, "expr", wrong)
    import gpusem.calculus.prism.elaborate as elab

    monkeypatch.setattr(elab, "expr", wrong)
    target = PrismTarget()
    found = [checked(target, p, "elaboration") for p in
             draw(target.strategy("elaboration"), 150, 5)]
    assert any(r.signature == "prism:elaboration:differs" for r in found)


@pytest.mark.parametrize("text", ["@prism(\"global\")\n", "x = 1\n"])
def test_a_rejected_program_is_a_finding_with_its_rule(text):
    r = PrismTarget().check_text(text, "elaboration")
    assert r.status == "finding" and r.signature.startswith("prism:rejected:")
