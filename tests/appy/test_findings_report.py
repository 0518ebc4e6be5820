"""Each section of a campaign's findings report shows its own program (issue 24).

One signature can have a bundle per outcome kind (`appy-triton-H`, `appy-wrong-H`):
the report used to take whichever bundle came last and print its program under the
outcome of the cause table's kernel, so a Triton error was shown above a program that
computes a wrong result.
"""

from __future__ import annotations

from gpusem.fuzz.appy import report
from gpusem.fuzz.bundle import write_bundle

TRITON_PROG = "def kernel(A, N):\n    A[0] = 1\n"
WRONG_PROG = "def kernel(B, N):\n    B[0] = 2\n"
TABLE_PROG = "def kernel(C, N):\n    #pragma parallel for\n    for i in range(N):\n" \
             "        C[i] = 3\n"


def _bundle(out, kind, detail, program):
    meta = {"target": "appy", "backend": "cpu", "property": "compile",
            "signature": "cause:simd-step-ignored", "kind": kind, "detail": detail,
            "size": 1}
    write_bundle(out, meta, {"program.py": program, "inputs.json": "{}"})


def _section(md: str) -> str:
    return md.split("## Smallest programs", 1)[1]


def _result(kind: str, detail: str) -> dict:
    return {"programs": 10, "compared_fraction": 0.9, "causes": 1, "cause_table": {
        "cause:simd-step-ignored": {"count": 3, "kind": kind, "detail": detail,
                                    "program": TABLE_PROG, "first_seen_minute": 0}}}


def test_the_section_shows_the_program_whose_outcome_it_prints(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "versions_now", lambda: {"appyc": "0.2.0"})
    _bundle(tmp_path / "b", "triton", "ValueError: the triton one", TRITON_PROG)
    _bundle(tmp_path / "b", "wrong", "B[0]: expected 1, got 2", WRONG_PROG)
    out = tmp_path / "findings.md"
    report.campaign_findings(_result("triton", "ValueError: the triton one"),
                             str(tmp_path / "b"), str(out))
    section = _section(out.read_text())
    assert "triton: ValueError: the triton one" in section
    assert "A[0] = 1" in section and "B[0]" not in section  # not the wrong bundle's
    rows = report.campaign_findings(_result("wrong", "B[0]: expected 1, got 2"),
                                    str(tmp_path / "b"), str(out))
    section = _section(out.read_text())
    assert "wrong: B[0]: expected 1, got 2" in section and "B[0] = 2" in section
    assert "A[0] = 1" not in section and rows[0]["bundle"].startswith("appy-wrong-")


def test_without_a_bundle_of_its_kind_the_table_kernel_is_shown(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "versions_now", lambda: {"appyc": "0.2.0"})
    _bundle(tmp_path / "b", "triton", "ValueError: the triton one", TRITON_PROG)
    out = tmp_path / "findings.md"
    rows = report.campaign_findings(_result("wrong", "C[0]: expected 3, got 0"),
                                    str(tmp_path / "b"), str(out))
    section = _section(out.read_text())
    assert "wrong: C[0]: expected 3, got 0" in section and "C[i] = 3" in section
    assert "A[0] = 1" not in section and rows[0]["bundle"] == ""
