"""The seeded faults of Prism's Sec. 5 barrier placement (`--sync prism`): a short cpu
campaign of the `prism` target's prism-sync property finds each (issue 28: the
generator's blind spot). Before the exchange shapes of fuzz/prism/strategies.py no
generated surface program could show them: the elaboration gives every partition
reached across a level a destruct of its own, whose barrier is placed at the end of
that list whatever rules 1 and 2 say."""

import json

import pytest
from gpusem.compiler.bundl_cuda.faults import FAULTS
from gpusem.fuzz.campaign import Campaign

PRISM_FAULTS = sorted(f for f in FAULTS if f.startswith("prism-drop-rule-"))


def test_both_rules_have_a_fault():
    assert PRISM_FAULTS == ["prism-drop-rule-1", "prism-drop-rule-2"]


@pytest.mark.parametrize("fault", PRISM_FAULTS)
def test_a_short_cpu_campaign_finds_the_fault(fault, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSEM_FAULT", fault)
    monkeypatch.setenv("GPUSEM_SHRINK_S", "5")
    summary = Campaign("prism", prop="prism-sync", budget_s=60, max_programs=40,
                       seed=1, out_dir=str(tmp_path), round_size=10).run()
    assert summary.findings, f"{fault} went unnoticed in {summary.programs} programs"
    bundles = [json.loads(p.read_text()) for p in tmp_path.glob("*/bundle.json")]
    first = min(bundles, key=lambda b: b["found_after_s"])
    assert first["signature"] == "prism:prism-sync:disagree"
    assert first["fault"] == fault
    assert first["size"] <= first["size_before"]
    print(f"{fault}: found after {first['found_after_s']} s in "
          f"{summary.programs} programs")
