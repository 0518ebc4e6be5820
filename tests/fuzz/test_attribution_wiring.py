"""Attribution wired in (issue 23, item 2.3): a seeded fault of our compiler is
attributed `ours` on the cpu backend; a campaign writes `attribution.json` into the
final bundle, its verdict into `bundle.json`, README.md and every report; `triage`
shows it. The cpu harness runs (g++); no GPU."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from gpusem import api
from gpusem.calculus.bundl.parser import parse_program
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.bundl.target import BundlTarget
from gpusem.fuzz.campaign import Campaign
from gpusem.fuzz.reports import Report
from gpusem.fuzz.targets import CheckResult, register_target
from hypothesis import strategies as st

# Thread t of block b stores (A[4b + t] - 5) / 2: C division truncates, so -5 / 2 is
# -2 (the seeded fault `floor-division` computes -3).
HALVES = """machine blocks = 2, threads = 4;
global A : int[8] = iota;
global out : int[8];
main {
  lower out into ob {
    destruct {
      let b : int @ block[1] = partition_id;
      partition ob into o2 by 2 {
        group 2 {
          lower o2 into ot {
            destruct {
              let t : int @ thread[1] = partition_id;
              partition ot into o1 by 4 {
                group 4 {
                  o1[0] = (A[4 * b + t] - 5) / 2;
                }
              }
            }
          }
        }
      }
    }
  }
}
"""


def _program():
    return Generated(parse_program(HALVES, "halves.bundl"),
                     race_free_by_construction=False)


def test_a_seeded_fault_is_attributed_ours_on_the_cpu_backend(monkeypatch):
    monkeypatch.setenv("GPUSEM_FAULT", "floor-division")
    target = BundlTarget("cpu")
    try:
        res = target.check(_program(), "compile")
        assert res.status == "finding", res.detail
        found = target.attribute(res, "compile")
    finally:
        target.close()
    assert found is not None
    assert (found["verdict"], found["rule"]) == ("ours", "cpu-harness")
    assert found["failing_config"] == "cpu" and set(found["matrix"]) == {"cpu"}
    assert all(o["status"] == "wrong" for o in found["matrix"]["cpu"])
    assert "expected -2" in found["evidence"][0]  # -5 / 2 truncates
    json.dumps(found)  # the bundle file


def test_a_finding_its_check_compared_is_not_proved_race_free_again(monkeypatch):
    """Attributed where it was found, a program is as large as generated: the z3
    proof of a 405-statement kernel-shaped program exhausted its budget after 11 s
    and the verdict was `environment`. The target attributes a finding its own check
    compared (race freedom established then) without proving it again; a bundle it
    never checked (redecide, reduce) is proved as before."""
    import gpusem.fuzz.bundl.attribute as attribute_module

    monkeypatch.setenv("GPUSEM_FAULT", "floor-division")
    asked: list[bool] = []
    real = attribute_module.attribute_program

    def spy(*args, **kw):
        asked.append(kw["prove_race_free"])
        return real(*args, **kw)

    monkeypatch.setattr(attribute_module, "attribute_program", spy)
    target, fresh = BundlTarget("cpu"), BundlTarget("cpu")
    try:
        res = target.check(_program(), "compile")
        assert res.status == "finding", res.detail
        assert target.attribute(res, "compile")["verdict"] == "ours"
        assert fresh.attribute(res, "compile")["verdict"] == "ours"
    finally:
        target.close()
        fresh.close()
    assert asked == [False, True]


def test_without_the_fault_the_same_program_does_not_reproduce(monkeypatch):
    """The attribution re-runs the kernel compiled now: with the fault off, the kernel
    differs from the finding's, and attribution says so instead of blaming anyone."""
    monkeypatch.setenv("GPUSEM_FAULT", "floor-division")
    target = BundlTarget("cpu")
    try:
        res = target.check(_program(), "compile")
        monkeypatch.delenv("GPUSEM_FAULT")
        found = target.attribute(res, "compile")
    finally:
        target.close()
    assert found is not None and found["verdict"] == "environment"
    assert "differs from the finding's" in found["evidence"][0]


