"""Bounded `compile` campaigns of the Bundl target, as CI runs them (issue 5): the
oracle raises no false alarm on generated programs, and a seeded compiler fault is
found, shrunk, bundled and replayed."""

from __future__ import annotations

import subprocess

from click.testing import CliRunner
from gpusem.cli.main import cli
from gpusem.fuzz.bundle import list_bundles
from gpusem.fuzz.campaign import Campaign


def test_bounded_campaign_on_the_correct_compiler_finds_nothing(tmp_path) -> None:
    summary = Campaign("bundl", prop="compile", budget_s=90, max_programs=200, seed=11,
                       out_dir=str(tmp_path), round_size=100).run()
    assert summary.programs >= 200
    assert summary.programs - summary.invalid >= 150  # most were really compared
    assert summary.findings == [], [f.detail for f in summary.findings]


def test_bounded_campaign_finds_a_seeded_fault_and_the_bundle_replays(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GPUSEM_FAULT", "floor-division")
    # the shrink is given time enough to end by itself (at its fixpoint or its
    # candidate cap, BundlTarget.shrink_max_tried): where it was 10 s of wall time, a
    # loaded machine cut it unshrunk and the test reduced the bundle again from
    # scratch below (a second, longer shrink)
    monkeypatch.setenv("GPUSEM_SHRINK_S", "120")
    # one round of 15 at seed 1 (it was 100 at seed 3, whose first `value` finding was
    # its 30th program): the 4th program already miscomputes a `/` (17 statements,
    # shrunk below), so the rest of the round costs checks and shows nothing new
    summary = Campaign("bundl", prop="compile", budget_s=90, max_programs=15, seed=1,
                       out_dir=str(tmp_path), round_size=15).run()
    assert summary.findings, "floor division (C truncates) went unnoticed"
    # the wrong value itself (other classes, e.g. a `stale` cell, may be met too)
    found = min((f for f in summary.findings if f.signature.endswith(":int:value")),
                key=lambda f: f.size)
    assert found.kind == "compile disagree" and found.shrunk
    assert found.size_before >= 10  # a real shrink: the program as found was big
    bundle = next(b for b in list_bundles(tmp_path) if b.signature == found.signature)
    size = found.size
    if size > 4:  # the campaign's 10 s of shrinking is wall-clock: under load (~15 on
        # 2 cores) it stopped at 18 statements once; the reducer bounded by its
        # candidate cap (BundlTarget.shrink_max_tried), which load does not move, must
        # still get there
        from gpusem.fuzz.reduce import reduce_bundle

        reduced = reduce_bundle(bundle.path, budget_s=900)
        assert reduced.signature == found.signature
        size = reduced.after
    assert size <= 4  # a wrong `/` or `%` needs no scaffolding
    assert bundle.meta["fault"] == "floor-division"
    # without a GPU: the bundle's repro_cpu.cpp, built as its README says, fails
    cpu_cmd = bundle.meta["cpu_command"]
    assert f"`{cpu_cmd}`" in bundle.files["README.md"]
    build = subprocess.run(cpu_cmd.split(), cwd=bundle.path, capture_output=True,
                           text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    ran = subprocess.run(["./repro_cpu"], cwd=bundle.path, capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode == 1 and ran.stdout.startswith("mismatch:"), ran.stdout
    for made in ("repro_cpu",):  # not a bundle file: replay reads text files only
        (bundle.path / made).unlink()
    monkeypatch.delenv("GPUSEM_FAULT")  # replay re-applies the bundle's fault itself
    res = CliRunner().invoke(cli, ["replay", str(bundle.path)])
    assert res.exit_code == 1 and res.output.startswith("reproduces"), res.output
