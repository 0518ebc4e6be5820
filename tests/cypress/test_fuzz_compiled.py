"""The `compiled` property of the cypress target (fuzz/cypress/compiled.py): a
mapping's warp-specialised IR lowered to GPU IR, accepted by AMIR's sync check, and
the kernel gpuir_cuda compiles from it, run on the cpu harness, = the Cypress
sequential reading; the seeded lowering faults found, each at the sync check.

The fault programs are tests/cypress/faults/ws-no-backward-war.cyp (a 2-deep pipeline
over 4 K tiles without a DMA warp) and the same with `warpspecialize=True`."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpusem.fuzz.bundl.sample import draw
from gpusem.fuzz.cypress.strategies import programs
from gpusem.fuzz.cypress.target import CypressTarget

HERE = Path(__file__).resolve().parent
PIPELINED = (HERE / "faults" / "ws-no-backward-war.cyp").read_text()
WS = PIPELINED.replace("pipeline=2)", "warpspecialize=True, pipeline=2)")


def test_generated_mappings_compile_and_agree_on_the_cpu_harness() -> None:
    target = CypressTarget(backend="cpu")
    verdicts = [target.check(p, "compiled") for p in draw(programs(), 6, seed=0)]
    assert [v.detail for v in verdicts if v.status != "pass"] == []


@pytest.mark.parametrize("program", [PIPELINED, WS], ids=["pipelined", "ws"])
@pytest.mark.parametrize("fault, rule", [
    ("cypress-lower-no-full-wait", "CheckMutates"),
    ("cypress-lower-stage", "CheckReads"),
])
def test_each_lowering_fault_is_found_by_the_sync_check(
        program: str, fault: str, rule: str, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    assert WS != PIPELINED
    target = CypressTarget(backend="cpu")
    assert target.check(program, "compiled").status == "pass"
    monkeypatch.setenv("GPUSEM_FAULT", fault)
    found = target.check(program, "compiled")
    assert (found.status, found.signature) == ("finding", "cypress:lower:sync")
    assert rule in found.detail
    assert "lowered.gpuir" in found.files
    monkeypatch.delenv("GPUSEM_FAULT")
    again = target.replay(found.files, {"fault": fault, "property": "compiled"})
    assert again.signature == "cypress:lower:sync"


@pytest.mark.parametrize("program, fault", [
    (PIPELINED, "gpuir-fence-dropped"), (WS, "gpuir-mbar-wait-dropped")],
    ids=["pipelined", "ws"])
def test_a_miscompilation_is_found_on_the_backend(
        program: str, fault: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run itself has teeth: gpuir_cuda's seeded faults (a Fence that is no
    barrier, an mbarrier wait that does not wait) pass the sync check, which reads
    the GPU IR, and show on the cpu harness only."""
    monkeypatch.setenv("GPUSEM_FAULT", fault)
    found = CypressTarget(backend="cpu").check(program, "compiled")
    assert (found.status, found.signature) == ("finding", "cypress:lower:compiled")
    assert found.detail.startswith(("disagree: ", "kernel-failed: "))


def test_an_ir_the_lowering_does_not_cover_is_invalid_not_a_finding(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusem.fuzz.cypress import compiled

    def refuse(*args: object) -> str:
        raise compiled.NotLowered("the test's reason")

    monkeypatch.setattr(compiled, "lower_gemm", refuse)
    verdict = CypressTarget(backend="cpu").check(PIPELINED, "compiled")
    assert (verdict.status, verdict.kind, verdict.detail) == (
        "invalid", "not-lowered", "not lowered: the test's reason")
