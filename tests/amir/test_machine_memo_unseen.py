"""Records into an attribute no rule examines are counted, not stored (memo.unexamined,
Machine._rule_record_unseen; with the iteration memo only): the ragged GEMM's TMA
reads of its inputs A and B, which nothing writes, so no CheckReads ever looks at
their read records. Against the machine that steps and stores every record:
identical verdicts, violation reports and statistics; a write seeded into an input
makes its reads examined again, and the bug it seeds is found by both, which a
wrong pruning would miss. errata "AMIR iteration memo"."""

from __future__ import annotations

from gpusem.interpreter.amir import machine as machine_mod
from gpusem.interpreter.amir import memo as memo_mod
from gpusem.interpreter.amir.machine import MEMO_MIN_ITERATIONS, Machine

from tests.amir.test_machine_memo import RAGGED, both, converted

GUARD = "if 256 * task_m + 128 * cta < N + 128:"
STORE = ("Sm90_wgmma_store_d_f32(C[256 * task_m + 128 * cta + 64 * wg:"
         "256 * task_m + 128 * cta + 64 * wg + 64,")
# One task's epilogue (task_n = 1, task_m = 0) stores its tile into the rows of the
# input A that the first task read by TMA instead of its rows of C, which nothing
# read or wrote before: the write meets the first task's reads, which it is not
# ordered with (CheckReads on A), and nothing reads A after it.
INTO_A = "Sm90_wgmma_store_d_f32(A[128 * cta + 64 * wg:128 * cta + 64 * wg + 64,"


def _into_a(text: str) -> str:
    at = text.index(STORE)
    guard = text.rindex(GUARD, 0, at)
    return (text[:guard] + "if task_n == 1 and task_m == 0:"
            + text[guard + len(GUARD):at] + INTO_A + text[at + len(STORE):])


def test_the_ragged_gemm_reads_of_its_inputs_are_unexamined():
    prog, env = converted(RAGGED.read_text(), str(RAGGED), {"N": 512})
    assert memo_mod.unexamined(prog.body) == {("A", "rd"), ("B", "rd")}
    ref, got, (replayed, _) = both(prog, env, memo_min=MEMO_MIN_ITERATIONS)
    assert got == ref and ref[0] == "accepted" and replayed > 0
    m = Machine(prog, env, memo_min=MEMO_MIN_ITERATIONS)
    m.run()
    # nothing stored in A's or B's read records, and no replay makes one again
    assert not m.vars["A"].rd.any() and not m.vars["B"].rd.any()
    assert all(not e.new for x in m.memos for e in x.table.values())
    plain = Machine(prog, env)
    plain.run()
    assert plain.vars["A"].rd.any() and plain.vars["B"].rd.any()
    assert not plain.unseen                   # without the memo: stored as printed


def test_a_write_to_an_input_makes_its_reads_examined(monkeypatch):
    text = RAGGED.read_text()
    assert text.count(STORE) == 1
    prog, env = converted(_into_a(text), "into_a.gpuir", {"N": 512})
    assert memo_mod.unexamined(prog.body) == {("B", "rd")}
    ref, got, (replayed, _) = both(prog, env, memo_min=MEMO_MIN_ITERATIONS)
    assert ref[0] == "rejected" and ref[1] == "CheckReads" and ref[2] == "A", ref
    assert got == ref and replayed > 0
    # a pruning that ignored the write's CheckReads would miss the bug
    monkeypatch.setattr(machine_mod, "unexamined",
                        lambda body: frozenset({("A", "rd"), ("B", "rd")}))
    _, wrong, _ = both(prog, env, memo_min=MEMO_MIN_ITERATIONS)
    assert wrong != ref
