"""Conformance programs for the AMIR machine (STYLE 19): every `programs/*.amir` states
its verdict in a header, derived from the rule it exercises (Figures 7, 21, 22 and
Appendix B as decided in interpreter/amir_*), not from this machine's output:

    # expect: accepted
    # expect: rejected <Check> <var>[<index>]     (the first failing check and cell)
    # expect: trap <rule>                         (a runtime error, not a verdict)
    # defines: N=4 M=2                            (control values, optional)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpusem.calculus.amir.parser import parse_file
from gpusem.calculus.errors import Trap
from gpusem.interpreter.amir.machine import check_amir

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.amir"))


def header(path: Path) -> tuple[str, str | None, str | None, dict[str, int]]:
    text = path.read_text()
    m = re.search(r"^# expect: (accepted|rejected|trap)[ \t]*(\S*)[ \t]*(\S*)", text,
                  re.M)
    assert m, f"{path.name}: no '# expect:' header"
    d = re.search(r"^# defines: (.*)$", text, re.M)
    defines = {}
    if d:
        for item in d.group(1).split():
            k, v = item.split("=")
            defines[k] = int(v)
    return m.group(1), m.group(2) or None, m.group(3) or None, defines


def test_programs_present():
    kinds = {header(p)[0] for p in PROGRAMS}
    assert len(PROGRAMS) >= 40 and kinds == {"accepted", "rejected", "trap"}


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_program_verdict(path: Path):
    want, what, cell, defines = header(path)
    proc = parse_file(str(path))
    defines = {p: defines.get(p, 2) for p in proc.params}
    if want == "trap":
        with pytest.raises(Trap) as err:
            check_amir(proc, defines)
        assert err.value.rule == what
        return
    verdict = check_amir(proc, defines)
    v = verdict.violation
    if want == "accepted":
        assert v is None, v.message
        return
    assert v is not None, f"{path.name}: accepted, expected {what} {cell}"
    got = f"{v.variable}[{', '.join(map(str, v.index))}]" if v.index else v.variable
    assert (v.check, got) == (what, cell), v.message
