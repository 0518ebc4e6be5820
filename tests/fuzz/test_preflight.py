"""A campaign's preflight and its circuit breaker (issue 23: a GPU campaign on a
machine without z3 ran its whole 500 s budget into 13,235 internal findings of one
signature). Preflight: a target whose requirement does not import stops the campaign
before its first program, exit 2, one line naming the module and the target.
Breaker: one internal error in a large share of the programs stops it early, findings
kept, one line saying why, exit 3."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from gpusem import api
from gpusem.calculus.errors import BadInput
from gpusem.cli.main import cli, main
from gpusem.fuzz.breaker import MIN_HITS, MIN_PROGRAMS, CircuitBreaker
from gpusem.fuzz.bundle import list_bundles
from gpusem.fuzz.engines.dask import worker_preflight
from gpusem.fuzz.summary import INTERNAL_REASON
from gpusem.fuzz.targets import Requirement, preflight, register_target

from tests.fuzz.toys import Toy

MISSING = "gpusem_preflight_no_such_module"


class NeedsMissing(Toy):
    """A target that declares a module nobody installed."""

    name = "needs-missing"
    requires = (Requirement(MISSING, "no-such-dist"),)

    def check(self, program, prop="compile"):
        raise AssertionError("a program was checked despite the preflight")


class ProbeSaysNo(Toy):
    """Its imports are fine (z3 is gpusem's own dependency); its probe is not."""

    name = "probe-says-no"
    requires = (Requirement("z3", "z3-solver"),)

    def probe(self, prop):
        return "nvcc not found (nvcc-O3, nvcc-G, ptxas-O0)\nsecond line"


class SmokeFails(Toy):
    """The module imports but its smoke call raises (CuPy with no driver)."""

    name = "smoke-fails"
    requires = (Requirement("json", "", "json.no_such_function"),)


class RaisesEveryOther(Toy):
    """Every other program's check meets the same internal error (a missing module
    on a common path)."""

    name = "raises-every-other"

    def __init__(self, backend: str = "cpu") -> None:
        super().__init__(backend)
        self.n = 0

    def check(self, program, prop="compile"):
        self.n += 1
        if self.n % 2:
            import gpusem_preflight_no_such_module  # noqa: F401
        return super().check(program, prop)


class RaisesRarely(RaisesEveryOther):
    """One program in ten: 10% is under the breaker's 20%."""

    name = "raises-rarely"

    def check(self, program, prop="compile"):
        self.n += 1
        if self.n % 10 == 0:
            import gpusem_preflight_no_such_module  # noqa: F401
        return Toy.check(self, program, prop)


for _t in (NeedsMissing, ProbeSaysNo, SmokeFails, RaisesEveryOther, RaisesRarely):
    register_target(_t.name, _t)


def test_a_missing_module_stops_the_campaign_before_any_program(tmp_path) -> None:
    try:
        api.fuzz("needs-missing", budget_s=30, out_dir=str(tmp_path / "out"))
    except BadInput as err:
        line = err.one_line()
    else:
        raise AssertionError("the campaign ran without its module")
    assert "\n" not in line
    assert MISSING in line and "no-such-dist" in line
    assert "target needs-missing" in line and "property compile" in line
    assert list_bundles(str(tmp_path / "out")) == []


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_cli_preflight_is_one_line_and_exit_2(tmp_path, jobs, monkeypatch,
                                              capsys) -> None:
    monkeypatch.setattr("sys.argv", [
        "gpusem", "fuzz", "--target", "needs-missing", "--jobs", jobs, "--budget",
        "30s", "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit) as stop:
        main()
    out = capsys.readouterr()
    assert stop.value.code == 2
    lines = (out.out + out.err).strip().splitlines()
    assert len(lines) == 1 and MISSING in lines[0] and "needs-missing" in lines[0]


def test_the_dask_worker_check_is_the_same() -> None:
    why = worker_preflight("needs-missing", "cpu", "compile")
    assert why is not None and MISSING in why


def test_probe_and_smoke_answers_are_one_line() -> None:
    why = preflight(ProbeSaysNo(), "compile")
    assert why == ("preflight: target probe-says-no (property compile, backend cpu) "
                   "cannot run: nvcc not found (nvcc-O3, nvcc-G, ptxas-O0)")
    why = preflight(SmokeFails(), "compile")
    assert why is not None and "needs module json" in why
    assert "AttributeError" in why and "\n" not in why


def test_gpusems_targets_declare_what_they_need() -> None:
    from gpusem.fuzz.bundl.target import BundlTarget

    mods = [r.module for r in BundlTarget("cuda").requirements("toolchain")]
    assert mods[0] == "z3" and "cupy" in mods
    assert [r.module for r in BundlTarget("cpu").requirements("compile")] == ["z3"]
    assert preflight(BundlTarget("cpu"), "compile") is None  # z3: installed here


def test_the_breaker_stops_a_systematic_internal_error(tmp_path) -> None:
    out = tmp_path / "out"
    result = api.fuzz("raises-every-other", budget_s=60, round_size=50,
                      out_dir=str(out))
    s = result.summary
    assert s.programs == MIN_PROGRAMS  # stopped at the first program it may
    assert s.stopped == ("internal error internal:ModuleNotFoundError:test_preflight."
                         "check in 50% of 200 programs")
    assert result.exit_code == 3
    assert s.seconds < 30  # not the 60 s budget
    # kept and bundled: the internal error and the toy's own `wrong` finding
    assert sorted(f.kind for f in s.findings) == ["internal", "wrong"]
    assert len(list_bundles(str(out))) == 2
    text = result.report.as_text()
    assert f"stopped: {s.stopped}\n" in text
    assert result.report.as_json()["stopped"] == s.stopped


def test_cli_breaker_exit_3_and_summary(tmp_path) -> None:
    res = CliRunner().invoke(cli, ["fuzz", "--target", "raises-every-other",
                                   "--budget", "60s", "--out", str(tmp_path / "o"),
                                   "--json", str(tmp_path / "r.json")])
    assert res.exit_code == 3, res.output
    assert "stopped: internal error internal:ModuleNotFoundError" in res.output
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == 3


def test_a_rare_internal_error_does_not_trip_it(tmp_path) -> None:
    result = api.fuzz("raises-rarely", max_programs=600, round_size=100,
                      budget_s=120, out_dir=str(tmp_path / "out"))
    s = result.summary
    assert s.programs == 600 and s.stopped == ""
    assert result.exit_code == 3  # still an internal finding: reported, not hidden
    # the 60 programs that met the error were not compared: counted by that reason,
    # not as compared programs (stop 30's z3-less call counted them as compared)
    internal = s.not_compared["compile"][INTERNAL_REASON]
    assert internal == 60
    assert s.compared == 600 - s.invalid - s.skipped - 60
    row = result.report.as_json()["not_compared"]["compile"]
    assert row["by_reason"][INTERNAL_REASON]["programs"] == 60


def test_breaker_thresholds() -> None:
    b = CircuitBreaker()
    for _ in range(MIN_HITS - 1):
        b.hit("internal:x")
    assert b.tripped(MIN_PROGRAMS) == ""  # 49 of 200: under max(50, 40)
    b.hit("internal:x")
    assert b.tripped(MIN_PROGRAMS - 1) == ""  # too few programs yet
    assert b.tripped(MIN_PROGRAMS) == "internal error internal:x in 25% of 200 programs"
    assert b.tripped(251) == ""  # 50 of 251 < 20%
    for _ in range(190):
        b.hit("internal:x")
    assert b.tripped(1200) == "internal error internal:x in 20% of 1,200 programs"
