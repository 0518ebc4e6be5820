"""The compile census's tally (fuzz/exo/compile_census.py `record`): a kernel not
compared under the G2 rule (it reads memory before writing it) is counted in the
outcomes and per feature but is never a finding; stop 30's H200 compile census wrote
its 14 such kernels as one finding with an empty signature and an empty bundle."""

from collections import Counter

from gpusem.fuzz.exo.compile_census import record
from gpusem.fuzz.targets import CheckResult


def _tally() -> dict:
    return {"outcomes": Counter(), "programs": 0, "kernels": 0, "findings": {},
            "seconds": Counter(), "features": {}}


def test_uninitialised_and_agreeing_kernels_are_counted_not_findings(tmp_path):
    tally = _tally()
    record(tally, "uninitialised", frozenset({"tma"}),
           CheckResult("invalid", kind="uninitialised", detail="B[0] depends on ..."),
           str(tmp_path), {"backend": "cuda", "seed": 0})
    record(tally, "agree", frozenset(), CheckResult("pass"), str(tmp_path),
           {"backend": "cuda", "seed": 0})
    record(tally, "built", frozenset({"wgmma"}), CheckResult("skip", kind="built"),
           str(tmp_path), {"backend": "cpu", "seed": 0})
    assert tally["findings"] == {}
    assert tally["kernels"] == 3
    assert tally["outcomes"] == Counter(uninitialised=1, agree=1, built=1)
    assert tally["features"] == {"tma": Counter(uninitialised=1),
                                 "none": Counter(agree=1), "wgmma": Counter(built=1)}
    assert list(tmp_path.iterdir()) == []


def test_a_wrong_kernel_is_a_finding_with_its_bundle(tmp_path):
    tally = _tally()
    cr = CheckResult("finding", "compile:wrong:B", "compile-wrong", "B[3] 1.0 != 2.0",
                     files={"program.gpuir": "proc gen(): pass\n"}, size=1)
    for _ in range(2):
        record(tally, "wrong", frozenset({"cluster"}), cr, str(tmp_path),
               {"backend": "cuda", "seed": 7})
    f = tally["findings"]["compile:wrong:B"]
    assert f["count"] == 2 and f["kind"] == "compile-wrong"
    assert (tmp_path / f["bundle"].split("/")[-1] / "program.gpuir").is_file()
    assert tally["outcomes"] == Counter(wrong=2)
