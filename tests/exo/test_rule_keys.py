"""The census's rule key when Exo-GPU's hazard has no statement (issue 26, the H200
census): Exo's debug log came back cut before the hazard's remark (the worker keeps
its first 20,000 characters), so the signature reads `hazard:RAW` / `hazard:WAW`
without `@statement`. Such classes were `generic`; a RAW that only `--rules paper`
accepts is still Figure 5's reads (P3), and the rest say that the statement is
unknown (`unlocated`) instead of naming a rule nobody checked."""

from __future__ import annotations

import json

from gpusem.compiler.gpuir_exo.driver import ExoAnswer
from gpusem.compiler.gpuir_exo.verdict import ExoVerdict
from gpusem.fuzz.exo.checking import check_text
from gpusem.fuzz.exo.findings import RULES, result_of, rule_key
from tests.exo.fake import RecordedExo
from tests.exo.goldens import DATA, PROGRAMS

# what a cut log looks like: sync remarks, no `HAZARD @ cell` line
CUT_LOG = ("def gen(A: f32[64] @ CudaGmemLinear):\n"
           "    # <proc>:9:4:(s50):\n"
           "    # Last sync recorded:\n"
           "    #   arrive_count: 0 -> 1\n")


class CutLogExo:
    """Exo-GPU answering a hazard whose debug log lost the hazard's remark."""

    def __init__(self, hazard: str):
        self.install = RecordedExo("pldi26").install
        self.hazard = hazard

    def check(self, source, proc, sizes, *, compile=True, code=False) -> ExoAnswer:
        name = f"{self.hazard} HAZARD"
        return ExoAnswer(ExoVerdict("hazard", name, name, "sync_check"), None, 0.0)

    def explain(self, source, proc, sizes) -> str:
        return CUT_LOG


def _checked(program: str, hazard: str):
    exo = CutLogExo(hazard)
    return check_text(exo, (PROGRAMS / f"{program}.gpuir").read_text(), {})


def test_raw_without_statement_that_only_the_paper_accepts_is_paper_reads():
    # read_after_temporal (P3) with its log cut: the census's 12
    # `exo=hazard:RAW|paper=accept|fixed=reject`
    c = _checked("read_after_temporal", "RAW")
    assert c.exo_at == "" and c.exo_line == 0
    assert c.comparison.signature == ("exo-rejects:exo=hazard:RAW|paper=accept|"
                                      "fixed=reject")
    assert rule_key(c) == "paper-reads"
    assert "[paper-reads]" in result_of(c).files["trace.txt"]


def test_waw_without_statement_is_unlocated():
    # free_temporal (E3) with its log cut: the census's 4
    # `exo=hazard:WAW|paper=accept|fixed=accept`
    c = _checked("free_temporal", "WAW")
    assert c.comparison.signature == ("exo-rejects:exo=hazard:WAW|paper=accept|"
                                      "fixed=accept")
    assert rule_key(c) == "unlocated"
    assert "unlocated" in RULES and "[unlocated]" in result_of(c).files["trace.txt"]


def test_raw_without_statement_that_both_rule_sets_accept_is_unlocated():
    # paper-reads needs --rules fixed's own rejection at a read: without it the
    # verdicts say nothing about which rule Exo's RAW turns on
    c = _checked("accept", "RAW")
    assert c.comparison.signature == ("exo-rejects:exo=hazard:RAW|paper=accept|"
                                      "fixed=accept")
    assert rule_key(c) == "unlocated"


def test_a_located_hazard_keeps_its_rule():
    # the recorded log of read_after_temporal names the read: the fallback is not used
    c = check_text(RecordedExo("pldi26"),
                   (PROGRAMS / "read_after_temporal.gpuir").read_text(), {})
    assert c.exo_at == "read"
    assert rule_key(c) == "paper-reads"


def test_a_read_ordered_only_through_a_temporal_witness_is_witness_temporal():
    # E8 (the endgame H200 census's 16 `exo=hazard:RAW@read|paper=accept|
    # fixed=accept`): endgame's recorded log names the read and says the reader lacks
    # full visibility; both rule sets accept, following W as printed
    c = check_text(RecordedExo("endgame"),
                   (PROGRAMS / "witness_after_temporal.gpuir").read_text(), {})
    assert c.exo_at == "read"
    assert c.comparison.signature == ("exo-rejects:exo=hazard:RAW@read|paper=accept|"
                                      "fixed=accept")
    assert rule_key(c) == "witness-temporal"
    assert "[witness-temporal]" in result_of(c).files["trace.txt"]



class LoggedExo(CutLogExo):
    """Exo-GPU answering endgame's recorded RAW (and its whole debug log) on
    witness_after_temporal, whatever program it is given."""

    def __init__(self):
        super().__init__("RAW")
        answers = json.loads((DATA / "answers_endgame.json").read_text())["answers"]
        self.log = answers["witness_after_temporal"]["explain"]

    def explain(self, source, proc, sizes) -> str:
        return self.log


def test_the_same_log_without_a_temporal_fence_stays_generic():
    # a program whose fences are all full: the witness rule cannot be what Exo's RAW
    # turns on, so the key does not name it
    full = (PROGRAMS / "witness_after_temporal.gpuir").read_text().replace(
        "Fence(cuda_in_order, cuda_temporal)", "Fence(cuda_in_order, cuda_in_order)")
    c = check_text(LoggedExo(), full, {})
    assert c.exo_at == "read"
    assert c.comparison.signature == ("exo-rejects:exo=hazard:RAW@read|paper=accept|"
                                      "fixed=accept")
    assert rule_key(c) == "generic"
    c = check_text(LoggedExo(), (PROGRAMS / "witness_after_temporal.gpuir").read_text(),
                   {})
    assert rule_key(c) == "witness-temporal"
