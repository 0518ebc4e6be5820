"""A rejection names the failing check, the variable and index, the timeline, the
threads (task, thread) on both sides, and the source lines of both accesses (issue
3)."""

from __future__ import annotations

from gpusem.calculus.amir.parser import parse_proc
from gpusem.interpreter.amir.machine import check_amir

RACE = """\
proc race(N):
    for task in loop(0, N):
        IncTaskID
        Alloc(buf[64])
        for tid in loop(0, 64):
            RecordMutate(fully_ordered, false, buf[tid], cuda2, {}, {}) @ threads(tid)
        for tid in loop(0, 64):
            CheckMutates(fully_ordered, false, buf[63 - tid], {cuda2}) @ threads(tid)
"""


def test_violation_fields():
    v = check_amir(parse_proc(RACE, "race.amir"), {"N": 3}).violation
    assert v is not None
    assert v.check == "CheckMutates"
    # thread 0 of the first task (ι = 1 after IncTaskID) reads buf[63], written by 63
    assert (v.variable, v.index) == ("buf", (63,))
    assert v.timelines == ("cuda_in_order_ram_qual",)
    assert v.required == "fully_ordered"
    assert v.threads == [(1, 0)] and v.other_threads == [(1, 63)]
    assert v.other_timeline == "cuda_in_order_ram_qual"
    assert (v.span.file, v.span.line) == ("race.amir", 8)        # the check
    assert (v.other_span.file, v.other_span.line) == ("race.amir", 6)  # the record
    assert v.message.startswith("unsynchronized mutate: CheckMutates at race.amir:8")
    assert "race.amir:6" in v.message


def test_read_report_and_window_cell():
    src = """\
proc p():
    RecordRead(fully_ordered, false, s[2:4, 1], cuda2, {}, {}) @ threads(9)
    CheckReads(temporally_ordered, false, s[0:8, 0:2], {cuda2}) @ threads(0 : 4)
"""
    v = check_amir(parse_proc(src, "w.amir"), {}).violation
    assert v.check == "CheckReads" and v.index == (2, 1)
    assert v.threads == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert v.other_threads == [(0, 9)]
    assert v.message.startswith("unsynchronized read:")


def test_barrier_report():
    src = """\
proc p():
    Alloc(z[3], barrier)
    Arrive(true, {cuda2}, {z[2]}) @ threads(0)
    CheckBarrier(z[0:3])
"""
    v = check_amir(parse_proc(src, "b.amir"), {}).violation
    assert (v.check, v.variable, v.index) == ("CheckBarrier", "z", (2,))
    assert v.message.startswith("barrier mismatch:")
    assert "1 arrive(s) but 0" in v.message
    assert v.span.line == 4


def test_accepted_verdict_has_stats():
    src = RACE.replace("buf[63 - tid]", "buf[tid]")
    verdict = check_amir(parse_proc(src), {"N": 2})
    assert verdict.accepted and verdict.violation is None
    assert verdict.stats.recorded_accesses == 2 * 64
    assert verdict.stats.statements >= 2 * 64 * 2
