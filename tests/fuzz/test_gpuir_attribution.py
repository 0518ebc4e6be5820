"""Attribution of gpuir findings (issue 23: every cuda finding bundle carries its
attribution; toolchain item 5): a seqpar finding is re-run under the toolchain matrix
stage by stage (`fuzz/gpuir/attribute.py`). On the cpu path a seeded fault of our
GPU IR compiler is attributed `ours` by the cpu harness; with the fault off, the
kernel compiled now is not the finding's and nothing is blamed; a campaign's bundle
carries the same attribution.json."""

from __future__ import annotations

import json

from gpusem.fuzz.bundle import list_bundles
from gpusem.fuzz.campaign import Campaign
from gpusem.fuzz.gpuir.target import GpuirTarget


def test_a_seeded_fault_on_the_cpu_path_is_ours(monkeypatch):
    from gpusem.fuzz.gpuir.seqpar import generated_kernels

    monkeypatch.setenv("GPUSEM_FAULT", "gpuir-fence-dropped")
    target = GpuirTarget("cpu")
    try:
        results = [target.check(k) for k in generated_kernels(8, 3)]
        res = next(r for r in results if r.status == "finding")
        blame = target.attribute(res, "seqpar")
        assert blame is not None
        assert (blame["verdict"], blame["rule"]) == ("ours", "cpu-harness")
        assert blame["failing_config"] == "cpu"
        assert [o["status"] for o in blame["matrix"]["cpu"]].count("wrong") >= 1
        monkeypatch.delenv("GPUSEM_FAULT")
        off = target.attribute(res, "seqpar")
        assert (off["verdict"], off["rule"]) == ("environment", "platform-limit")
        assert target.attribute(res, "ptx") is None
    finally:
        target.close()


def test_a_campaign_bundle_carries_the_attribution(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSEM_FAULT", "gpuir-fence-dropped")
    summary = Campaign("gpuir", prop="seqpar", budget_s=40, seed=3,
                       out_dir=str(tmp_path), round_size=8, max_programs=16).run()
    assert summary.findings, "the dropped fence makes no generated kernel disagree"
    bundles = list_bundles(tmp_path)
    blames = [json.loads(b.files["attribution.json"]) for b in bundles]
    assert blames and all(b["verdict"] == "ours" for b in blames)
    assert all(f.attribution == "ours" for f in summary.findings)
