"""`gpusem triage --redecide [--write]` (fuzz/redecide.py): stored bundles decided
again under today's attribution rules from their stored evidence, no GPU; --write
rewrites the attribution in place, the old verdict kept as `attribution_history`; a
resumed campaign's summary groups a bundle by its attribution now (issue 23 item B:
bundles recorded at stop 28 as `toolchain gpusem` / `toolchain nondeterministic` are
NVVM's under today's rules)."""

from __future__ import annotations

import json

import pytest
from gpusem import api
from gpusem.compiler.backends.toolchain import StaticFailure
from gpusem.fuzz.attribution import Attribution, Evidence, Observation, report
from gpusem.fuzz.bundle import write_bundle
from gpusem.fuzz.driver import earlier_findings
from gpusem.fuzz.redecide import HISTORY, redecide
from gpusem.fuzz.reports import Report
from gpusem.fuzz.summary import Summary

import tests.fuzz.toys  # noqa: F401 - registers the `toys` target

NC = StaticFailure("ld.nc-read-only", "nvrtc 13.0", 154, "ld.global.nc.u32 %r71, [%rd6]")
WRONG = Observation("wrong", "f1", "out[3]", "out[3]")


def _bundle(out, verdict: str, rule: str, config: str, runs: dict, static,
            extra: dict | None = None):
    """A bundle of the `toys` target as a campaign writes it, its attribution
    decided (`verdict`, `rule`) by the rules of the day it was found."""
    found = report(Attribution(verdict, rule, ("as recorded",)),
                   Evidence("nvrtc", runs, static), 0.0, {}) | (extra or {})
    cause = f"{verdict}:ld.nc-read-only" if static else f"compile:{verdict}:{config}"
    meta = {"target": "toys", "backend": "cuda", "property": "compile",
            "signature": f"compile:{verdict}:{config}", "kind": f"compile {verdict}",
            "detail": "d", "size": 2, "state": "done",
            "attribution": {"verdict": verdict, "rule": rule, "seconds": 0.0,
                            "cause": cause}}
    files = {"program.json": "[7, 43]", "attribution.json":
             json.dumps(found, indent=1, sort_keys=True) + "\n"}
    return write_bundle(out, meta, files)


def _stop28(out):
    """Stop 28's verdict on T1's shape (the reference's second path, undecided race
    verdict, blamed on gpusem), and a bundle already NVVM's."""
    gpu = {"nvrtc": [WRONG], "nvcc-O3": [WRONG], "ptx-jit": [WRONG],
           "no-restrict": [Observation("right")]}
    old = _bundle(out, "gpusem", "second-reference", "nvrtc+nvcc-O3+ptx-jit", gpu, [NC])
    nvvm = _bundle(out, "nvvm", "static-ptx", "nvrtc", gpu, [NC])
    return old, nvvm


def test_redecide_reports_without_writing(tmp_path) -> None:
    old, nvvm = _stop28(tmp_path)
    before = {p: p.joinpath(f).read_bytes() for p in (old, nvvm)
              for f in ("bundle.json", "attribution.json")}
    found = {r.bundle: r for r in redecide([tmp_path])}
    r = found[str(old)]
    assert (r.before, r.before_rule, r.after, r.after_rule) == (
        "gpusem", "second-reference", "nvvm", "static-ptx")
    assert r.changed and not r.written and r.needs == ""
    assert not found[str(nvvm)].changed
    assert {p: p.joinpath(f).read_bytes() for p in (old, nvvm)
            for f in ("bundle.json", "attribution.json")} == before


def test_write_rewrites_the_attribution_and_keeps_the_old(tmp_path) -> None:
    old, _ = _stop28(tmp_path)
    sig = json.loads((old / "bundle.json").read_text())["signature"]
    (r,) = [r for r in api.redecide([tmp_path], write=True) if r.changed]
    assert r.written
    meta = json.loads((old / "bundle.json").read_text())
    found = json.loads((old / "attribution.json").read_text())
    assert found["verdict"] == "nvvm" and found["rule"] == "static-ptx"
    assert meta["attribution"]["verdict"] == "nvvm"
    assert meta["attribution"]["cause"] == "nvvm:ld.nc-read-only"
    assert meta["kind"] == "compile nvvm"  # the kind named the verdict
    assert meta["signature"] == sig and old.is_dir()  # identity kept
    (entry,) = meta[HISTORY]
    assert entry["verdict"] == "gpusem" and entry["rule"] == "second-reference"
    assert entry["kind"] == "compile gpusem"
    assert entry["redecided_at"].startswith("20") and entry["gpusem_version"]
    assert found[HISTORY] == meta[HISTORY]
    assert "nvvm" in (old / "README.md").read_text()
    # decided again today: nothing changes, nothing is added to the history
    assert not any(r.changed for r in redecide([tmp_path], write=True))
    assert len(json.loads((old / "bundle.json").read_text())[HISTORY]) == 1


def test_a_resumed_summary_groups_by_the_attribution_now(tmp_path) -> None:
    old, nvvm = _stop28(tmp_path)
    redecide([tmp_path], write=True)
    earlier = earlier_findings(str(tmp_path), "toys", ["compile"], Summary())
    by = {f.bundle: f for f in earlier.findings}
    assert by[str(old)].attribution == "nvvm"
    assert by[str(old)].cause == by[str(nvvm)].cause == "nvvm:ld.nc-read-only"
    total = Summary()
    total.merge(earlier)
    text = Report(total, {"target": "toys"}).as_text()
    assert "compile gpusem" not in text
    assert "attribution: nvvm 2" in text
    assert "cause nvvm:ld.nc-read-only: 2 signatures, one bug" in text


def test_a_decision_that_needs_the_toolchain_is_not_written(tmp_path) -> None:
    """Today's verdict `ptxas` (ptxas-O0) would quote the SASS and carry the static
    SASS check, which the bundle did not record: shown, not written."""
    runs = {"nvrtc": [WRONG], "nvcc-O3": [WRONG], "ptxas-O0": [Observation("right")]}
    b = _bundle(tmp_path, "undecided", "undecided", "nvrtc", runs, [])
    before = (b / "bundle.json").read_bytes()
    (r,) = redecide([tmp_path], write=True)
    assert (r.after, r.after_rule) == ("ptxas", "ptxas-O0")
    assert not r.written and "gpusem replay" in r.needs
    assert (b / "bundle.json").read_bytes() == before


def test_cli_redecide(tmp_path, monkeypatch, capsys) -> None:
    from gpusem.cli.main import main

    old, _ = _stop28(tmp_path)
    monkeypatch.setattr("sys.argv", ["gpusem", "triage", "--redecide", "--write",
                                     str(tmp_path)])
    main()
    out = capsys.readouterr().out
    assert (f"{old.name}: gpusem (second-reference) -> nvvm (static-ptx); written"
            in out)
    assert out.strip().endswith("2 attributed bundles, 1 decided otherwise today, "
                                "1 rewritten, 0 need a GPU re-run")
    monkeypatch.setattr("sys.argv", ["gpusem", "triage", "--write", str(tmp_path)])
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 2


def test_bundl_recomputes_the_second_path_from_the_stored_program() -> None:
    from pathlib import Path

    from gpusem.fuzz.bundl.target import BundlTarget

    text = (Path(__file__).parents[2] / "examples" / "bundl" / "map_double.bundl"
            ).read_text()
    assert BundlTarget().second_reference_of({"program.json": "[]"}) is None
    # both reference paths agree on a race-free example: no second path to blame
    assert BundlTarget().second_reference_of({"program.bundl": text}) is None
