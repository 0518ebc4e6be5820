"""Programs not compared, by reason (issue 31.6: what share of a campaign was
differentially tested, and why the rest was not): the result's `kind` of every
invalid or not-runnable program counted by the campaign, summed over shards and
`--resume`d segments, in the JSON report (its schema) and the text summary; and the
GPU IR target's reasons (`fuzz/gpuir/seqpar.not_compared_reason`), which tell the
generator's host epilogues, CheckBarrier's unawaited Arrive (no run can show it) and
races the backend did not witness apart."""

from __future__ import annotations

from dataclasses import replace

import jsonschema
import pytest

from gpusem.fuzz.campaign import Campaign
from gpusem.fuzz.reports import Report
from gpusem.fuzz.summary import Summary
from gpusem.fuzz.targets import CheckResult, register_target
from tests.fuzz.test_campaign import ToyTarget
from tests.fuzz.test_reports import REPORT_SCHEMA, validate


class ReasonToy(ToyTarget):
    """The toy whose invalid programs (those starting with 13 or 14) give their first
    number as the reason, and whose programs starting with 15 are not runnable."""

    def check(self, program, prop="compile") -> CheckResult:
        res = super().check(program, prop)
        xs = list(program)
        if res.status == "invalid":
            return replace(res, kind=f"starts with {xs[0]}")
        if xs[:1] == [15]:
            return CheckResult("skip", kind="not here")
        return res


register_target("reasontoy", ReasonToy)


def run(tmp_path, name: str, **kw) -> Summary:
    args = {"target_name": "reasontoy", "budget_s": 120, "seed": 3,
            "out_dir": str(tmp_path / name), "max_programs": 200, "round_size": 25} | kw
    return Campaign(**args).run()


CAMPAIGN = {"target": "reasontoy", "backend": "cpu", "properties": ["compile"],
            "seed": 3, "shard": [0, 1], "jobs": 1, "round_size": 25, "budget_s": 120,
            "max_programs": 200, "out_dir": "x", "resumed": False}


def test_not_compared_programs_are_counted_by_reason(tmp_path) -> None:
    s = run(tmp_path, "whole")
    per = s.not_compared["compile"]
    assert set(per) <= {"starts with 13", "starts with 14", "not here"}
    assert per.get("starts with 13", 0) and per.get("not here", 0)
    assert sum(per.values()) == s.invalid + s.skipped == s.programs - s.compared
    assert per.get("not here", 0) == s.skipped


def test_the_report_states_each_reasons_share(tmp_path) -> None:
    s = run(tmp_path, "report")
    doc = Report(s, CAMPAIGN).as_json()
    row = doc["not_compared"]["compile"]
    assert row["programs"] == s.programs
    assert abs(row["compared_share"] - s.compared / s.programs) < 1e-3
    for why, r in row["by_reason"].items():
        assert r["programs"] == s.not_compared["compile"][why]
        assert abs(r["share"] - r["programs"] / s.programs) < 1e-3
    assert list(row["by_reason"]) == sorted(
        row["by_reason"], key=lambda w: -row["by_reason"][w]["programs"])
    text = Report(s, doc["campaign"]).as_text()
    assert f"compile: {100 * s.compared / s.programs:.1f}% of {s.programs:,}" in text
    assert all(why in text for why in row["by_reason"])


def test_report_validates_against_its_schema(tmp_path) -> None:
    s = run(tmp_path, "schema")
    doc = Report(s, CAMPAIGN).as_json()
    validate(doc, REPORT_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):  # a share is a fraction
        bad = {"compile": doc["not_compared"]["compile"] | {"compared_share": 1.5}}
        validate(doc | {"not_compared": bad}, REPORT_SCHEMA)


