"""The ckernel target end to end on the cpu backend: a short campaign finds nothing
and reaches every idiom; a seeded emitter fault is found, shrunk to a few statements,
bundled with a standalone repro.cu, and replayed; EMI variants agree; generation
replays from its seed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusem import api
from gpusem.calculus.ckernel import ast as A
from gpusem.calculus.ckernel.parser import parse_kernel
from gpusem.fuzz.ckernel.coverage import LABELS
from gpusem.fuzz.ckernel.emi import variants
from gpusem.fuzz.ckernel.target import CkernelTarget
from gpusem.fuzz.ckernel.templates import kernels
from gpusem.fuzz.hunt import generate_round
from gpusem.fuzz.targets import register_target
from gpusem.interpreter.ckernel.machine import outputs, run_kernel
from gpusem.typing_rules.ckernel.wellformed import check_kernel
from tests.ckernel.kernels import EXCHANGE, HEAD

register_target("ckernel", "gpusem.fuzz.ckernel.target:CkernelTarget")


def test_campaign_finds_nothing_and_reaches_every_idiom(tmp_path: Path) -> None:
    result = api.fuzz("ckernel", ("compile",), budget_s=240, seed=1, coverage=True,
                      out_dir=str(tmp_path), round_size=50, max_programs=200)
    s = result.summary
    assert s.findings == [] and s.programs >= 200
    reached = s.coverage["compile"]
    assert [n for n in LABELS if reached.get(n, 0) == 0] == []


def test_generated_programs_are_not_trivial() -> None:
    sizes = [A.statement_count(d.program.body) for d in generate_round(kernels(), 1, 100)]
    assert sum(n >= 4 for n in sizes) >= 70, sizes


def test_generation_replays_from_its_seed() -> None:
    first = [d.program for d in generate_round(kernels(), 7, 20)]
    assert first == [d.program for d in generate_round(kernels(), 7, 20)]
    assert first != [d.program for d in generate_round(kernels(), 8, 20)]


def test_seeded_fault_is_found_shrunk_bundled_and_replayed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUSEM_FAULT", "divc-pow2-mask")
    # --shrink-time 50 bounds hypothesis (the target's share: a tenth) and the reducer
    # together (issue 32.8; before, hunt_cap_s=5 bounded hypothesis only and the
    # reducer had GPUSEM_SHRINK_S=45 of its own)
    result = api.fuzz("ckernel", ("compile",), budget_s=240, seed=1, hunt_cap_s=50,
                      out_dir=str(tmp_path), round_size=50, max_programs=300)
    (finding,) = result.summary.findings
    assert finding.signature == "compile:mismatch"
    assert finding.size <= 4 < finding.size_before
    bundle = Path(finding.bundle)
    small = parse_kernel((bundle / "program.ck").read_text())
    assert any(isinstance(x, A.DivC) and x.op == "%" for x in _exprs(small))
    repro = (bundle / "repro.cu").read_text()
    assert "int main()" in repro and "want_st" in repro
    meta = json.loads((bundle / "bundle.json").read_text())
    # whose bug (issue 23): the cpu harness is wrong the same way, so ours
    assert meta["attribution"]["verdict"] == "ours", meta["attribution"]
    assert (bundle / "attribution.json").is_file()
    files = {p.name: p.read_text() for p in bundle.iterdir() if p.is_file()}
    target = CkernelTarget("cpu")
    assert target.replay(files, meta).status == "finding"
    monkeypatch.delenv("GPUSEM_FAULT")
    assert meta["fault"] == "divc-pow2-mask"  # replay switches it on again
    assert CkernelTarget("cpu").replay(files, meta).status == "finding"
    fixed = {k: v for k, v in meta.items() if k != "fault"}
    assert CkernelTarget("cpu").replay(files, fixed).status == "pass"


def _exprs(k: A.Kernel) -> list:
    from gpusem.fuzz.ckernel.coverage import exprs_of, stmts, subexprs

    return [x for s in stmts(k.body) for e in exprs_of(s) for x in subexprs(e)]


def test_dropped_barrier_is_seen_by_the_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    k = parse_kernel(EXCHANGE)
    assert CkernelTarget("cpu").check(k, "compile").status == "pass"
    monkeypatch.setenv("GPUSEM_FAULT", "drop-sync")
    res = CkernelTarget("cpu").check(k, "compile")
    assert res.status == "finding" and "repro.cu" in res.files


DEAD = HEAD + """{
  let a : i32 = (ldg x0 (mask tid));
  if (< 100:i32 a) {
    store st (own 0) = (* a 3:i32);
    let b : i32 = (/ a 7);
    atomic add acc 1 = b;
  } else {
    store st (own 1) = (% a 8);
  }
}
"""


def test_emi_variants_rewrite_only_unreached_code() -> None:
    k = parse_kernel(DEAD)
    check_kernel(k)
    run = run_kernel(k)
    assert (1, 0) not in run.reached and (1, 1) in run.reached
    got = variants(k, run.reached)
    assert [name for name, _ in got] == ["prune", "keep-lets", "poison"]
    want = outputs(k, run)
    for _, v in got:
        mine = outputs(v, run_kernel(v))
        assert all((mine[n] == want[n]).all() for n in want)
    assert CkernelTarget("cpu").check(k, "emi").status == "pass"


def test_emi_campaign_finds_nothing(tmp_path: Path) -> None:
    result = api.fuzz("ckernel", ("emi",), budget_s=120, seed=2, coverage=True,
                      out_dir=str(tmp_path), round_size=40, max_programs=40)
    assert result.summary.findings == [] and result.summary.programs >= 40
    assert result.summary.coverage["emi"]["idiom:dead-code"] > 0
