"""Issue 25, "one front door": `gpusem.api` finds a file's language in a registry
(adding a language is one registration, and the CLI then takes its files with no
other change), returns frozen, typed reports, and names no `Any`; the campaign runs
from a frozen `CampaignSpec`."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
from click.testing import CliRunner
from gpusem import api
from gpusem.cli.main import cli

import tests.fuzz.toys  # noqa: F401 - registers the toy targets

ROOT = Path(__file__).resolve().parents[2]
BUNDL = ROOT / "examples" / "bundl"


@pytest.fixture
def toy_language():
    """A language of one-line files 'ok' or 'bad', with only a `check`."""

    def check(file: str, options: api.CheckOptions) -> api.CheckReport:
        text = Path(file).read_text().strip()
        ok = text == "ok"
        shown = api.Chunk("ok: a toy\n") if ok else api.Chunk(
            f"{file}:1:1: [Toy] not ok\n", err=True)
        return api.CheckReport(file, "toy", 0 if ok else 1, (shown,), ok=ok)

    api.register(api.Language("toy", (".toy",), lambda text, file: text,
                              check=check))
    yield
    api.unregister("toy")


def test_every_built_in_suffix_finds_its_language():
    names = {s: lang.name for lang in api.languages().values() for s in lang.suffixes}
    assert names == {".bundl": "bundl", ".gpuir": "gpuir", ".amir": "amir",
                     ".py": "appy", ".cyp": "cypress", ".prism": "prism",
                     ".lcu": "lambdacu"}
    with pytest.raises(api.BadInput, match=r"unknown file kind: x\.c \(expected "
                       r"\.bundl, \.gpuir, \.amir, \.py, \.cyp, \.prism or \.lcu\)"):
        api.language_of("x.c")


def test_the_suffix_table_names_each_built_in_languages_module():
    """`language_of` of a built-in suffix, before anything is registered, imports only
    `BUILT_IN_SUFFIXES`' module (a verb's start): the table must say what the modules'
    LANGUAGES say, and the language it finds is the registry's own."""
    import importlib

    L = importlib.import_module("gpusem.api.languages")  # api.languages: the function
    held = {s: module for module in L.BUILT_IN
            for lang in importlib.import_module(module).LANGUAGES for s in lang.suffixes}
    assert L.BUILT_IN_SUFFIXES == held
    for suffix, module in L.BUILT_IN_SUFFIXES.items():
        found = api.language_of(f"x{suffix}")
        assert found is api.languages()[found.name], suffix
        assert found in importlib.import_module(module).LANGUAGES


def test_a_new_language_is_one_registration_and_the_cli_takes_it(toy_language,
                                                                  tmp_path):
    good, bad = tmp_path / "a.toy", tmp_path / "b.toy"
    good.write_text("ok\n")
    bad.write_text("nope\n")
    assert api.check_file(str(good)).ok
    runner = CliRunner()
    res = runner.invoke(cli, ["check", str(good)])
    assert (res.exit_code, res.output) == (0, "ok: a toy\n")
    res = runner.invoke(cli, ["check", str(bad)])
    assert res.exit_code == 1 and "[Toy] not ok" in res.output
    # a verb the language has no handler for refuses its files in one line
    with pytest.raises(api.BadInput, match="run interprets"):
        api.run_file(str(good))


def test_a_suffix_belongs_to_one_language():
    with pytest.raises(ValueError, match=r"suffix \.bundl belongs to bundl"):
        api.register(api.Language("other", (".bundl",), lambda text, file: text))


def test_reports_are_frozen_and_typed():
    report = api.run_file(str(BUNDL / "map_double.bundl"))
    assert isinstance(report, api.RunReport)
    assert (report.exit_code, report.outcome) == (0, "terminated")
    assert report.memory["out"] == [2 * a for a in report.memory["A"]]
    assert report.stdout.endswith(f"terminated after {report.steps} steps\n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.exit_code = 3  # type: ignore[misc]
    check = api.check_file(str(BUNDL / "fig11_read_up.bundl"))
    assert not check.ok and check.exit_code == 1
    assert [e.rule for e in check.errors] == ["T-Var"]
    assert check.stderr and not check.stdout


def test_the_front_door_names_no_any():
    """Every public function of gpusem.api is annotated, and no annotation is Any."""
    for name in api.__all__:
        fn = getattr(api, name)
        if not inspect.isfunction(fn):
            continue
        sig = inspect.signature(fn)
        notes = [p.annotation for p in sig.parameters.values()]
        notes.append(sig.return_annotation)
        assert all(n is not inspect.Signature.empty for n in notes), name
        assert not any("Any" in str(n) for n in notes), (name, notes)


def test_a_campaign_runs_from_a_frozen_spec(tmp_path):
    spec = api.CampaignSpec("toys", max_programs=100, round_size=50,
                            out_dir=str(tmp_path))
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.seed = 1  # type: ignore[misc]
    seen = []
    result = api.campaign(spec, on_finding=seen.append)
    assert result.spec.props == ("compile",)  # the target's first, resolved
    assert result.params["properties"] == ["compile"]
    assert [f.signature for f in seen] == [f.signature for f in result.summary.findings]
    assert result.exit_code == 1 and seen
    with pytest.raises(api.BadInput, match="unknown property: nope"):
        api.campaign(dataclasses.replace(spec, props=("nope",)))


def test_parse_file_uses_each_languages_registered_parser():
    program = api.parse_file(str(BUNDL / "map_double.bundl"))
    assert type(program).__name__ == "Program"
    module = api.parse_file(str(ROOT / "examples/gpuir/fence_broadcast.gpuir"))
    assert type(module).__name__ == "Module"
    with pytest.raises(api.BadInput) as bad:
        api.parse_file(str(BUNDL / "bad_syntax.bundl"))
    assert "bad_syntax.bundl:" in bad.value.one_line()
    assert bad.value.one_line().endswith("syntax error: expected one of ';', got '}'")


def test_every_exported_name_exists_and_the_old_result_types_stay():
    """`gpusem.api` kept its names when it became a package (the campaign result types
    load lazily)."""
    assert [n for n in api.__all__ if not hasattr(api, n)] == []
    assert {"CampaignResult", "Reduced", "Replay", "TriageRow", "check", "compile",
            "exec", "fuzz", "generate", "load", "parse", "reduce", "replay", "run",
            "standalone", "target_properties", "triage"} <= set(api.__all__)


@pytest.mark.parametrize("path", ["examples/bundl/map_double.bundl",
                                  "examples/gpuir/fence_broadcast.gpuir"])
def test_a_reproducer_that_cannot_be_written_is_bad_input(path):
    """`compile --standalone -o` to a folder that does not exist was exit 3 (an
    internal error, a traceback's last frame); it is bad input, one line."""
    options = api.CompileOptions(output="/nonexistent/dir/repro.cu", standalone=True)
    with pytest.raises(api.BadInput, match="cannot write /nonexistent/dir/repro.cu"):
        api.compile_file(str(ROOT / path), options)
