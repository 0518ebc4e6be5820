"""The verdict differential without Exo (CI): Exo-GPU's recorded answers classified,
compared with gpusem's live AMIR verdicts, described with the paper's rule, bundled and
replayed. The recorded answers are Exo's own output on tests/exo/programs/*.gpuir
(pldi26 56e066e1 and endgame 7f58588d); the table below is what each divergence is."""

from __future__ import annotations

import json

import pytest
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_exo.verdict import classify, hazard_location, normalise
from gpusem.fuzz.bundle import read_bundle, write_bundle
from gpusem.fuzz.exo.checking import check_text
from gpusem.fuzz.exo.findings import result_of
from gpusem.fuzz.exo.target import ExoTarget
from gpusem.fuzz.exo.verdicts import compare, statement_kind

from tests.exo.fake import RecordedExo
from tests.exo.goldens import DATA, PROGRAMS

# program -> (Exo's verdict kind and name, the comparison's signature or "agree", the
# rule key) per branch
EXPECTED = {
    "pldi26": {
        "host_read_without_stream_sync": ("accept", "", "gpusem-rejects:exo=accept|"
                                          "paper=reject:WAW@=|fixed=reject:WAW@=",
                                          "generic"),
        "host_stream_sync": ("compile-static", "ValueError", "exo-compile-static:exo="
                             "compile-static:Fence_N|paper=accept|fixed=accept",
                             "static"),
        "arrive_by_writers": ("static", "ValueError", "exo-static:exo=static:Await(bar, "
                              "cuda_in_order, ~N) has inconsistent collective tiling "
                              "with previous Arrive(...) >> bar […|paper=accept|"
                              "fixed=accept", "static"),
        "own_read_then_cp_async": ("hazard", "WAR HAZARD", "agree", ""),
        "cluster_sync_twice": ("accept", "", "agree", ""),
        "threads_outside_device": ("exo-error", "AssertionError", "exo-error:exo-error:"
                                   "AssertionError Need CollAnalysis", "exo-bug"),
        "accept": ("accept", "", "agree", ""),
        "raw": ("hazard", "RAW HAZARD", "agree", ""),
        # was a --rules paper rejection (P1 in results/exo/FINDINGS.md) until issue 14
        # item 5 read Figure 16's cuda_stream_sync cell alike in both rule sets
        "two_kernels": ("accept", "", "agree", ""),
        "mbarrier_once": ("accept", "", "gpusem-rejects:exo=accept|paper=reject:free@free"
                          "|fixed=accept", "barrier-convergent"),
        "reduce_after_temporal": ("accept", "", "gpusem-rejects:exo=accept|paper=reject:"
                                  "WAW@+=|fixed=reject:WAW@+=", "reduce-full"),
        "assign_after_temporal": ("hazard", "WAW HAZARD", "exo-rejects:exo=hazard:WAW@=|"
                                  "paper=accept|fixed=accept", "assign-temporal"),
        "free_temporal": ("hazard", "WAW HAZARD", "exo-rejects:exo=hazard:WAW@free|"
                          "paper=accept|fixed=accept", "free"),
        "unwaited_group": ("hazard", "Arrive count (2) != Await count (1)", "agree", ""),
        "partial_commit_group": ("static", "ValueError", "exo-static:exo=static:"
                                 "Distributed memory deduction for cg failed:|"
                                 "paper=accept|fixed=accept", "static"),
        "uneven_setmaxnreg": ("static", "ValueError", "agree", ""),
        "read_after_temporal": ("hazard", "RAW HAZARD", "exo-rejects:exo=hazard:"
                                "RAW@read|paper=accept|fixed=reject", "paper-reads"),
        "await_lag_mixed": ("static", "ValueError", "exo-static:exo=static:incompatible "
                            "N (CudaMbarrier uniform-N requirement) with previous Await|"
                            "paper=reject|fixed=accept", "static"),
        "two_commit_groups": ("compile-static", "TypeError", "exo-compile-static:exo="
                              "compile-static:Invalid '…' of lowered barrier type "
                              "LoweredBarrierType.Sm80_commit_group due to another such "
                              "live ba|paper=accept|fixed=accept", "static"),
        # E8: pldi26 follows the paper's witness W, as --rules paper does
        "witness_after_temporal": ("accept", "", "gpusem-rejects:exo=accept|"
                                   "paper=accept|fixed=reject:RAW@read",
                                   "witness-temporal"),
    },
}
EXPECTED["endgame"] = dict(EXPECTED["pldi26"]) | {
    "host_stream_sync": ("compile-static", "KeyError", "exo-compile-static:exo="
                         "compile-static:Fence_N|paper=accept|fixed=accept", "static"),
    "arrive_by_writers": ("accept", "", "agree", ""),
    "free_temporal": ("accept", "", "agree", ""),
    "unwaited_group": ("accept", "", "gpusem-rejects:exo=accept|paper=reject:barrier@"
                       "free|fixed=reject:barrier@free", "check-barrier"),
    "await_lag_mixed": ("unexpressible", "", "", ""),
    "cluster_sync_twice": ("hazard", "Arrived twice on one-shot arrive barrier",
                           "exo-rejects:exo=hazard:Arrived twice on one-shot arrive "
                           "barrier|paper=accept|fixed=accept", "one-shot"),
    "own_read_then_cp_async": ("accept", "", "gpusem-rejects:exo=accept|paper=reject:"
                               "WAR@instr|fixed=reject:WAR@instr", "async-war"),
    # E8: endgame's witness needs full (or issuing) visibility, as --rules fixed's;
    # --rules paper alone accepts, and the signature is P3's
    "witness_after_temporal": ("hazard", "RAW HAZARD",
                               ("exo-rejects:exo=hazard:RAW@read|paper=accept|"
                                "fixed=reject"), "paper-reads"),
}
CASES = [(d, name) for d in EXPECTED for name in EXPECTED[d]]


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def exo(request):
    return RecordedExo(request.param)


