"""results/exo/FINDINGS.md says what `gpusem replay` does on each committed bundle (its
table "What `gpusem replay` says today"); this runs the real `gpusem replay` on every
row, in CI, without Exo: Exo's side answers from its recorded output (`BundleExo`),
gpusem's side is computed now. A change to gpusem's checker that turns a finding
around, or a FINDINGS line that a replay no longer bears out, fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from gpusem.cli.main import cli

from tests.exo.fake import BundleExo

EXO = Path(__file__).resolve().parents[2] / "results" / "exo"
FINDINGS = EXO / "FINDINGS.md"
ROW = re.compile(r"^\| (\w+) \| `([\w/.-]+)` \| (pldi26|endgame) \| (.+?) \|$")
CITED = re.compile(r"((?:findings|fuzz)_(?:pldi26|endgame|\*|\{pldi26,endgame\})/"
                   r"exo-[\w-]+|h100/bundles_compile/exo-[\w-]+)")


def rows() -> list[tuple[str, str, str, str]]:
    text = FINDINGS.read_text().split("## What `gpusem replay` says today", 1)[1]
    return [m.groups() for line in text.splitlines()  # type: ignore[misc]
            if (m := ROW.match(line))]


def bundles_on_disk() -> set[str]:
    return {str(p.parent.relative_to(EXO)) for p in EXO.rglob("bundle.json")}


def test_every_bundle_has_a_row_and_every_row_a_bundle():
    named = {bundle for _, bundle, _, _ in rows()}
    assert len(rows()) >= 25
    assert named == bundles_on_disk()


def test_every_bundle_the_text_cites_is_in_the_table():
    named = {bundle for _, bundle, _, _ in rows()}
    for cited in set(CITED.findall(FINDINGS.read_text())):
        stem, _, name = cited.partition("/")
        if stem.startswith(("findings_*", "findings_{", "fuzz_*", "fuzz_{")):
            kind = stem.split("_")[0]
            found = {f"{kind}_{b}/{name}" for b in ("pldi26", "endgame")} & named
            assert found, cited
        else:
            assert cited in named, cited


def _replay(bundle: Path, branch: str, monkeypatch):
    meta = json.loads((bundle / "bundle.json").read_text())
    # the bundle's own record of Exo's verdict holds for the branch that recorded it
    recorded = json.loads((bundle / "verdicts.json").read_text())["exo"] \
        if meta["exo"]["dialect"] == branch else None
    monkeypatch.setattr("gpusem.fuzz.exo.target.ExoDriver",
                        lambda timeout=60.0: BundleExo(branch, recorded))
    monkeypatch.delenv("GPUSEM_EXO_PYTHON", raising=False)
    return meta, CliRunner().invoke(cli, ["replay", str(bundle)])


VERDICT_ROWS = [r for r in rows() if r[3].endswith(")")]


@pytest.mark.parametrize("entry,bundle,branch,says", VERDICT_ROWS,
                         ids=[f"{r[0]}-{r[1].split('/')[0]}-{r[2]}" for r in VERDICT_ROWS])
def test_the_replay_says_what_findings_says(entry, bundle, branch, says, monkeypatch):
    meta, res = _replay(EXO / bundle, branch, monkeypatch)
    if says == "reproduces (exit 1)":
        assert res.exit_code == 1, res.output
        assert res.output.startswith(f"reproduces: {meta['signature']}: "), res.output
        return
    m = re.fullmatch(r"does not reproduce, now (\w+) \(exit (0|125)\)", says)
    assert m, f"{entry}: a replay column FINDINGS.md cannot say: {says!r}"
    # issue 32.3: only a run that now passes is fixed (0); a program now set aside
    # (invalid) cannot test the bug (125: git bisect skips it)
    assert m[2] == ("0" if m[1] == "pass" else "125"), says
    assert res.exit_code == int(m[2]), res.output
    assert res.output.startswith(f"does not reproduce: expected {meta['signature']}, "
                                 f"now {m[1]} "), res.output


COMPILE_ROWS = [r for r in rows() if not r[3].endswith(")")]


@pytest.mark.parametrize("entry,bundle,branch,says", COMPILE_ROWS)
def test_a_compile_bundle_is_now_set_aside(entry, bundle, branch, says):
    """Replaying a `compile` bundle needs Exo and an H100; what changed since it was
    recorded is gpusem's side, which this checks: the oracle no longer compares it."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.interpreter.gpuir.sequential import reads_uninitialised, run_sequential

    m = re.fullmatch(r"not compared now: uninitialised (\w+\[\d+\])", says)
    assert m, f"{entry}: a replay column FINDINGS.md cannot say: {says!r}"
    d = EXO / bundle
    assert json.loads((d / "bundle.json").read_text())["property"] == "compile"
    proc = parse_module((d / "program.gpuir").read_text(), "program.gpuir").procs[-1]
    defines = json.loads((d / "defines.json").read_text())
    inputs = {k: np.asarray(v, dtype=np.float32)
              for k, v in json.loads((d / "inputs.json").read_text()).items()}
    expected = run_sequential(proc, defines, inputs)
    assert reads_uninitialised(proc, defines, inputs, expected) == m[1]


def test_an_exo_bundle_without_exo_cannot_be_tested(monkeypatch):
    """Issue 32.3: no Exo-GPU here: replay cannot test the bundle (125, which git
    bisect skips), where it said "bad input" (2, which bisect reads as bad)."""
    bundle = next(EXO.glob("findings_pldi26/exo-*/"))
    monkeypatch.setenv("GPUSEM_EXO_PYTHON", "/nonexistent/python")
    res = CliRunner().invoke(cli, ["replay", str(bundle)])
    assert res.exit_code == 125, res.output
    assert res.output.startswith("cannot test: ") and "target unavailable" in res.output


def test_exo_reads_its_bundles_back_for_reduce():
    """`gpusem reduce` of an exo bundle: the target reads the program back as text
    with its sizes (`load_program`), what its reducer takes."""
    from gpusem.fuzz.exo.target import ExoTarget

    bundle = next(EXO.glob("findings_pldi26/exo-*/"))
    files = {p.name: p.read_text() for p in bundle.iterdir() if p.is_file()}
    target = ExoTarget(driver=BundleExo("pldi26", None))
    program = target.load_program(files, json.loads(files["bundle.json"]))
    assert program.source() == files["program.gpuir"]
    assert program.defines() == json.loads(files.get("defines.json", "{}"))
