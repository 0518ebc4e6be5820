"""Programs compared per configuration (issue 23: how many programs each configuration
of the toolchain matrix checked): a verdict's `configs` counted by the campaign,
summed over `--resume`d segments, in the JSON report (its schema) and the text
summary; the round number a target is told (`begin_round`); and the Bundl
`toolchain` property on the cpu backend, whose nvcc-G builds only on every K-th
round (GPUSEM_TOOLCHAIN_G_EVERY)."""

from __future__ import annotations

from dataclasses import replace

from gpusem.fuzz.campaign import Campaign
from gpusem.fuzz.reports import Report
from gpusem.fuzz.targets import CheckResult, register_target

from tests.fuzz.test_campaign import ToyTarget
from tests.fuzz.test_reports import REPORT_SCHEMA, validate


class ConfigToy(ToyTarget):
    """The toy whose compared programs (pass or finding) are checked by configuration
    `a` always and by `b` on the shard's even rounds and outside rounds (as nvcc-G on
    every K-th round); `rounds` records what `begin_round` was told."""

    def __init__(self, backend: str = "cpu") -> None:
        super().__init__(backend)
        self.round: int | None = None
        self.rounds: list[int | None] = []

    def begin_round(self, index: int | None) -> None:
        self.round = index
        self.rounds.append(index)

    def check(self, program, prop="compile") -> CheckResult:
        res = super().check(program, prop)
        if res.status not in ("pass", "finding"):
            return res
        even = self.round is None or self.round % 2 == 0
        return replace(res, configs=("a", "b") if even else ("a",))


made: list[ConfigToy] = []
register_target("configtoy", lambda backend="cpu": made.append(ConfigToy()) or made[-1])


def run(tmp_path, name: str, **kw):
    args = {"target_name": "configtoy", "budget_s": 120, "seed": 7,
            "out_dir": str(tmp_path / name), "max_programs": 100, "round_size": 25} | kw
    return Campaign(**args).run()


def compared_in(tmp_path, rounds: list[int]) -> int:
    """The programs compared in these rounds alone (each a window of one round)."""
    return sum(run(tmp_path, f"w{k}", window=(k, k + 1), max_programs=None).compared
               for k in rounds)


def test_each_verdicts_configurations_are_counted(tmp_path) -> None:
    whole = run(tmp_path, "whole")
    per = whole.by_configuration["compile"]
    assert whole.programs == 100 and whole.invalid > 0  # some are not compared
    assert per["a"] == whole.compared  # every compared program, once
    assert per["b"] == compared_in(tmp_path, [0, 2]) < per["a"]  # its rounds only


def test_the_target_is_told_the_shards_round_numbers(tmp_path) -> None:
    made.clear()
    run(tmp_path, "shard", shard=(1, 3), max_programs=75)  # rounds 1, 4, 7
    rounds = made[0].rounds
    assert [k for k in rounds if k is not None] == [0, 1, 2]
    # a finding is shrunk after its round (inline here): in full, as no round's
    assert None in rounds and rounds.index(None) > 0


def test_resumed_segments_add_up(tmp_path) -> None:
    whole = run(tmp_path, "whole")
    run(tmp_path, "resumed", max_programs=50)
    rest = run(tmp_path, "resumed", max_programs=100, resume=True)
    assert rest.programs == 100
    assert rest.by_configuration == whole.by_configuration
    assert rest.by_configuration["compile"]["b"] < rest.by_configuration["compile"]["a"]


def test_the_reports_have_the_counts(tmp_path) -> None:
    summary = run(tmp_path, "report")
    report = Report(summary, {"target": "configtoy"})
    doc = report.as_json()
    assert doc["by_configuration"] == {"compile": summary.by_configuration["compile"]}
    per = doc["by_configuration"]["compile"]
    line = f"compile: programs compared per configuration: a {per['a']:,}, b {per['b']:,}"
    assert line in report.as_text().splitlines()


def test_the_schema_takes_the_counts_and_checks_them(tmp_path) -> None:
    import jsonschema
    import pytest

    summary = run(tmp_path, "schema", max_programs=25)
    doc = Report(summary, {"target": "configtoy", "backend": "cpu",
                           "properties": ["compile"], "seed": 7, "shard": [0, 1],
                           "jobs": 1, "round_size": 25, "budget_s": 120,
                           "max_programs": 25, "out_dir": "x",
                           "resumed": False}).as_json()
    validate(doc, REPORT_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        validate(doc | {"by_configuration": {"compile": {"a": -1}}}, REPORT_SCHEMA)


def test_a_property_without_configurations_reports_none(tmp_path) -> None:
    from tests.fuzz.test_campaign import campaign

    summary = campaign(tmp_path, max_programs=50).run()
    report = Report(summary, {"target": "toy"})
    assert summary.by_configuration == {} and report.as_json()["by_configuration"] == {}
    assert "per configuration" not in report.as_text()


def test_a_cpu_toolchain_campaign_counts_nvcc_g_on_its_rounds_only(tmp_path,
                                                                  monkeypatch) -> None:
    """The Bundl `toolchain` property on the cpu backend (nvcc installed: the host
    configurations are built), K = 2: nvcc-G builds the programs of rounds 0 and 2,
    the others every compared program."""
    monkeypatch.setenv("GPUSEM_TOOLCHAIN_G_EVERY", "2")
    monkeypatch.setenv("GPUSEM_SHRINK_S", "5")
    args = {"target_name": "bundl", "prop": "toolchain", "seed": 3, "round_size": 4}
    whole = run(tmp_path, "bundl", max_programs=16, **args)
    per = whole.by_configuration["toolchain"]
    assert whole.programs == 16 and not whole.findings
    assert per["cpu"] == per["nvcc-O3"] == per["ptxas-O0"] == whole.compared
    # the compared programs of rounds 0 and 2 alone, nvcc hidden (the harness only)
    monkeypatch.setenv("GPUSEM_NVCC", str(tmp_path / "no-nvcc"))
    alone = [run(tmp_path, f"r{k}", window=(k, k + 1), max_programs=None, **args)
             for k in (0, 2)]
    assert all(set(s.by_configuration["toolchain"]) == {"cpu"} for s in alone)
    assert per["nvcc-G"] == sum(s.compared for s in alone) < whole.compared
