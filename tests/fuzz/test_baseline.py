"""Baselines and corpora (issue 32.7): a CI run where every finding is already known
(an earlier JSON report, a folder of bundles) passes, a new one fails; a stored corpus
of bundles is replayed first (the regression mode), each bundle reported as still
failing, fixed or cannot test. On the toy target (known bugs) and end to end on the
cpu backend with the committed bundles of the Bundl compiler's seeded faults."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from gpusem.cli.main import cli
from gpusem.fuzz.baseline import Known, load_baseline
from gpusem.fuzz.targets import CheckResult

from tests.fuzz.test_campaign import ToyTarget
from tests.fuzz.test_reports import REPORT_SCHEMA, validate

ROOT = Path(__file__).resolve().parents[2]
FAULTS = ROOT / "results" / "faults" / "bundles_cpu"


class Long0Fixed(ToyTarget):
    """The toy compiler with its `long0` crash fixed (`big7` still there)."""

    def _verdict(self, xs: list[int]) -> CheckResult:
        res = super()._verdict(xs)
        return CheckResult("pass") if res.signature == "crash:long0" else res


def fuzz(*args: str):
    return CliRunner().invoke(cli, ["fuzz", "--target", "toy", "--max-programs", "300",
                                    *args])


@pytest.fixture(scope="module")
def first(tmp_path_factory) -> Path:
    """A campaign that found both toy bugs: its folder and its JSON report."""
    tmp = tmp_path_factory.mktemp("first")
    res = fuzz("--out", str(tmp / "out"), "--json", str(tmp / "r.json"))
    assert res.exit_code == 1, res.output
    assert {f["signature"] for f in json.loads((tmp / "r.json").read_text())[
        "findings"]} == {"crash:long0", "wrong:big7"}
    return tmp


@pytest.mark.parametrize("which", ["report", "bundles"])
def test_known_findings_pass_and_say_so_in_every_report(first, tmp_path, which):
    base = first / "r.json" if which == "report" else first / "out"
    res = fuzz("--seed", "5", "--out", str(tmp_path / "o"), "--baseline", str(base),
               "--json", str(tmp_path / "r.json"), "--sarif", str(tmp_path / "r.sarif"),
               "--junit", str(tmp_path / "r.xml"))
    assert res.exit_code == 0, res.output  # every finding is known: the run passes
    assert f"baseline {base}: 2 known (pass), 0 not in it" in res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    validate(doc, REPORT_SCHEMA)
    assert doc["exit_code"] == 0 and doc["counts"]["known_findings"] == 2
    assert all(f["known"] for f in doc["findings"])
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    assert {r["baselineState"] for r in sarif["runs"][0]["results"]} == {"unchanged"}
    junit = ET.parse(tmp_path / "r.xml").getroot()
    assert junit.get("failures") == "0" and junit.find(".//failure") is None


def test_a_finding_not_in_the_baseline_fails(first, tmp_path):
    known = tmp_path / "known"
    (big7,) = [p for p in (first / "out").iterdir() if p.name.startswith("toy-wrong")]
    shutil.copytree(big7, known / big7.name)  # a committed gpusem-known/ of one bundle
    res = fuzz("--seed", "5", "--out", str(tmp_path / "o"), "--baseline", str(known),
               "--sarif", str(tmp_path / "r.sarif"))
    assert res.exit_code == 1, res.output
    assert "1 known (pass), 1 not in it" in res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith(("wrong", "crash"))]
    assert [ln.endswith("in the baseline") for ln in sorted(lines)] == [False, True]
    states = {r["partialFingerprints"]["gpusemSignature/v1"]: r["baselineState"]
              for r in json.loads((tmp_path / "r.sarif").read_text())["runs"][0][
                  "results"]}
    assert states == {"crash:long0": "new", "wrong:big7": "unchanged"}


def test_the_same_symptom_blamed_elsewhere_is_not_known():
    from gpusem.fuzz.baseline import Baseline

    b = Baseline("x", (Known("compile:disagree", "nvvm"), Known("wrong:big7")))
    assert b.match("compile:disagree", "nvvm") is not None
    assert b.match("compile:disagree:out:int", "") is not None  # refines, no verdict
    assert b.match("compile:disagree", "ours") is None  # another cause
    assert b.match("wrong:big7", "ours") is not None
    assert b.match("wrong:other", "") is None


@pytest.mark.parametrize(("make", "says"), [
    (lambda p: p / "nothing-here", "baseline not found: "),
    (lambda p: (p / "x.json", p.joinpath("x.json").write_text("{}"))[0],
     "not a gpusem campaign report"),
    (lambda p: (p / "x.json", p.joinpath("x.json").write_text("[1,"))[0],
     "not a JSON report"),
])
def test_a_bad_baseline_is_bad_input(tmp_path, make, says):
    from gpusem.api import BadInput

    with pytest.raises(BadInput, match=says):
        load_baseline(make(tmp_path))
    res = fuzz("--out", str(tmp_path / "o"), "--baseline", str(make(tmp_path)))
    assert isinstance(res.exception, BadInput) and says in str(res.exception)


def test_the_regression_mode_replays_the_corpus_first(first, tmp_path, monkeypatch):
    """--corpus: the stored bundles first; a still failing one is a finding of this
    campaign (exit 1 unless the baseline knows it), a fixed one is reported."""
    from gpusem.fuzz.targets import RUNTIME_TARGETS

    monkeypatch.setitem(RUNTIME_TARGETS, "toy", Long0Fixed)  # the compiler, fixed
    res = CliRunner().invoke(cli, [
        "fuzz", "--target", "toy", "--max-programs", "5", "--out",
        str(tmp_path / "o"), "--corpus", str(first / "out"), "--json",
        str(tmp_path / "r.json")])
    assert res.exit_code == 1, res.output
    assert "corpus: 2 bundles replayed: 1 still failing, 1 fixed, 0 cannot test" in (
        res.output)
    doc = json.loads((tmp_path / "r.json").read_text())
    validate(doc, REPORT_SCHEMA)
    verdicts = {r["signature"]: r["verdict"] for r in doc["corpus"]}
    assert verdicts == {"crash:long0": "fixed", "wrong:big7": "reproduces"}
    assert "wrong:big7" in {f["signature"] for f in doc["findings"]}
    res = CliRunner().invoke(cli, [
        "fuzz", "--target", "toy", "--max-programs", "5", "--out",
        str(tmp_path / "o2"), "--corpus", str(first / "out"), "--baseline",
        str(first / "out")])
    assert res.exit_code == 0, res.output  # still failing, but known


def test_replay_of_a_corpus(first, tmp_path):
    runner = CliRunner()
    res = runner.invoke(cli, ["replay", str(first / "out")])
    assert res.exit_code == 1, res.output
    assert "2 bundles: 2 still failing (2 not in a baseline), 0 fixed, 0 cannot test" in (
        res.output)
    res = runner.invoke(cli, ["replay", str(first / "out"), "--baseline",
                              str(first / "r.json")])
    assert res.exit_code == 0, res.output
    assert res.output.count("still-failing (in the baseline)") == 2
    (tmp_path / "empty").mkdir()
    assert runner.invoke(cli, ["replay", str(tmp_path / "empty")]).exit_code == 4


def test_end_to_end_on_the_cpu_backend_with_the_committed_fault_bundles(
        tmp_path, monkeypatch):
    """The Bundl compiler's seeded-fault bundles as a corpus on the cpu backend: each
    replays with its own fault (and only its own: the replay of one does not leave
    its fault on for the next, nor for the campaign after), still failing; as the
    baseline too, a campaign of the fault-free compiler passes."""
    monkeypatch.delenv("GPUSEM_FAULT", raising=False)
    corpus = tmp_path / "corpus"
    for name in ("floor-division", "group-modulus"):
        shutil.copytree(FAULTS / name, corpus / name)
    n = len(list(corpus.rglob("bundle.json")))
    res = CliRunner().invoke(cli, ["replay", str(corpus)])
    assert res.exit_code == 1, res.output
    assert res.output.count("still-failing\t") == n >= 2, res.output
    assert "(" not in res.output.split("\n")[0]  # no "cannot test" reason
    res = CliRunner().invoke(cli, [
        "fuzz", "--target", "bundl", "--max-programs", "20", "--round-size", "10",
        "--out", str(tmp_path / "o"), "--corpus", str(corpus), "--baseline",
        str(corpus), "--json", str(tmp_path / "r.json")])
    doc = json.loads((tmp_path / "r.json").read_text())
    assert res.exit_code == 0, res.output
    assert [r["verdict"] for r in doc["corpus"]] == ["reproduces"] * n
    assert all(r["known"] for r in doc["corpus"])
    assert doc["counts"]["compared"] > 0  # and then the campaign ran, fault-free:
    assert {f["signature"] for f in doc["findings"]} == {
        r["signature"] for r in doc["corpus"]}  # nothing new
