"""The `cypress` fuzz target (fuzz/cypress/): generated programs and mappings, the
passes property, the seeded faults found, replay from a bundle and from a seed.

tests/cypress/faults/*.cyp are the programs a 300-program campaign (seed 1) found
each fault with, as hypothesis shrank them (ws-*.cyp, the warp specialisation
faults: one program, a 2-deep pipeline over 4 K tiles, for both)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.fuzz.bundl.sample import draw
from gpusem.fuzz.cypress.strategies import programs
from gpusem.fuzz.cypress.target import CypressTarget

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("fault, signature", [
    ("drop-broadcast", "cypress:vectorize:race"),
    ("eager-spill", "cypress:copyelim:race"),
    ("alias-no-war", "cypress:allocate:race"),
    ("ws-no-backward-war", "cypress:warpspec:race"),
    ("ws-early-release", "cypress:warpspec:race"),
])
def test_each_seeded_fault_is_found_by_the_target(
        fault: str, signature: str, monkeypatch: pytest.MonkeyPatch) -> None:
    program = (HERE / "faults" / f"{fault}.cyp").read_text()
    target = CypressTarget()
    assert target.check(program).status == "pass"
    monkeypatch.setenv("GPUSEM_FAULT", f"cypress-{fault}")
    found = target.check(program)
    assert (found.status, found.signature) == ("finding", signature)
    assert found.detail.startswith("race: ")
    assert target.finding_meta(found) == {"fault": f"cypress-{fault}"}
    monkeypatch.delenv("GPUSEM_FAULT")
    # a bundle replays with its fault switched on again
    again = target.replay(found.files, {"fault": f"cypress-{fault}",
                                        "property": "passes"})
    assert again.signature == signature


def test_generated_mappings_pass_under_the_fixed_passes() -> None:
    target = CypressTarget()
    verdicts = [target.check(p) for p in draw(programs(), 12, seed=0)]
    assert [v for v in verdicts if v.status == "finding"] == []
    assert sum(v.status == "pass" for v in verdicts) >= 6


def test_an_illegal_mapping_is_invalid_with_its_rule() -> None:
    program = (HERE / "faults" / "eager-spill.cyp").read_text()
    bad = program.replace('variant="gemm_leaf", proc=', 'variant="gemm_leaf", '
                          'proc=', 1)
    lines = bad.splitlines()
    at = next(i for i, line in enumerate(lines) if 'instance="gemm_leaf"' in line)
    head, _, tail = lines[at].partition("mems=[")
    lines[at] = head + "mems=[NONE, " + tail.split(", ", 1)[1]
    verdict = CypressTarget().check("\n".join(lines) + "\n", "mapping")
    assert (verdict.status, verdict.kind) == ("invalid", "illegal:Mapping-None")


def test_a_seed_draws_the_same_programs() -> None:
    assert draw(programs(), 5, seed=7) == draw(programs(), 5, seed=7)
    assert draw(programs(), 5, seed=7) != draw(programs(), 5, seed=8)