def test_shards_and_resumed_segments_add_up(tmp_path) -> None:
    whole = run(tmp_path, "whole")
    run(tmp_path, "resumed", max_programs=100)
    rest = run(tmp_path, "resumed", max_programs=200, resume=True)
    assert rest.not_compared == whole.not_compared
    a, b = run(tmp_path, "s0", shard=(0, 2), max_programs=100), \
        run(tmp_path, "s1", shard=(1, 2), max_programs=100)
    merged = Summary()
    merged.merge(a)
    merged.merge(b)
    for why in set(a.not_compared["compile"]) | set(b.not_compared["compile"]):
        assert merged.not_compared["compile"][why] == (
            a.not_compared["compile"].get(why, 0) + b.not_compared["compile"].get(why, 0))


# ---------------------------------------------------------------- the GPU IR target


def _own(sync: str):
    """A phase whose threads read their own cells: no data race."""
    from gpusem.fuzz.gpuir.strategies import Phase

    return Phase(1, 0, True, False, "+", sync)


def test_gpuir_reasons_name_an_unawaited_arrive_and_compare_host_code() -> None:
    """Before issue 31.6's table the first read `false-positive`; the second was
    `unsupported` before compiler/gpuir_cuda/host.py and is compared now."""
    from gpusem.fuzz.gpuir import seqpar
    from gpusem.fuzz.gpuir.strategies import Kernel
    from gpusem.fuzz.gpuir.target import GpuirTarget

    arrive = Kernel(32, 1, (_own("arrive-only"), _own("cta")))
    host = Kernel(32, 1, (_own("cta"),), host=True, host_sync=True)
    target = GpuirTarget("cpu")
    try:
        got = {name: target.check(k) for name, k in
               (("arrive", arrive), ("host", host))}
    finally:
        target.close()
    assert got["arrive"].status == "invalid"
    assert got["arrive"].kind == seqpar.UNAWAITED
    assert got["host"].status == "pass", got["host"]


def test_gpuir_an_unwitnessed_race_is_the_backends() -> None:
    """A rejected program no run showed different: on cuda the GPU's own schedule
    (the seeds steer nothing there), on cpu the harness's schedules; CheckBarrier's
    unawaited Arrive on either (no memory changes)."""
    from gpusem.compiler.gpuir_cuda.run import Verdict
    from gpusem.fuzz.gpuir import seqpar

    race = seqpar.Outcome("r", "rejected", "race: CheckRead at r.gpuir:9:17: ...",
                          Verdict("agree", "6 schedule(s), 64 cells"))
    arrive = replace(race, reason="barrier mismatch: CheckBarrier at r.gpuir:5:13: "
                                  "bar has 1 arrive(s) but 0 await(s)")
    assert race.classification == arrive.classification == "false-positive"
    assert seqpar.not_compared_reason(race, "cuda") == seqpar.ONE_GPU_SCHEDULE
    assert seqpar.not_compared_reason(race, "cpu") == seqpar.HARNESS_SCHEDULES
    assert {seqpar.not_compared_reason(arrive, b) for b in ("cpu", "cuda")} == {
        seqpar.UNAWAITED}
    other = seqpar.Outcome("u", "accepted", "", Verdict(
        "unsupported", "unsupported: bulk async-group wait has no CPU meaning (x)"))
    assert seqpar.not_compared_reason(other, "cpu") == (
        "unsupported: bulk async-group wait has no CPU meaning")
    host = replace(other, verdict=Verdict(
        "unsupported", "unsupported: CPU code outside a CudaDeviceFunction"))
    assert seqpar.not_compared_reason(host, "cuda") == seqpar.HOST_CODE


def test_a_cluster_pieces_record_keeps_its_reasons(tmp_path) -> None:
    """A Dask piece's record (what a resumed cluster campaign reads back)."""
    from gpusem.fuzz.engines import pieces

    s = run(tmp_path, "piece", max_programs=100)
    piece = pieces.Piece({"prop": "compile"}, (0, 1), (0, 4))
    pieces.record(tmp_path / "d", pieces.PieceResult(piece, s, []), [])
    _, restored = pieces.finished(tmp_path / "d", "compile", (0, 1))
    assert restored.not_compared == s.not_compared and s.not_compared["compile"]
