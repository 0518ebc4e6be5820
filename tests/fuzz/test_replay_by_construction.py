"""A bundle replays as its campaign checked it (stop 31): a kernel-shaped program is
race-free by construction, and its campaign compared it without a z3 proof; the
race analysis leaves this one (a stale read of shared memory under the
drop-partition-barrier fault, found by the two-fault campaign of test_signatures)
undecided, so its replay, which proved race freedom again, answered "cannot test"
(exit 125) for a finding that reproduces. The bundle now records how its program was
known race-free (`race_free_by_construction`), and replay and reduce honour it."""

from __future__ import annotations

from pathlib import Path

from gpusem.fuzz.bundl.target import RACE_FREE_LINE, BundlTarget
from gpusem.fuzz.targets import CheckResult

PROGRAM = (Path(__file__).parent / "programs" /
           "kernel_shaped_z3_undecided.bundl").read_text()
META = {"property": "compile", "fault": "drop-partition-barrier"}


def test_a_kernel_shaped_bundle_replays_as_its_campaign_checked_it(monkeypatch):
    monkeypatch.delenv("GPUSEM_FAULT", raising=False)
    target = BundlTarget()
    try:
        files = {"program.bundl": PROGRAM}
        res = target.replay(files, META | {"race_free_by_construction": True})
        assert res.status == "finding", res.detail
        assert res.signature == "compile:disagree:disagree:out:int:stale"
        assert RACE_FREE_LINE[True] in res.files["trace.txt"]
        assert target.finding_meta(res)["race_free_by_construction"] is True
        # proved again, as every replay did before: z3 leaves it undecided
        proved = target.replay(files, META | {"race_free_by_construction": False})
        assert proved.status == "invalid" and "undecided" in proved.detail, proved
        assert target.load_program(files, META | {
            "race_free_by_construction": True}).race_free_by_construction
    finally:
        target.close()


def test_a_bundle_without_the_record_is_proved_as_before() -> None:
    target = BundlTarget()
    try:
        plain = CheckResult("finding", files={"trace.txt": RACE_FREE_LINE[False]})
        assert target.finding_meta(plain)["race_free_by_construction"] is False
        assert not target.load_program({"program.bundl": PROGRAM},
                                       {"property": "compile"}).race_free_by_construction
    finally:
        target.close()
