"""The counterexample bundles committed under `results/` still reproduce on the cpu
backend: each seeded fault's shrunk kernel (`faults/bundles_cpu/`, replayed with its
fault on again) and each `--rules paper` soundness failure (`soundness/paper_bundles/`). A
change to the compiler, the harness or the interpreter that silently stops one of them
from showing its failure fails here."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from gpusem.cli.main import cli

RESULTS = Path(__file__).resolve().parents[2] / "results"
BUNDLES = sorted(p.parent for p in (RESULTS / "faults" / "bundles_cpu").glob("*/*/bundle.json"))
BUNDLES += sorted(p.parent for p in (RESULTS / "soundness" / "paper_bundles").glob("*/bundle.json"))


def test_there_are_bundles_to_replay():
    from gpusem.compiler.bundl_cuda.faults import FAULTS

    # one per seeded fault of the Bundl compiler (the 15 of issue 5, the 2 of issue 14)
    assert {b.parent.name for b in BUNDLES if b.parent.parent.name == "bundles_cpu"} == set(FAULTS)
    assert len([b for b in BUNDLES if b.parent.name == "paper_bundles"]) >= 5


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda b: f"{b.parent.name}/{b.name}")
def test_committed_bundle_reproduces(bundle, monkeypatch):
    monkeypatch.setenv("GPUSEM_FAULT", "")  # replay sets the bundle's; undone after
    res = CliRunner().invoke(cli, ["replay", str(bundle)])
    assert res.exit_code == 1, res.output  # 1: still reproduces (git bisect's "bad")
    assert res.output.startswith("reproduces: ")
