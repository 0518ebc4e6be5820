"""The `lambdacu` fuzz target (issue 29 item 5, step 3): registered as an entry point,
a short clean campaign on the cpu harness, and a finding's bundle: its repro.cu
builds with g++ alone and fails, and it replays under the bundle's fault only."""

import subprocess
import tomllib
from pathlib import Path

from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.compiler.backends.cpu import CXX
from gpusem.fuzz.campaign import Campaign
from gpusem.fuzz.lambdacu.target import LambdacuTarget
from gpusem.fuzz.targets import register_target

from tests.lambdacu.test_cuda_cli import SCAN

ROOT = Path(__file__).resolve().parents[2]
ENTRY = "gpusem.fuzz.lambdacu.target:LambdacuTarget"


def test_the_target_is_an_entry_point():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["gpusem.targets"]["lambdacu"] == ENTRY


def test_short_clean_campaign(tmp_path):
    register_target("lambdacu", ENTRY)  # the installed metadata may predate it
    summary = Campaign("lambdacu", prop="compile", budget_s=120, max_programs=6,
                       seed=2, out_dir=str(tmp_path), round_size=6).run()
    assert summary.programs >= 6 and summary.invalid == 0
    assert summary.findings == [], [f.detail for f in summary.findings]


def test_printparse_holds():
    program = parse_program(SCAN, "scan.lcu")
    assert LambdacuTarget().check(program, "printparse").status == "pass"


def test_a_finding_bundles_a_failing_repro_and_replays(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSEM_FAULT", "scan-exclusive")
    target = LambdacuTarget()
    found = target.check(parse_program(SCAN, "scan.lcu"))
    assert found.status == "finding"
    assert found.signature == "lambdacu:compile:mismatch"
    assert "main = [4, 9, 15]" in found.files["expected.txt"]
    assert "main = [0, 4, 9]" in found.files["actual.txt"]
    (tmp_path / "repro.cu").write_text(found.files["repro.cu"])
    subprocess.run([CXX, "-std=c++17", "-O1", "-ffp-contract=off", "-x", "c++",
                    "repro.cu", "-o", "repro"], cwd=tmp_path, check=True,
                   capture_output=True)
    ran = subprocess.run(["./repro"], cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 1 and "mismatch" in ran.stdout
    meta = {"fault": "scan-exclusive", "property": "compile"} | target.finding_meta(
        found)
    monkeypatch.delenv("GPUSEM_FAULT")
    assert target.replay(found.files, meta).status == "finding"
    assert target.replay(found.files, {"property": "compile"}).status == "pass"
