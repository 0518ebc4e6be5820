"""JUnit XML stays well-formed whatever a finding's text holds (issue 32.4): a
compiler's ANSI colours, other C0 controls, markup characters, quotes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gpusem.fuzz.junit import xml_text
from gpusem.fuzz.reports import Report
from gpusem.fuzz.summary import Finding, Summary

ANSI = "\x1b[31merror\x1b[0m: <bad> & \"quoted\" 'x'\x00\x07\x0b tail\ttab"


def report(detail: str) -> Report:
    s = Summary(programs=3, seconds=1.5, failed=[f"shard 1 died: {detail}"])
    s.count("compile", "pass", 2)
    s.count("compile", "finding", 1)
    s.findings = [Finding("wrong:\x1b[1mx", "wrong", detail, 4, "out/b\x1b1", True,
                          0.5, prop="compile", target="toy")]
    return Report(s, {"target": "toy\x1b"})


def test_control_characters_in_a_finding_leave_the_junit_readable() -> None:
    root = ET.fromstring(report(ANSI).as_junit().encode())
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == (
        "3", "1", "1")
    (failure,) = suite.findall("testcase/failure")
    # the escape stays visible (as \x1b), markup and quotes round-trip exactly
    assert failure.get("message") == (
        "\\x1b[31merror\\x1b[0m: <bad> & \"quoted\" 'x'\\x00\\x07\\x0b tail\ttab")
    assert "signature: wrong:\\x1b[1mx" in (failure.text or "")
    (error,) = suite.findall("testcase/error")
    assert (error.get("message") or "").startswith("shard 1 died: \\x1b[31m")
    out = suite.find("testcase/system-out")
    assert out is not None and out.text == (
        "3 programs: finding 1, invalid 0, pass 2, skip 0")


def test_every_illegal_xml_character_is_made_visible_and_legal_ones_kept() -> None:
    legal = "\t\n\r A~\x7f\u00e9\u2028\U0001f600"
    assert xml_text(legal) == legal
    for c in [*map(chr, [*range(9), 11, 12, *range(14, 32)]), "\ufffe", "\uffff"]:
        out = xml_text(f"a{c}b")
        assert out.startswith("a\\") and out.endswith("b") and c not in out
        ET.fromstring(f"<r a='{out}'>{out}</r>")  # parses
