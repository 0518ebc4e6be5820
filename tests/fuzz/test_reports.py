"""Reports and exit codes of `gpusem fuzz` (issue 18): the JSON report against its
documented schema (docs/schema/), SARIF 2.1.0 against a schema written from the
standard, JUnit XML; every exit code."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from gpusem.cli.main import cli

import tests.fuzz.toys  # noqa: F401 - registers the toy targets

ROOT = Path(__file__).resolve().parents[2]
REPORT_SCHEMA = json.loads((ROOT / "docs/schema/campaign-report.schema.json").read_text())
SARIF_SCHEMA = json.loads(
    (Path(__file__).parent / "schemas/sarif-2.1.0-structure.schema.json").read_text())


def fuzz(tmp_path, *args: str):
    return CliRunner().invoke(cli, ["fuzz", "--out", str(tmp_path / "out"), "--budget",
                                    "60s", "--json", str(tmp_path / "r.json"), "--sarif",
                                    str(tmp_path / "r.sarif"), "--junit",
                                    str(tmp_path / "r.xml"), *args])


def validate(instance, schema) -> None:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    cls(schema, format_checker=cls.FORMAT_CHECKER).validate(instance)


@pytest.fixture(scope="module")
def two_findings(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reports")
    res = fuzz(tmp, "--target", "toy-sometimes", "--max-programs", "300", "--coverage")
    return tmp, res


def test_the_json_report_follows_its_schema(two_findings) -> None:
    tmp, res = two_findings
    report = json.loads((tmp / "r.json").read_text())
    validate(report, REPORT_SCHEMA)
    assert report["exit_code"] == res.exit_code == 3  # one finding is internal
    kinds = {f["kind"] for f in report["findings"]}
    assert kinds == {"wrong", "internal"}
    assert report["counts"]["programs"] == 300 == sum(
        report["by_property"]["compile"].values())
    wrong = next(f for f in report["findings"] if f["kind"] == "wrong")
    assert wrong["size"] == 2 <= wrong["size_before"] and wrong["shrunk"]
    assert (Path(wrong["bundle"]) / wrong["program_file"]).is_file()
    assert json.loads((tmp / "out/summary.json").read_text()) == report
    assert report["coverage"] == {}  # the target measures none: an empty table


def test_the_json_schema_rejects_what_it_should(two_findings) -> None:
    tmp, _ = two_findings
    report = json.loads((tmp / "r.json").read_text())
    for broken in ({**report, "version": 2}, {**report, "findings": [{}]},
                   {k: v for k, v in report.items() if k != "counts"}):
        with pytest.raises(jsonschema.ValidationError):
            validate(broken, REPORT_SCHEMA)


def test_sarif_is_2_1_0_with_one_result_per_finding(two_findings) -> None:
    tmp, _ = two_findings
    sarif = json.loads((tmp / "r.sarif").read_text())
    validate(sarif, SARIF_SCHEMA)
    (run,) = sarif["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} == {"gpusem/wrong", "gpusem/internal"}
    assert len(run["results"]) == 2
    for r in run["results"]:  # SARIF 3.27.6: ruleIndex indexes the driver's rules
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert Path(uri).is_file() and Path(uri).name == "program.json"
    with pytest.raises(jsonschema.ValidationError):
        validate({**sarif, "version": "2.0.0"}, SARIF_SCHEMA)


def test_junit_has_one_failure_per_finding(two_findings) -> None:
    tmp, _ = two_findings
    root = ET.parse(tmp / "r.xml").getroot()
    suite = root.find("testsuite")
    assert suite is not None and suite.get("failures") == "2"
    failures = suite.findall("testcase/failure")
    assert len(failures) == 2 and {f.get("type") for f in failures} == {"wrong",
                                                                         "internal"}
    assert len(suite.findall("testcase")) == int(suite.get("tests", "0")) == 3


def test_the_summary_is_whole_when_stdout_is_not_a_terminal(two_findings) -> None:
    _, res = two_findings
    line = next(ln for ln in res.output.splitlines() if ln.startswith("internal\t"))
    sig = line.split("\t")[1]
    assert sig.startswith("internal:KeyError:") and "…" not in line


@pytest.mark.parametrize(("args", "code"), [
    (["--target", "toys", "--max-programs", "3"], 0),
    (["--target", "toys", "--max-programs", "200"], 1),
    # issue 32.1: a campaign that can check nothing is bad input, not a pass
    (["--target", "toys", "--max-programs", "0"], 2),
    (["--target", "toys", "--max-programs", "-3"], 2),
    (["--target", "toys", "--max-programs", "lots"], 2),
    (["--target", "toys", "--budget", "0"], 2),
    (["--target", "toys", "--budget", "0s"], 2),
    (["--target", "toys", "--budget", "-1m"], 2),
    # ... and one that compared no program exits 4 (pytest's 5: no test ran)
    (["--target", "toy-skips", "--max-programs", "20"], 4),
    (["--target", "toy-invalid", "--max-programs", "20"], 4),
    (["--target", "toy-slow-round", "--budget", "1s"], 4),
    (["--target", "toys", "--budget", "5x"], 2),
    (["--target", "nope"], 2),
    (["--target", "toys", "--property", "nope"], 2),
    (["--target", "toy-raises", "--max-programs", "20"], 3),
])
def test_exit_codes(tmp_path, monkeypatch, capsys, args, code) -> None:
    """Through `main`, as the installed `gpusem` runs (errors become exit codes)."""
    from gpusem.cli.main import main

    monkeypatch.setattr("sys.argv", ["gpusem", "fuzz", "--out", str(tmp_path / "o"),
                                     *args])
    with pytest.raises(SystemExit) as stop:
        main()
    captured = capsys.readouterr()
    err = captured.err
    assert stop.value.code == code, err
    assert "Traceback" not in err
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err  # one line, no usage text
    if code == 4:
        assert "nothing checked: " in captured.out and "exit 4" in captured.out


def test_nothing_checked_is_in_every_report(tmp_path) -> None:
    """The JSON (schema-valid), SARIF and summary of a campaign that compared no
    program say exit 4; its counts say why."""
    from gpusem.api import fuzz as campaign

    result = campaign("toy-skips", out_dir=str(tmp_path / "o"), max_programs=10)
    report = result.report
    assert result.exit_code == 4
    doc = report.as_json()
    validate(doc, REPORT_SCHEMA)
    assert doc["exit_code"] == 4 and doc["counts"]["compared"] == 0
    assert doc["counts"]["programs"] == doc["counts"]["skipped"] == 10
    assert report.as_sarif()["runs"][0]["invocations"][0]["exitCode"] == 4
    assert "nothing checked: all 10 programs were invalid (0) or not runnable" in (
        report.as_text())


def test_nothing_checked_says_when_pieces_were_cut_not_that_nothing_was_drawn() -> None:
    """A Dask campaign whose pieces all ran past the budget counts no program, but it
    drew and checked some: the line says the pieces were cut, not that nothing was
    generated (stop 39: the old line on a campaign whose workers had checked ~100)."""
    from gpusem.fuzz.reports import nothing_checked_text
    from gpusem.fuzz.summary import Summary

    cut = Summary()
    cut.cut.append("compile shard 0/1 rounds 0..0 of seed 1, begun within the budget, "
                   "not back by its end + 1.1 s (its programs are not counted)")
    text = nothing_checked_text(cut)
    assert "no piece came back within the budget (1 cut" in text, text
    assert "generated" not in text and "exit 4" in text
    assert "no program was generated" in nothing_checked_text(Summary())


@pytest.mark.parametrize("kw", [{"budget_s": 0.0}, {"budget_s": -1.0},
                                {"max_programs": 0}, {"max_programs": -3}])
def test_the_api_refuses_a_campaign_that_can_check_nothing(tmp_path, kw) -> None:
    from gpusem.api import BadInput
    from gpusem.api import fuzz as campaign

    with pytest.raises(BadInput, match="^bad (budget|max_programs)"):
        campaign("toys", out_dir=str(tmp_path / "o"), **kw)


def test_exit_codes_are_in_the_help() -> None:
    for verb in ("fuzz", "replay"):
        text = CliRunner().invoke(cli, [verb, "--help"]).output
        assert "Exit codes" in text and "3" in text
    fuzz_help = " ".join(CliRunner().invoke(cli, ["fuzz", "--help"]).output.split())
    assert "4 nothing checked" in fuzz_help
