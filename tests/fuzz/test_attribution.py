"""The attribution decision procedure (`fuzz/attribution.py`) on fake matrices: every
verdict is reached, by the rule the module's table names, and the rule order the
table documents holds (T1: the static check before ptxas -O0). No GPU."""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.compiler.backends.kernel import Job, KernelSpec, Result, ptr
from gpusem.compiler.backends.toolchain import StaticFailure
from gpusem.fuzz import attribution as A

RIGHT = A.Observation("right")
WRONG = A.Observation("wrong", "f00d", "out[0]", "out[0] = 7, expected 8")
OTHER = A.Observation("wrong", "beef", "out[1]", "out[1] = 0, expected 2")
TRAP = A.Observation("failed", "trap", "", "runtime_error: trap")
GONE = A.Observation("unobserved", note="build_error: unavailable: nvcc not found")
T1_LINE = StaticFailure("nc-load-of-written-param", "nvrtc 13.0", 57,
                        "ld.global.nc.f32 %f1, [%rd9];", "gs_gscratch_float")

NC_LINE = StaticFailure("ld.nc-read-only", "nvrtc 13.0", 96,
                        "ld.global.nc.u32 %r43, [%rd27];", "gs_gscratch_int")


def runs(**configs: list[A.Observation]) -> dict[str, list[A.Observation]]:
    """Every configuration right (4 launches) unless named; `ptxas_O0` etc. spell
    the dashes as underscores."""
    out = {c: [RIGHT] * 4 for c in ("nvrtc", "nvcc-O3", "nvcc-G", "ptxas-O0",
                                    "ptx-jit", "no-restrict", "cpu")}
    out |= {c.replace("_", "-"): v for c, v in configs.items()}
    return out


def t1_runs() -> dict[str, list[A.Observation]]:
    """Issue 23's T1 as measured on the H200: wrong at default/-O3, NVRTC and the PTX
    JIT; right with -G, ptxas -O0, without __restrict__ and on the cpu harness."""
    return runs(nvrtc=[WRONG] * 4, nvcc_O3=[WRONG] * 4, ptx_jit=[WRONG] * 4)


