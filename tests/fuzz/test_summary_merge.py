"""Two pieces (or shards) that met one signature merge into one finding
(`Summary.merge`) that describes the bundle the store holds for it."""

from __future__ import annotations

from gpusem.fuzz.summary import Finding, Summary

SIG = "compile:disagree:disagree:out:int:value"


def _summary(size: int, shrunk: bool, found: float, before: int) -> Summary:
    s = Summary()
    s.findings.append(Finding(SIG, "compile disagree", "", size, "/store/b", shrunk,
                              found, size_before=before))
    return s


def test_a_shrunk_finding_is_kept_over_a_smaller_sighting() -> None:
    """Dask, stop of issue 31.1 on a cold cache: the bundle's finding came back
    shrunk (15 -> 9 statements); a later piece met the signature again in a program
    of 2 statements (a sighting: no bundle of its own, never shrunk). The report
    said 2 statements, not shrunk: a program no bundle holds."""
    merged = _summary(9, True, 5.7, 15)
    merged.merge(_summary(2, False, 3.7, 2))
    (f,) = merged.findings
    assert (f.size, f.shrunk, f.size_before) == (9, True, 15)
    assert f.found_after_s == 3.7 and f.duplicates == 1  # every sighting counted


def test_between_unshrunk_findings_the_smaller_stays() -> None:
    merged = _summary(15, False, 5.7, 15)
    merged.merge(_summary(2, False, 3.7, 2))
    (f,) = merged.findings
    assert (f.size, f.shrunk) == (2, False)
