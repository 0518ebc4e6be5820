"""The census's rule key when Exo-GPU's hazard has no statement (issue 26, the H200
census): Exo's debug log came back cut before the hazard's remark (the worker keeps
its first 20,000 characters), so the signature reads `hazard:RAW` / `hazard:WAW`
without `@statement`. Such classes were `generic`; a RAW that only `--rules paper`
accepts is still Figure 5's reads (P3), and the rest say that the statement is
unknown (`unlocated`) instead of naming a rule nobody checked."""

from __future__ import annotations

from gpusem.compiler.gpuir_exo.driver import ExoAnswer
from gpusem.compiler.gpuir_exo.verdict import ExoVerdict
from gpusem.fuzz.exo.checking import check_text
from gpusem.fuzz.exo.findings import RULES, result_of, rule_key
from tests.exo.fake import RecordedExo
from tests.exo.goldens import PROGRAMS

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



def test_a_read_only_fixed_rejects_is_witness_temporal():
    # E8 on pldi26: Exo pldi26 and --rules paper follow the witness W as printed and
    # accept; --rules fixed alone rejects the read (errata "The witness W and temporal
    # visibility"). Exo pldi26 rejects Figure 5's reads as fixed does, so a read
    # that only fixed rejects turns on W
    c = check_text(RecordedExo("pldi26"),
                   (PROGRAMS / "witness_after_temporal.gpuir").read_text(), {})
    assert c.comparison.signature == ("gpusem-rejects:exo=accept|paper=accept|"
                                      "fixed=reject:RAW@read")
    assert rule_key(c) == "witness-temporal"
    assert "[witness-temporal]" in result_of(c).files["trace.txt"]


def test_a_read_both_rule_sets_reject_stays_generic():
    # H1 (host read of an unsynchronised copy): both rule sets reject, Exo accepts
    c = check_text(RecordedExo("pldi26"),
                   (PROGRAMS / "host_read_without_stream_sync.gpuir").read_text(), {})
    assert c.comparison.disagree_under == ("paper", "fixed")
    assert rule_key(c) == "generic"