def test_every_program_has_a_recorded_answer():
    for d in EXPECTED:
        answers = json.loads((DATA / f"answers_{d}.json").read_text())["answers"]
        assert sorted(answers) == sorted(p.stem for p in PROGRAMS.glob("*.gpuir"))
        assert sorted(EXPECTED[d]) == sorted(answers)


@pytest.mark.parametrize("dialect,name", CASES)
def test_divergence_table(dialect, name):
    exo = RecordedExo(dialect)
    kind, exo_name, signature, rule = EXPECTED[dialect][name]
    c = check_text(exo, (PROGRAMS / f"{name}.gpuir").read_text(), {})
    if kind == "unexpressible":
        assert "arrived on more than once" in c.unexpressible
        return
    assert c.exo is not None
    assert (c.exo.verdict.kind, c.exo.verdict.name) == (kind, exo_name)
    if signature == "agree":
        assert c.comparison.agree
        assert result_of(c).status == "pass"
        return
    assert c.comparison.signature == signature
    res = result_of(c)
    assert res.status == "finding" and res.signature == signature
    from gpusem.fuzz.exo.findings import rule_key

    assert rule_key(c) == rule
    assert f"[{rule}]" in res.files["trace.txt"]


def test_bundle_replays(tmp_path, exo):
    target = ExoTarget(driver=exo)
    c = check_text(exo, (PROGRAMS / "reduce_after_temporal.gpuir").read_text(), {})
    res = result_of(c)
    meta = {"target": "exo", "backend": "cpu", "property": "verdict",
            "signature": res.signature, "kind": res.kind} | target.finding_meta(res)
    b = read_bundle(write_bundle(tmp_path, meta, res.files))
    assert "python program_exo.py" not in b.files["README.md"]  # the generic README
    assert b.files["program_exo.py"].rstrip().endswith('print("compile: accepted")')
    again = target.replay(b.files, b.meta)
    assert again.status == "finding" and again.signature == b.signature


def test_classify_failures_without_an_answer():
    assert classify(None, "hang").kind == "hang"
    v = classify(None, "crash:SIGSEGV")
    assert (v.kind, v.name) == ("crash", "SIGSEGV")
    assert classify({"stage": "sync_check", "exc_class": "CamsporkError",
                     "mro": ["CamsporkError", "ValueError"],
                     "message": "ThreadsFor consumes more threads than exists"}
                    ).kind == "internal"
    assert classify({"stage": "compile", "exc_class": "AssertionError",
                     "mro": ["AssertionError"], "message": "Need CollAnalysis"}
                    ).kind == "exo-error"
    v = classify({"stage": "compile", "exc_class": "ValueError", "mro": ["ValueError"],
                  "message": "<proc>:12:16:(s20): missing Arrive"})
    assert (v.kind, v.line, v.column, v.message) == ("compile-static", 12, 16,
                                                      "missing Arrive")


def test_broken_exo_is_always_a_finding():
    from gpusem.fuzz.exo.verdicts import GpusemVerdict

    g = {"paper": GpusemVerdict("accept"), "fixed": GpusemVerdict("accept")}
    cmp = compare(classify(None, "crash:SIGSEGV"), g)
    assert not cmp.agree and cmp.kind == "exo-crash"


def test_hazard_location_from_a_recorded_debug_log():
    log = json.loads((DATA / "answers_pldi26.json").read_text())["answers"][
        "raw"]["explain"]
    line, col, cell = hazard_location(log)
    assert cell.startswith("buf[") and line > 0 and col > 0


def test_statement_kind_tells_read_from_destination():
    proc = parse_module("proc p(A: f32[8] @ CudaGmemLinear):\n"
                        "    with CudaDeviceFunction(blockDim=32):\n"
                        "        for task in cuda_tasks(0, 1):\n"
                        "            buf: f32[2, 8] @ CudaSmemLinear\n"
                        "            for tid in cuda_threads(0, 8, unit=cuda_thread):\n"
                        "                buf[1, tid] = buf[0, 7 - tid]\n", "p").procs[0]
    assert statement_kind(proc, 6, "buf", (1, 3)) == "="
    assert statement_kind(proc, 6, "buf", (0, 3)) == "read"
    assert statement_kind(proc, 4, "buf", (0, 3)) == "free"


def test_normalise_folds_numbers_and_names():
    assert normalise("tid.tile_count = 32; must be 128 'x'") == \
        "tid.tile_count = N; must be N '…'"
