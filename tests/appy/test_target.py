"""The APPy campaign target end to end: legality gate, signatures, bundles, replay,
and a bounded campaign (the CI campaign; needs the `appy` extra)."""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.appy import ast as A
from gpusem.compiler.appy_triton.driver import appyc_available
from gpusem.fuzz.appy.strategies import AppyProgram
from gpusem.fuzz.appy.target import AppyTarget, drop_statement
from gpusem.fuzz.bundle import list_bundles, read_bundle, write_bundle
from gpusem.fuzz.campaign import Campaign

ok, why = appyc_available()
pytestmark = pytest.mark.skipif(not ok, reason=why)


@pytest.fixture(scope="module")
def target():
    t = AppyTarget("cpu", timeout=60.0)
    yield t
    t.close()


def step2_copy() -> AppyProgram:
    """`parallel for simd` over range(0, N, 2): appyc 0.2.0 ignores the step."""
    i = A.Name("i")
    loop = A.For("i", A.Const(0), A.Name("N"), A.Const(2),
                 (A.Assign(A.Subscript("C", (i,)), A.Subscript("A", (i,))),),
                 A.ParallelFor(simd=True))
    fn = A.Function("kernel", (A.Param("A", True), A.Param("C", True),
                               A.Param("N", False)), (loop,))
    return AppyProgram(fn, (("A", "float32", (4,)), ("C", "float32", (4,))),
                       (("N", 4),), data_seed=1)


def test_known_miscompilation_is_a_finding_with_a_bundle(target, tmp_path) -> None:
    res = target.check(step2_copy())
    assert res.status == "finding" and res.kind == "wrong"
    assert res.signature == "cause:simd-step-ignored"  # the cause, not the directives
    assert {"program.py", "kernel_triton.py", "inputs.json", "expected.json",
            "actual.json", "trace.txt", "cause.json"} <= set(res.files)
    path = write_bundle(tmp_path, {"target": "appy", "backend": "cpu",
                                   "property": "compile", "signature": res.signature,
                                   "kind": res.kind}, res.files)
    again = target.replay(read_bundle(path).files, read_bundle(path).meta)
    assert again.signature == res.signature  # replay reproduces from the files alone


def test_illegal_programs_are_never_blamed_on_the_compiler(target) -> None:
    src = "def k(C, N):\n    #pragma parallel for\n    for i in range(N):\n" \
          "        C[0] = i\n"
    res = target.check_source(src, {"C": np.zeros(1, np.int32)}, {"N": 4})
    assert res.status == "invalid" and "Legal-Disjoint" in res.detail


def test_bounded_campaign(tmp_path, monkeypatch) -> None:
    from gpusem.fuzz.appy.stats import merge

    monkeypatch.setenv("GPUSEM_APPY_STATS", str(tmp_path / "stats"))
    # 1 s of shrinking a finding, not the default minute: nothing below needs the
    # shrink to get anywhere (a cut shrink's bundle is final and complete, as found),
    # and seed 1's first finding (3 statements) shrank to 3 in the ~20 s it was given
    # on a loaded 2-core machine, most of the test's time, while its other two waited
    monkeypatch.setenv("GPUSEM_SHRINK_S", "1")
    summary = Campaign("appy", budget_s=90, seed=1, out_dir=str(tmp_path),
                       round_size=6, max_programs=6).run()
    assert summary.programs <= 6 and summary.invalid == 0
    result = merge(str(tmp_path / "stats"))  # the target's own count: every program
    assert result["programs"] >= 6 and 0 < result["compared_fraction"] <= 1
    assert len(result["new_causes_by_minute"]) >= 1
    bundles = list_bundles(tmp_path)  # seed 1: three classes, every one bundled
    assert len(bundles) == len(summary.findings) >= 1, summary.findings
    for b in bundles:  # every finding is a complete, replayable bundle
        assert b.meta["state"] == "done", b.meta  # final, shrunk or cut
        assert b.meta["target"] == "appy" and "program.py" in b.files
        assert b.meta["versions"]["appyc"] == "0.2.0"


