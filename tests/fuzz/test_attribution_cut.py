"""Every final bundle of a target with `attribute` carries its attribution, also when
its shrink was cut (issue 23's "Done when"; stop 29: a 90 s cuda campaign reported 6
finding classes and attributed 3: the three whose shrinks the shrinker cut at the
deadline, or never began, had no `attribution.json`).

A new finding is attributed where it was found, at claim time (`Campaign._seen`),
and its attribution says which program it was computed for (`program`: "as found",
`program_sha256`); a cut bundle keeps it, on the local engine (`fuzz/shrinker.py`)
and on Dask (`engines/dask.py`), and the reports and `gpusem triage` show it."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from gpusem import api
from gpusem.fuzz.bundle import read_bundle
from gpusem.fuzz.client import run_campaign
from gpusem.fuzz.engines.local import LocalEngine
from gpusem.fuzz.reports import Report
from gpusem.fuzz.targets import register_target
from tests.fuzz.test_campaign import ToyTarget

BUDGET_S = 6.0
SLEEP_CAP_S = 60.0  # the endless reducer's own end, so no worker thread lives forever


class BlamedEndless(ToyTarget):
    """The toy (`wrong:big7`, `crash:long0`), blamed `ours` by `attribute` (which
    names the program it was given), with a reducer that does not end by itself
    before the campaign does: every shrink is cut, the first one mid-way (hypothesis
    has shrunk it: the bundle holds a partly shrunk program), the second never
    begun (the shrinker runs one job at a time)."""

    def minimise(self, program, res, prop="compile"):
        end = time.monotonic() + SLEEP_CAP_S
        while time.monotonic() < end:
            time.sleep(0.05)
        return res

    def attribute(self, result, prop):
        return {"verdict": "ours", "rule": "cpu-harness",
                "evidence": [f"toy: {result.files['program.json']}"], "seconds": 0.01}


register_target("blamedendless", BlamedEndless)


def spec(out: Path) -> dict:
    return {"target_name": "blamedendless", "backend": "cpu", "prop": "compile",
            "budget_s": BUDGET_S, "seed": 7, "shard": (0, 1),
            "out_dir": str(out), "round_size": 50}


def check_every_finding_attributed(summary, out: Path) -> int:
    """Asserts the above; returns how many bundles hold a partly shrunk program."""
    assert {f.signature for f in summary.findings} == {"wrong:big7", "crash:long0"}
    partly_shrunk = 0
    for f in summary.findings:
        b = read_bundle(f.bundle)
        assert b.meta["state"] == "done" and b.meta["shrink_cut"] is True, b.meta
        # `shrunk`: a step made before the cut (docs/reports.md)
        assert f.shrunk is b.meta["shrunk"] is (
            len(json.loads(b.files["program.json"])) < b.meta["size_before"])
        assert "attribution.json" in b.files, (f.signature, sorted(b.files))
        found = json.loads(b.files["attribution.json"])
        assert found["verdict"] == "ours" and found["program"] == "as found"
        assert b.meta["attribution"]["verdict"] == "ours"
        assert b.meta["attribution"]["program"] == "as found"
        assert f.attribution == "ours"
        # the attribution names the program it was computed for: the one found,
        # of size_before, which the toy's evidence quotes
        found_program = found["evidence"][0].removeprefix("toy: ")
        assert len(json.loads(found_program)) == b.meta["size_before"]
        digest = hashlib.sha256(found_program.encode()).hexdigest()
        assert found["program_sha256"] == digest
        now = b.files["program.json"]
        if now != found_program:  # the bundle holds a partly shrunk program
            partly_shrunk += 1
            assert len(json.loads(now)) < b.meta["size_before"]
            assert hashlib.sha256(now.encode()).hexdigest() != digest
            assert "as found" in b.files["README.md"]
    report = Report(summary, {"target": "blamedendless"})
    assert [f["attribution"] for f in report.as_json()["findings"]] == ["ours"] * 2
    sarif = report.as_sarif()["runs"][0]["results"]
    assert all(r["properties"]["attribution"] == "ours" for r in sarif)
    assert report.as_junit().count("attribution: ours") >= 2
    assert "\nattribution: ours 2\n" in report.as_text()
    rows = api.triage([out])
    assert sorted(r.attribution for r in rows) == ["ours", "ours"]
    return partly_shrunk


def test_cut_shrinks_keep_the_attribution_on_the_local_engine(tmp_path) -> None:
    summary = run_campaign(spec(tmp_path), LocalEngine(), 1)
    assert summary.seconds <= 1.1 * BUDGET_S, summary.seconds
    assert check_every_finding_attributed(summary, tmp_path) >= 1


def test_cut_shrinks_keep_the_attribution_on_dask(tmp_path) -> None:
    from gpusem.fuzz.engines.dask import DaskEngine

    engine = DaskEngine(jobs=2)
    try:
        summary = run_campaign(spec(tmp_path), engine, 1)
    finally:
        engine.close()
    assert not summary.failed, summary.failed
    check_every_finding_attributed(summary, tmp_path)


def test_a_finding_merged_without_a_verdict_takes_its_bundles(tmp_path) -> None:
    """A class met by two shards at once: the one that read the bundle before its
    writer attributed it has no verdict, and the merge may keep it (a tie in size
    keeps the first); the campaign's end takes the verdict the bundle records."""
    from gpusem.fuzz.bundle import BundleStore
    from gpusem.fuzz.client import with_recorded_attribution
    from gpusem.fuzz.summary import Finding, Summary

    meta = {"target": "toy", "backend": "cpu", "property": "compile",
            "signature": "wrong:big7", "kind": "wrong", "state": "done",
            "attribution": {"verdict": "ours", "rule": "cpu-harness",
                            "cause": "wrong:big7"}}
    path, _ = BundleStore(tmp_path).claim(meta, {"program.json": "[7, 43]"})
    writer = Finding("wrong:big7", "wrong", "d", 2, str(path), False, 1.0,
                     attribution="ours", cause="wrong:big7")
    elsewhere = Finding("wrong:big7", "wrong", "d", 2, str(path), False, 0.5)
    total = Summary()
    for part in (elsewhere, writer):
        total.merge(Summary(findings=[part]))
    assert total.findings[0].attribution == ""  # the tie kept the first
    with_recorded_attribution(total)
    assert (total.findings[0].attribution, total.findings[0].cause) == (
        "ours", "wrong:big7")


class SelfAttributing(ToyTarget):
    """The toy whose check attributes its findings itself (as the Bundl `toolchain`
    property does), with no `attribute` of its own."""

    def _verdict(self, xs):
        res = super()._verdict(xs)
        if res.status == "finding":
            blame = {"verdict": "ptxas", "rule": "ptxas-O0", "evidence": ["toy"]}
            res.files["attribution.json"] = json.dumps(blame) + "\n"
        return res


register_target("selfattributing", SelfAttributing)


def test_an_attribution_the_check_made_names_its_program(tmp_path) -> None:
    from gpusem.fuzz.campaign import Campaign

    summary = Campaign(target_name="selfattributing", budget_s=60, seed=7,
                       out_dir=str(tmp_path), max_programs=100, round_size=50).run()
    assert summary.findings
    for f in summary.findings:
        b = read_bundle(f.bundle)
        found = json.loads(b.files["attribution.json"])
        digest = hashlib.sha256(b.files["program.json"].encode()).hexdigest()
        assert found["program_sha256"] == digest, f.signature
        assert found["program"] == ("shrunk" if f.size < f.size_before
                                    else "as found")
        assert b.meta["attribution"]["of_this_program"] is True
        assert f.attribution == "ptxas"
