"""A campaign's JUnit XML (issue 32.4): one test case per property (its counts), one
failing test case per cause (`summary.causes`: a finding is its own cause unless its
attribution says it shares one; the failure lists every signature), one error per
shard that died.

Built with `xml.etree.ElementTree`, never by string concatenation, so quoting is the
library's; and every text first goes through `xml_text`, because XML 1.0 has no
escape at all for most control characters: a compiler message that carries ANSI
colours (ESC, U+001B) made the hand-built file unreadable to every JUnit consumer.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from gpusem.fuzz.summary import Summary, causes

# The characters XML 1.0 forbids in a document (its `Char` production, section 2.2):
# C0 controls except tab, newline and carriage return; the surrogates; U+FFFE/U+FFFF.
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """`text` with each character XML 1.0 cannot carry written as `\\xNN` / `\\uNNNN`
    (visible, so a reader still sees that an escape sequence was there)."""
    return _ILLEGAL.sub(lambda m: ascii(m.group())[1:-1], text)


def junit_xml(summary: Summary, target: str) -> str:
    """The report as a JUnit XML document (UTF-8, with its declaration)."""
    s = summary
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", name="gpusem fuzz")
    n_cases = 0
    for p in sorted(set(s.outcomes) | {f.prop for f in s.findings}):
        n = s.outcomes.get(p, {})
        case = _case(suite, f"{target}:{p}", s.seconds)
        ET.SubElement(case, "system-out").text = xml_text(
            f"{sum(n.values())} programs: "
            + ", ".join(f"{k} {v}" for k, v in sorted(n.items())))
        n_cases += 1
    grouped = causes(s.findings)
    failing = 0
    for c in grouped:  # one case per cause, its signatures listed
        f = c.findings[0]
        name = (f"{target}:{f.prop}:{f.signature}" if len(c.findings) == 1
                else f"{target}:cause:{c.key}")
        case = _case(suite, name, sum(g.shrink_s for g in c.findings))
        blame = f"attribution: {f.attribution}\n" if f.attribution else ""
        more = "".join(f"signature: {g.signature}\nbundle: {g.bundle}\n"
                       for g in c.findings[1:])
        text = xml_text(f"signature: {f.signature}\nbundle: {f.bundle}\n"
                        f"{more}cause: {c.key}\n{blame}"
                        f"replay: gpusem replay {f.bundle}")
        n_cases += 1
        if all(g.known for g in c.findings):  # in the baseline: passes, and says so
            ET.SubElement(case, "system-out").text = "known (in the baseline)\n" + text
            continue
        failure = ET.SubElement(case, "failure", type=xml_text(f.kind),
                                message=xml_text(f.detail))
        failure.text = text
        failing += 1
    for line in s.failed:
        ET.SubElement(_case(suite, "shard", 0.0), "error", message=xml_text(line))
        n_cases += 1
    head = {"tests": str(n_cases), "failures": str(failing),
            "errors": str(len(s.failed)), "time": f"{s.seconds:.3f}"}
    root.attrib.update(head)
    suite.attrib.update(head)
    ET.indent(root)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + ET.tostring(root, encoding="unicode") + "\n")


def _case(suite: ET.Element, name: str, seconds: float) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname="gpusem.fuzz",
                         name=xml_text(name), time=f"{seconds:.3f}")