CASES = {
    "environment": (A.Evidence("nvrtc", runs(), environment="unsupported: wgmma"),
                    "platform-limit"),
    "environment-cannot-run": (A.Evidence("nvrtc", runs(nvrtc=[GONE] * 4)),
                               "platform-limit"),
    "gpusem": (A.Evidence("nvrtc", runs(nvrtc=[WRONG] * 4),
                          second_reference="memory: out[0] is 7 by big-step, 8 by "
                                           "small-step"), "second-reference"),
    "ours-cpu-backend": (A.Evidence("cpu", {"cpu": [WRONG, RIGHT, WRONG, WRONG]}),
                         "cpu-harness"),
    "nondeterministic": (A.Evidence("nvrtc", runs(nvrtc=[WRONG, RIGHT, WRONG, WRONG])),
                         "reruns-differ"),
    "nvvm-stale-nc": (A.Evidence("nvrtc", runs(
        nvrtc=[WRONG, OTHER], nvcc_O3=[WRONG, WRONG], ptx_jit=[OTHER, WRONG]),
        static=[NC_LINE]), "stale-nc-reads"),
    "nondeterministic-gone": (A.Evidence("nvrtc", runs()), "reruns-differ"),
    "ours-harness": (A.Evidence("nvrtc", runs(nvrtc=[WRONG] * 4, cpu=[WRONG] * 4)),
                     "harness-same"),
    "ours-every-gpu": (A.Evidence("nvrtc", {c: [WRONG] * 4 for c in A.GPU_CONFIGS}
                                  | {"cpu": [OTHER] * 4}), "every-gpu-same"),
    "nvvm-static": (A.Evidence("nvrtc", t1_runs(), static=[T1_LINE]), "static-ptx"),
    "ours-static": (A.Evidence("nvrtc", t1_runs(), static=[StaticFailure(
        "const-written", "nvrtc 13.0", 40, "st.global.u32 [%rd8], %r3;",
        blame="ours"), T1_LINE]), "static-ptx-ours"),
    "driver-jit": (A.Evidence("nvrtc", runs(nvrtc=[WRONG] * 4, ptx_jit=[WRONG] * 4),
                              static=[]), "jit-vs-sass"),
    "ptxas": (A.Evidence("nvrtc", runs(nvrtc=[WRONG] * 4, nvcc_O3=[WRONG] * 4),
                         static=[], sass={"nvcc-O3": "LDG.E.CONSTANT R2, [R4]"}),
              "ptxas-O0"),
    "nvvm-other-ptx": (A.Evidence("nvrtc", runs(
        nvrtc=[WRONG] * 4, nvcc_O3=[WRONG] * 4, ptxas_O0=[WRONG] * 4,
        ptx_jit=[WRONG] * 4)), "other-ptx"),
    "undecided": (A.Evidence("nvrtc", t1_runs()), "undecided"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_verdict_is_reached_by_its_rule(name):
    ev, rule = CASES[name]
    got = A.decide(ev)
    assert got.rule == rule, got.line()
    assert name.startswith(got.verdict)
    assert got.verdict == {r: v for r, v, _ in A.RULES}.get(rule, "undecided")
    assert got.evidence and all(isinstance(line, str) for line in got.evidence)


def test_every_verdict_is_reachable():
    reached = {A.decide(ev).verdict for ev, _ in CASES.values()}
    assert reached == set(A.VERDICTS)


def test_t1_is_nvvm_although_right_under_ptxas_O0():
    """Rule order: the static PTX check decides before the ptxas -O0 comparison."""
    got = A.decide(A.Evidence("nvrtc", t1_runs(), static=[T1_LINE]))
    assert (got.verdict, got.rule) == ("nvvm", "static-ptx")
    assert "ld.global.nc" in got.evidence[0] and "57" in got.evidence[0]


def test_stale_nc_reads_that_differ_are_nvvm_not_nondeterministic():
    """The H200 bundle of stop 28 (T1's shape): nvrtc's two launches wrong in two
    ways, nvcc-O3 and ptx-jit wrong, ptxas-O0, -G and no-restrict right, the static
    check's `.nc` load of the scratch: NVVM's. Called `nondeterministic` before."""
    ev = A.Evidence("nvrtc", runs(nvrtc=[WRONG, OTHER], nvcc_O3=[WRONG, WRONG],
                                  ptx_jit=[WRONG, WRONG]), static=[NC_LINE])
    got = A.decide(ev)
    assert (got.verdict, got.rule) == ("nvvm", "stale-nc-reads")
    assert "no-restrict" in got.evidence[0] and "ld.global.nc" in got.evidence[1]
    # not without the static check's finding, nor when the PTX without the load is
    # also wrong, nor when a launch is right: then reproduction decides
    for other in (A.Evidence("nvrtc", ev.runs, static=[]),
                  A.Evidence("nvrtc", ev.runs | {"no-restrict": [WRONG, WRONG],
                                                 "nvcc-G": [OTHER, OTHER]},
                             static=[NC_LINE]),
                  A.Evidence("nvrtc", ev.runs | {"nvrtc": [WRONG, RIGHT]},
                             static=[NC_LINE])):
        assert A.decide(other).verdict == "nondeterministic"


def test_installed_checker_is_none_without_an_nvrtc(monkeypatch, tmp_path):
    """No NVRTC to make the PTX with (GPUSEM_NVRTC_PATH: only an empty folder is
    searched): no checker, never a stand-in."""
    from gpusem.compiler.backends import toolchain

    monkeypatch.setenv("GPUSEM_NVRTC_PATH", str(tmp_path))
    assert toolchain.installed_checker() is None
    monkeypatch.delenv("GPUSEM_NVRTC_PATH")
    assert toolchain.installed_checker() is not None  # the nvrtc extra's are found


def test_t1_without_a_static_check_is_not_blamed_on_ptxas():
    got = A.decide(A.Evidence("nvrtc", t1_runs(), static=None))
    assert got.verdict == "undecided"
    assert "no static PTX check" in got.evidence[0]
    assert A.decide(A.Evidence("nvrtc", t1_runs(), static=[])).verdict == "ptxas"


def test_cpu_findings_use_cpu_side_rules_only():
    """A harness run that differs by schedule is our kernel's race: `ours`, not
    `nondeterministic` (the reference is race-free)."""
    ev = A.Evidence("cpu", {"cpu": [WRONG, OTHER, RIGHT, WRONG]}, static=[T1_LINE])
    assert A.decide(ev).verdict == "ours"
    gpusem = A.Evidence("cpu", {"cpu": [WRONG] * 4}, second_reference="differs")
    assert A.decide(gpusem).verdict == "gpusem"


def test_failed_launches_are_wrong_the_same_way_by_kind():
    ev = A.Evidence("nvrtc", {c: [TRAP] * 4 for c in A.GPU_CONFIGS} | {"cpu": [RIGHT]})
    assert A.decide(ev).verdict == "ours"


# ------------------------------------------------------------------- the driver


class FakeMatrix:
    """`toolchain.Matrix`'s interface with canned results: config -> outputs."""

    def __init__(self, outputs: dict[str, list[int] | str]) -> None:
        self.outputs = outputs
        self.seconds: dict[str, float] = {}
        self.calls = 0

    def run(self, jobs):
        self.calls += 1
        out = {}
        for config, value in self.outputs.items():
            self.seconds[config] = self.seconds.get(config, 0.0) + 0.25
            if isinstance(value, str):
                out[config] = [Result(value, {}, value)] * len(jobs)  # type: ignore[arg-type]
            else:
                arr = np.array(value, dtype="int32")
                out[config] = [Result("ok", {"g_out": arr})] * len(jobs)
        return out

    def binary(self, spec, config):
        return None


def _case(expected: list[int], failing: str = "nvrtc", **kw) -> A.Case:
    spec = KernelSpec("k", '#include "gpusem_rt.cuh"\n', 1, 1,
                      params=(ptr("g_out", "int32", len(expected)),))
    jobs = [Job(spec, {}, seed) for seed in range(4)]

    def wrong_cell(outputs):
        got = outputs["g_out"].tolist()
        bad = [i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if g != e]
        return f"out[{bad[0]}] = {got[bad[0]]}, expected {expected[bad[0]]}" \
            if bad else None

    return A.Case(jobs, failing, wrong_cell, **kw)


def test_attribute_runs_the_matrix_and_reports_json_ready():
    matrix = FakeMatrix({"nvrtc": [7, 2], "nvcc-O3": [7, 2], "nvcc-G": [8, 2],
                         "ptxas-O0": [8, 2], "ptx-jit": [7, 2],
                         "no-restrict": [8, 2], "cpu": [8, 2]})
    t1 = StaticFailure("nc", "13.0", 3, "ld.global.nc.u32 %r1, [%rd2];")
    rep = A.attribute(_case([8, 2]), matrix, checker=lambda source: [t1])
    assert (rep["verdict"], rep["rule"]) == ("nvvm", "static-ptx")
    assert rep["matrix"]["nvrtc"][0]["status"] == "wrong"
    assert rep["matrix"]["cpu"][0]["status"] == "right"
    assert rep["static_check"][0]["line"] == 3
    assert rep["seconds_per_config"]["nvrtc"] == 0.25
    assert A.disagreeing({c: [A.observe(r, lambda o: None) for r in rs]
                          for c, rs in matrix.run([]).items()}) == ()


def test_attribute_a_seeded_fault_shape_is_ours():
    """Every configuration computes the same wrong memory: our kernel is wrong."""
    matrix = FakeMatrix({c: [1, 2] for c in (*A.GPU_CONFIGS, "cpu")})
    assert A.attribute(_case([0, 2]), matrix)["verdict"] == "ours"


def test_a_trapping_launch_is_observed_as_failed_and_a_build_error_unobserved():
    matrix = FakeMatrix({"nvrtc": "runtime_error", "nvcc-O3": "build_error",
                         "cpu": [5]})
    rep = A.attribute(_case([5]), matrix)
    assert rep["matrix"]["nvrtc"][0]["status"] == "failed"
    assert rep["matrix"]["nvcc-O3"][0]["status"] == "unobserved"
    assert rep["verdict"] == "undecided"


def test_a_hang_on_the_harness_and_on_a_gpu_are_the_same_way():
    matrix = FakeMatrix({c: "timeout" for c in A.GPU_CONFIGS} | {"cpu": "deadlock"})
    rep = A.attribute(_case([0]), matrix)
    assert (rep["verdict"], rep["rule"]) == ("ours", "harness-same")


def test_environment_runs_nothing():
    matrix = FakeMatrix({"nvrtc": [1]})
    rep = A.attribute(_case([0], environment="the interpreter ran out of steps"), matrix)
    assert (rep["verdict"], matrix.calls) == ("environment", 0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_recorded_attribution_decides_again_the_same(name):
    """`evidence_of` reads back what `report` wrote (scripts/redecide_attribution.py):
    every case of the table decides the same from its JSON (the second reference,
    which the JSON cannot carry faithfully, passed as the caller recomputes it)."""
    import json

    ev, _ = CASES[name]
    first = A.decide(ev)
    found = json.loads(json.dumps(A.report(first, ev, 0.0, {})))
    again = A.decide(A.evidence_of(found, ev.second_reference))
    assert (again.verdict, again.rule, again.evidence) == (
        first.verdict, first.rule, first.evidence)