def test_findings_table_markdown() -> None:
    from gpusem.fuzz.appy.report import markdown

    row = {"signature": "cause:simd-step-ignored", "kind": "wrong",
           "detail": "C[1]: expected 9.0, got 1.0", "statements": 2, "shrunk": True,
           "reproduces": True, "replayed_on": "cpu", "appyc": "0.2.0",
           "bundle": "bundles/appy-wrong-x", "h100": "not run",
           "program": "def kernel(A, C, N):\n    pass\n", "sm90_compile": "ok"}
    md = markdown([row])
    assert "| 1 | wrong | `cause:simd-step-ignored` | 2 | yes (cpu) | ok |" in md
    assert "def kernel(A, C, N):" in md and "[appy-wrong-x](bundles/appy-wrong-x)" in md


def test_drop_statement_pass_removes_an_unrelated_kernel(target) -> None:
    bug = step2_copy()
    i = A.Name("i")
    other = A.For("i", A.Const(0), A.Name("N"), A.Const(1),
                  (A.Assign(A.Subscript("D", (i,)), A.Const(1.0)),), A.ParallelFor())
    fn = A.Function("kernel", (A.Param("D", True),) + bug.fn.params,
                    (other,) + bug.fn.body)
    big = AppyProgram(fn, (("D", "float32", (4,)),) + bug.arrays, bug.scalars, 1,
                      kernels=(1, 1))
    res = target.check(big)  # the unrelated kernel agrees: the bundle is the bad one
    assert res.signature == "cause:simd-step-ignored" and res.size == 2
    assert "D" not in res.files["program.py"]
    small = drop_statement(big, 0)
    assert small is not None and small.kernels == (1,)
    assert target.check(small).signature == res.signature


def test_compilation_error_class_is_the_root_cause_not_the_quoted_line() -> None:
    """Triton's CompilationError quotes the user's line and chains the real error; two
    kernels failing the same way in different expressions are one class."""
    from gpusem.compiler.appy_triton.worker import _short
    from gpusem.fuzz.appy.causes import normalise as _normalise

    class CompilationError(Exception):
        def __init__(self, src, lineno, msg=None):
            self.src, self.error_message = src, msg
            self.node = type("Node", (), {"lineno": lineno})()
            super().__init__(f"at {lineno}:4:\n{src}")

    def failing(user_line: str) -> BaseException:
        root = AttributeError("'dtype' object has no attribute 'numel'")
        inner = CompilationError("def sum(input, axis=None):\n    return reduce(input)", 2)
        inner.__cause__ = root
        outer = CompilationError(f"def k(X):\n    {user_line}", 2)
        outer.__cause__ = inner
        return outer

    a, b = (_short(failing(line)) for line in
            ("tl.store(X, tl.sum(1 + 2))", "tl.atomic_add(X, tl.sum(tl.abs(3)))"))
    assert a.startswith("CompilationError in sum: AttributeError: 'dtype' object")
    assert "| at 2:4: tl.store(X, tl.sum(1 + 2))" in a
    assert a != b and _normalise(a) == _normalise(b)


def test_resign_replays_and_relabels(tmp_path) -> None:
    from gpusem.fuzz.appy.report import resign

    from pathlib import Path

    found = [b for d in sorted(Path("results/appy").glob("cpu*/bundles"))
             for b in list_bundles(d) if b.meta["kind"] == "wrong"]
    assert found, "no committed wrong-result bundle of the cpu campaign"
    src = found[0]
    meta = dict(src.meta, signature="wrong:an-old-signature")
    write_bundle(tmp_path / "old", meta, src.files)
    counts = resign(str(tmp_path / "old"), str(tmp_path / "new"), "cpu")
    assert counts == {"bundles": 1, "still_failing": 1}
    (new,) = list_bundles(tmp_path / "new")
    assert new.meta["signature_at_campaign"] == "wrong:an-old-signature"
    assert new.signature == src.signature