def test_properties_that_run_no_kernel_get_no_attribution():
    target = BundlTarget("cpu")
    res = CheckResult("finding", "soundness:stuck:S-Sync", "soundness stuck", "x",
                      {"program.bundl": HALVES})
    assert target.attribute(res, "soundness") is None
    crash = CheckResult("finding", "compile:compile-error:KeyError:lower_data",
                        "compile compile-error", "KeyError: 'x'",
                        {"program.bundl": HALVES})
    assert target.attribute(crash, "compile")["verdict"] == "ours"
    internal = CheckResult("finding", "internal:KeyError:shrink.run", "internal",
                           "KeyError: 'y'", {"program.bundl": HALVES})
    assert target.attribute(internal, "compile")["verdict"] == "gpusem"


# ---------------------------------------------------------------- the campaign


class BlamingToy:
    """Lists of ints; a finding when one holds a 7; `attribute` blames `ours`."""

    name = "blamingtoy"
    properties = ("compile",)
    backends = ("cpu",)
    attributed = 0

    def __init__(self, backend: str = "cpu"):
        self.backend = backend

    def strategy(self, prop):
        return st.lists(st.integers(0, 9), max_size=6)

    def size(self, program) -> int:
        return len(program)

    def check(self, program, prop="compile") -> CheckResult:
        xs = list(program)
        if 7 in xs:
            return CheckResult("finding", "wrong:seven", "wrong", "a 7",
                               {"program.json": json.dumps(xs)}, len(xs))
        return CheckResult("pass")

    def attribute(self, result, prop):
        BlamingToy.attributed += 1
        return {"verdict": "ours", "rule": "cpu-harness", "evidence": ["toy"],
                "seconds": 0.5}

    def replay(self, files, meta) -> CheckResult:
        return self.check(json.loads(files["program.json"]))

    def close(self) -> None:
        pass


register_target("blamingtoy", BlamingToy)


@pytest.fixture
def store(tmp_path) -> tuple[Path, Report]:
    BlamingToy.attributed = 0
    summary = Campaign(target_name="blamingtoy", budget_s=60, seed=3,
                       out_dir=str(tmp_path), max_programs=100, round_size=25).run()
    return tmp_path, Report(summary, {"target": "blamingtoy"})


def test_the_final_bundle_carries_the_attribution(store):
    _, report = store
    (finding,) = report.summary.findings
    assert finding.attribution == "ours"
    # once where it was found (a cut shrink keeps that one: test_attribution_cut.py)
    # and once when final, for the shrunk program: never per shrink candidate
    assert finding.size < finding.size_before
    assert BlamingToy.attributed == 2
    bundle = Path(finding.bundle)
    found = json.loads((bundle / "attribution.json").read_text())
    assert found["rule"] == "cpu-harness" and found["program"] == "shrunk"
    program = (bundle / "program.json").read_text()
    assert found["program_sha256"] == hashlib.sha256(program.encode()).hexdigest()
    meta = json.loads((bundle / "bundle.json").read_text())
    assert meta["attribution"]["verdict"] == "ours"
    assert meta["attribution"]["of_this_program"] is True
    assert "Attribution: **ours**" in (bundle / "README.md").read_text()


def test_reports_and_triage_show_the_attribution(store):
    root, report = store
    assert report.as_json()["findings"][0]["attribution"] == "ours"
    sarif = report.as_sarif()["runs"][0]["results"][0]
    assert sarif["properties"]["attribution"] == "ours"
    assert "attribution: ours" in sarif["message"]["text"]
    assert "attribution: ours" in report.as_junit()
    assert "attribution ours" in report.as_text()
    assert "\nattribution: ours 1\n" in report.as_text()
    (row,) = api.triage([root])
    assert row.attribution == "ours"


def test_reports_without_attribution_are_unchanged_in_shape(tmp_path):
    from gpusem.fuzz.summary import Finding, Summary

    summary = Summary(findings=[Finding("s", "k", "d", 1, str(tmp_path), True, 0.0)])
    report = Report(summary, {"target": "t"})
    assert report.as_json()["findings"][0]["attribution"] is None
    assert "attribution" not in report.as_text()
    assert "attribution" not in report.as_junit()


def test_a_finding_already_in_the_store_keeps_its_attribution(store):
    root, _ = store
    again = Campaign(target_name="blamingtoy", budget_s=60, seed=4,
                     out_dir=str(root), max_programs=50, round_size=25).run()
    (finding,) = again.findings
    assert not finding.new and finding.attribution == "ours"
