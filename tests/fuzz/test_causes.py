"""Cause-level grouping (issue 23, toolchain item 3): findings whose attribution names
the same verdict and check are one cause (`attribution.cause_of`); the JSON report
lists causes, SARIF has one result and JUnit one failure per cause, each listing its
signatures; a finding without such evidence stays a cause of its own."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from gpusem.fuzz.attribution import cause_of
from gpusem.fuzz.reports import Report
from gpusem.fuzz.summary import Finding, Summary, causes

T2_BLAME = {"verdict": "ptxas", "rule": "ptxas-O0", "static_check": [],
            "sass_check": [{"check": "viaddmnmx-negated-constant", "text": "..."}]}
T1_BLAME = {"verdict": "nvvm", "rule": "static-ptx",
            "static_check": [{"check": "ld.nc-read-only", "line": 40}]}


def _finding(sig: str, blame: dict | None, prop: str = "compile") -> Finding:
    return Finding(sig, "ckernel mismatch", "wrong cell", 5, f"/b/{sig}", True, 1.0,
                   prop=prop, target="ckernel",
                   attribution=(blame or {}).get("verdict", ""),
                   cause=cause_of(blame, sig) if blame else "")


def test_cause_of_names_the_verdict_and_the_check():
    assert cause_of(T2_BLAME, "compile:x") == "ptxas:viaddmnmx-negated-constant"
    assert cause_of(T1_BLAME, "compile:y") == "nvvm:ld.nc-read-only"
    # no check that explains it: no evidence two findings are one cause
    assert cause_of({"verdict": "ours", "rule": "harness-same"}, "compile:z") \
        == "compile:z"
    assert cause_of(None, "compile:z") == "compile:z"


def _summary() -> Summary:
    s = Summary(programs=10)
    s.findings = [_finding("compile-ckernel-mismatch-2c12909321", T2_BLAME),
                  _finding("emi-ckernel-mismatch-46671d2b2a", T2_BLAME, "emi"),
                  _finding("compile:ours", {"verdict": "ours", "rule": "cpu-harness"})]
    return s


def test_two_signatures_of_t2_are_one_cause_in_every_report():
    report = Report(_summary(), {"target": "ckernel"})
    grouped = causes(report.summary.findings)
    assert [c.key for c in grouped] == ["ptxas:viaddmnmx-negated-constant",
                                        "compile:ours"]
    data = report.as_json()
    assert [len(c["signatures"]) for c in data["causes"]] == [2, 1]
    assert {f["cause"] for f in data["findings"]} == {
        "ptxas:viaddmnmx-negated-constant", "compile:ours"}
    results = report.as_sarif()["runs"][0]["results"]
    assert len(results) == 2
    first = results[0]
    assert first["partialFingerprints"]["gpusemCause/v1"] \
        == "ptxas:viaddmnmx-negated-constant"
    assert first["properties"]["signatures"] == [
        "compile-ckernel-mismatch-2c12909321", "emi-ckernel-mismatch-46671d2b2a"]
    root = ET.fromstring(report.as_junit().split("\n", 1)[1])
    failures = root.findall(".//failure")
    assert len(failures) == 2 and root.get("failures") == "2"
    assert "emi-ckernel-mismatch-46671d2b2a" in failures[0].text
    assert "cause ptxas:viaddmnmx-negated-constant: 2 signatures" in report.as_text()
    json.dumps(data)  # serialisable


def test_findings_without_evidence_are_reported_as_before():
    s = Summary(programs=3)
    s.findings = [_finding("a", None), _finding("b", None)]
    report = Report(s, {"target": "bundl"})
    assert len(report.as_sarif()["runs"][0]["results"]) == 2
    assert [c.signatures for c in causes(s.findings)] == [["a"], ["b"]]
    assert "cause " not in report.as_text()
