"""The machine's representation choices keep the semantics exact while bounding its
work (interpreter/amir/machine.py docstring; errata "AMIR Free and record
representation"): records shared by a window, families split only when a lift
separates their threads, dominated records dropped, dead records skipped."""

from __future__ import annotations

from gpusem.calculus.amir.parser import parse_proc
from gpusem.interpreter.amir.machine import Machine


def machine(src: str, defines=None) -> Machine:
    m = Machine(parse_proc(src, "i.amir"), defines or {})
    verdict = m.run()
    assert verdict.accepted, verdict.violation.message
    return m


def cell_records(m: Machine, var: str, idx, attr="rd"):
    return m.sets.sets[int(getattr(m.vars[var], attr)[idx])]


def test_window_shares_one_record():
    m = machine("proc p():\n"
                "    RecordRead(fully_ordered, true, x[0:64, 0:8], cuda2, {}, {}) @ "
                "threads(0 : 32)\n")
    recs = {id(r) for i in range(64) for j in range(8)
            for r in cell_records(m, "x", (i, j))}
    assert len(recs) == 1 and m.stats.records == 1
    assert m.stats.recorded_accesses == 64 * 8


def test_per_thread_records_are_one_family_until_split():
    src = ("proc p():\n"
           "    RecordRead(fully_ordered, false, x[0], cuda2, {}, {}) @ threads(0 : 128)\n")  # noqa: E501
    m = machine(src)
    (fam,) = cell_records(m, "x", (0,))
    assert fam.own is not None and fam.who == (0, (1 << 128) - 1)
    m = machine(src + "    Fence(true, {cuda2}, {cuda2}, {cuda2}) @ threads(0 : 32)\n")
    parts = cell_records(m, "x", (0,))
    assert sorted(bin(r.who[1]).count("1") for r in parts) == [32, 96]


def test_repeated_reads_do_not_accumulate():
    # thread 0 reads x[0] 500 times with a fence in between: each read's record
    # dominates the next, so the cell keeps one record, not 500.
    src = ("proc p():\n    for i in loop(0, 500):\n"
           "        RecordRead(fully_ordered, false, x[0], cuda2, {}, {}) @ threads(0)\n"  # noqa: E501
           "        Fence(true, {cuda2}, {cuda2}, {cuda2}) @ threads(0 : 4)\n")
    m = machine(src)
    assert len(cell_records(m, "x", (0,))) == 1
    assert m.stats.records == 500


def test_dominance_respects_threads():
    src = ("proc p():\n    for t in loop(0, 4):\n"
           "        RecordRead(fully_ordered, false, x[0], cuda2, {}, {}) @ threads(t)\n")  # noqa: E501
    m = machine(src)
    assert len(cell_records(m, "x", (0,))) == 4


def test_cleared_records_are_dead_and_skipped():
    src = ("proc p():\n    for i in loop(0, 50):\n"
           "        RecordMutate(fully_ordered, false, x[0], cuda2, {}, {}) @ threads(0)\n"  # noqa: E501
           "        ClearMutates(x[0])\n"
           "        Fence(true, {cuda2}, {cuda2}, {cuda2}) @ threads(0 : 2)\n")
    m = machine(src)
    live = [r for lst in m.lifts.task_recs[0] for r in lst if r.live > 0]
    assert live == [] and sum(len(lst) for lst in m.lifts.task_recs[0]) <= 1


def test_free_releases_records():
    src = ("proc p():\n    Alloc(buf[8])\n"
           "    RecordMutate(fully_ordered, true, buf[0:8], cuda2, {}, {}) @ threads(0)\n"  # noqa: E501
           "    Free(buf)\n")
    m = machine(src)
    assert "buf" not in m.vars
    assert all(r.live == 0 for lst in m.lifts.task_recs[0] for r in lst)
