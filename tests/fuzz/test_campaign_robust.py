"""The campaign never loses a finding and never invents one (issue 15): crashes of
gpusem are findings of kind `internal` (exit 3), timeouts are confirmed before they are
reported, a kill while shrinking loses nothing, SIGINT/SIGTERM write the summary and
the reports, `--resume` continues where a campaign stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gpusem.fuzz.bundle import list_bundles, read_bundle
from gpusem.fuzz.campaign import Campaign

import tests.fuzz.toys  # noqa: F401 - registers the toy targets
from tests.child_signals import default_sigint

ROOT = Path(__file__).resolve().parents[2]


def run(tmp_path, target, **kw):
    args = {"target_name": target, "budget_s": 60, "seed": 5, "out_dir": str(tmp_path),
            "max_programs": 200, "round_size": 50} | kw
    return Campaign(**args).run()


def test_a_check_that_always_raises_is_an_internal_finding(tmp_path) -> None:
    s = run(tmp_path, "toy-raises", max_programs=100)
    assert s.programs == 100  # every program counted, none silently dropped
    (f,) = s.findings
    assert f.kind == "internal" and f.signature.startswith("internal:RuntimeError:")
    assert f.duplicates == 99 and f.size == 0  # shrunk to the empty list
    (b,) = list_bundles(tmp_path)
    assert "boom in check" in b.files["trace.txt"] and "program.json" in b.files
    assert b.meta["state"] == "done"


def test_one_check_in_five_raising_cuts_nothing(tmp_path) -> None:
    s = run(tmp_path, "toy-sometimes")
    assert s.programs == 200
    sigs = {f.signature for f in s.findings}
    assert "wrong:big7" in sigs  # the real bug is still found
    internal = [f for f in s.findings if f.kind == "internal"]
    assert len(internal) == 1 and internal[0].size == 3
    assert s.outcomes["compile"]["finding"] > internal[0].duplicates


def test_a_crash_of_the_batch_check_is_a_finding_and_the_round_goes_on(tmp_path) -> None:
    s = run(tmp_path, "toy-prefetch-crash")
    assert s.programs == 200
    sigs = {f.signature for f in s.findings}
    assert "wrong:big7" in sigs
    assert any(sig.startswith("internal:prefetch:ValueError") for sig in sigs)


def test_timeouts_are_reported_only_when_they_happen_again(tmp_path) -> None:
    s = run(tmp_path, "toy-timeout", max_programs=400)
    assert s.unconfirmed > 0  # the flaky ones: re-checked, passed, not reported
    timeouts = [f for f in s.findings if "timeout" in f.signature]
    assert len(timeouts) == 1  # the real hang (a 42 in the list), shrunk to [42]
    assert timeouts[0].kind == "timeout"  # confirmed, and classified so
    program = json.loads(read_bundle(timeouts[0].bundle).files["program.json"])
    assert program == [42]


def test_coverage_is_counted_per_property(tmp_path) -> None:
    s = run(tmp_path, "toy-cover", coverage=True, max_programs=100)
    table = s.coverage["compile"]
    assert s.coverage_programs["compile"] == 100 and sum(table.values()) == 100
    assert set(table) == {"empty", "nonempty", "never"} and table["never"] == 0
    per = s.coverage_per_10k("compile")
    assert abs(sum(per.values()) - 10_000) < 1
    assert run(tmp_path / "b", "toys", coverage=True, max_programs=50).coverage == {}


def gpusem(*args: str, env: dict | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.fuzz.toys", *args], cwd=ROOT,
                            env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint, **kw)


def wait_for(cond, timeout: float = 60.0) -> None:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, "timed out waiting"
        time.sleep(0.1)


@pytest.mark.parametrize(("sig", "code", "jobs"), [
    (signal.SIGINT, 130, "1"), (signal.SIGTERM, 143, "1"), (signal.SIGTERM, 143, "2")])
def test_a_signal_writes_the_summary_and_the_reports(tmp_path, sig, code, jobs) -> None:
    out = tmp_path / "out"
    p = gpusem("fuzz", "--target", "toys", "--budget", "10m", "--out", str(out),
               "--round-size", "5", "--json", str(tmp_path / "r.json"), "--junit",
               str(tmp_path / "r.xml"), "--jobs", jobs, env={"TOY_SLOW": "0.05"})
    wait_for(lambda: len(list((out / ".gpusem" / "progress").glob("*.json")))
             >= int(jobs))
    p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=60)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["interrupted"] == sig.name
    assert (out / "summary.json").is_file() and (out / "summary.txt").is_file()
    assert (tmp_path / "r.xml").read_text().startswith("<?xml")
    expected = 1 if report["findings"] else code
    assert p.returncode == expected == report["exit_code"], stderr
    assert report["counts"]["programs"] >= 5 * int(jobs)  # every shard's part merged
    assert "Traceback" not in stderr


def test_a_kill_while_shrinking_loses_nothing_and_resume_goes_on(tmp_path) -> None:
    out = tmp_path / "out"
    p = gpusem("fuzz", "--target", "toys", "--budget", "10m", "--out", str(out),
               "--max-programs", "300", "--round-size", "50",
               env={"TOY_SLOW_SHRINK": "30"})
    wait_for(lambda: any(out.glob("toys-*/bundle.json")))
    time.sleep(0.5)
    p.kill()  # SIGKILL: no handler runs
    p.communicate(timeout=30)
    (b,) = list_bundles(out)
    assert b.signature == "wrong:big7" and b.meta["state"] == "shrinking"
    program = json.loads(b.files["program.json"])
    assert 7 in program and sum(program) >= 50  # the finding as first seen, whole

    p = gpusem("fuzz", "--resume", "--out", str(out), "--budget", "10m",
               "--max-programs", "300", "--json", str(tmp_path / "r.json"))
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 1, stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["campaign"]["resumed"] and report["counts"]["programs"] >= 300
    (f,) = report["findings"]
    assert f["signature"] == "wrong:big7" and not f["new"]  # the bundle stands
    assert len(list_bundles(out)) == 1


def test_resume_checks_the_same_programs_as_one_run(tmp_path) -> None:
    whole = run(tmp_path / "whole", "toys", max_programs=300)
    run(tmp_path / "parts", "toys", max_programs=100)
    rest = run(tmp_path / "parts", "toys", max_programs=300, resume=True)
    assert rest.programs == whole.programs == 300
    assert rest.outcomes == whole.outcomes
    assert {f.signature for f in rest.findings} <= {f.signature for f in whole.findings}


def test_a_plugins_own_crash_is_a_target_crash_finding_not_gpusems(tmp_path) -> None:
    """Issue 32.12: a plugin compiler's crash is attributed to the target (kind
    `target-crash`, exit 1), not reported as gpusem's internal error (exit 3)."""
    from gpusem.fuzz.reports import exit_code

    s = run(tmp_path / "plugin", "toy-plugin-crash")
    kinds = {f.kind: f for f in s.findings}
    assert set(kinds) == {"wrong", "target-crash"} and not s.internal
    crash = kinds["target-crash"]
    assert crash.signature.startswith("target-crash:RuntimeError:toys.check")
    assert crash.detail.startswith("toy-plugin-crash crashed: RuntimeError:")
    assert exit_code(s) == 1
    s = run(tmp_path / "ours", "toy-plugin-gpusem-bug")
    (bug,) = s.internal  # gpusem's own code raised: still gpusem's bug, exit 3
    assert bug.signature.startswith("internal:TypeError:")
    assert exit_code(s) == 3
