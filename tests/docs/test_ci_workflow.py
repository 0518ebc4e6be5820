"""The shipped CI workflow (docs/ci/gpusem-fuzz.yml, issue 32.2) runs as shipped:
gpusem installed from its repository (it is on no package index), the current major
of `upload-sarif`, no SARIF upload from a fork's pull request, every gpusem command
and option it uses known to the CLI; and its steps run end to end on this machine
through scripts/ci_workflow_local.py (no GPU, no GitHub)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner
from gpusem.cli.main import VERBS, cli

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
FLOW = ROOT / "docs" / "ci" / "gpusem-fuzz.yml"
SCRIPT = ROOT / "scripts" / "ci_workflow_local.py"


def steps() -> list[dict]:
    return yaml.safe_load(FLOW.read_text())["jobs"]["fuzz"]["steps"]


def local():
    return load_script("ci_workflow_local")


def gpusem_commands(script: str) -> list[list[str]]:
    """Each `gpusem VERB ...` command of a step's shell script, its words."""
    joined = script.replace("\\\n", " ")
    return [shlex.split(line.strip())[0:] for line in joined.splitlines()
            if line.strip().startswith("gpusem ")]


def test_gpusem_is_installed_from_its_repository_never_from_an_index() -> None:
    install = next(s["run"] for s in steps() if "pip install" in s.get("run", ""))
    assert re.search(r"pip install \"gpusem @ git\+\$\{GPUSEM_REPO\}@\$\{GPUSEM_REF\}\"",
                     install), install
    assert not re.search(r"pip install gpusem\b", install)  # not on PyPI
    env = yaml.safe_load(FLOW.read_text())["env"]
    assert env["GPUSEM_REPO"].startswith("https://github.com/")
    quick = (ROOT / "docs" / "quickstart.md").read_text()
    assert "pip install gpusem\n" not in quick
    assert "git+https://github.com/gpusem/gpusem" in quick


def test_upload_sarif_is_the_current_major_and_skips_forks(tmp_path) -> None:
    (upload,) = [s for s in steps() if "upload-sarif" in s.get("uses", "")]
    assert upload["uses"] == "github/codeql-action/upload-sarif@v4"  # v3: deprecated
    cond = " ".join(upload["if"].split())
    assert ("github.event.pull_request.head.repo.full_name == github.repository"
            in cond)
    ci = local()
    same = {"event_name": "pull_request", "repository": "t/c",
            "event.pull_request.head.repo.full_name": "t/c"}
    assert ci.condition(upload["if"], False, same, tmp_path) is False  # no report
    (tmp_path / "gpusem.sarif").write_text("{}")
    for fork, runs in ((False, True), (True, False)):
        github = same | {"event.pull_request.head.repo.full_name":
                         "x/c" if fork else "t/c"}
        # after a failed campaign (exit 1) too: always()
        assert ci.condition(upload["if"], False, github, tmp_path) is runs
    github = {"event_name": "workflow_dispatch", "repository": "t/c"}
    assert ci.condition(upload["if"], True, github, tmp_path) is True


def test_every_gpusem_command_and_option_of_the_workflow_exists() -> None:
    commands = [c for s in steps() if "run" in s for c in gpusem_commands(s["run"])]
    assert commands, "the workflow runs no gpusem command"
    for words in commands:
        verb = words[1]
        assert verb in VERBS, verb
        helptext = CliRunner().invoke(cli, [verb, "--help"]).output
        for option in (w for w in words if w.startswith("--")):
            assert re.search(rf"(^|\s){re.escape(option)}[\s,=]", helptext), option
    script = next(s["run"] for s in steps() if s.get("name") == "Campaign")
    assert "--baseline gpusem-known" in script  # known findings pass (32.7)


def test_the_workflow_runs_end_to_end_here(tmp_path) -> None:
    """Every step of the job, in a fresh venv holding gpusem built from this
    checkout: the campaign compares programs and finds nothing (exit 0), the SARIF
    it would upload is SARIF 2.1.0, the artifact's paths exist."""
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--work", str(tmp_path / "w"), "--budget", "5m",
         "--campaign-args", "--max-programs 12 --round-size 6"],
        capture_output=True, text=True, timeout=880, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr[-3000:]
    assert "job fuzz: succeeded" in out
    assert f"gpusem from {tmp_path / 'w' / '.venv'}" in out  # built, not this tree
    for name in ("Install gpusem (and your target's package)", "Campaign",
                 "Upload SARIF", "Keep the bundles"):
        assert f"step {name}: exit 0" in out, out
    assert "upload-sarif: gpusem.sarif: SARIF 2.1.0, 0 results" in out
    assert (tmp_path / "w" / "gpusem.json").is_file()
