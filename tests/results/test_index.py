"""results/ is readable (issue 25 item 4): every file and folder under it is described
by its subject's INDEX.toml (what, command, device, date, current or superseded),
nothing lies loose at its top, no bundle is kept twice, results/INDEX.md is what
scripts/results_index.py writes from that metadata, and every file taken out of the
tree is in the commit its entry names."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "results_index.py"

ENTRY = """
[[result]]
path = "{path}"
what = "a measure"
command = "python make.py"
device = "the dev machine"
date = "2026-11-28"
status = "current"
"""


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_committed_results_are_indexed_and_the_index_current():
    proc = run("--check")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_every_removed_file_is_in_the_commit_its_entry_names():
    removed = [(d.name, r) for d in sorted((ROOT / "results").iterdir()) if d.is_dir()
               for r in tomllib.loads((d / "INDEX.toml").read_text()).get("removed", [])]
    assert len(removed) >= 10
    for subject, r in removed:
        spec = f"{r['commit']}:results/{r['path'].rstrip('/')}"
        git = subprocess.run(["git", "cat-file", "-e", spec], cwd=ROOT, check=False,
                             capture_output=True)
        assert git.returncode == 0, f"{subject}: {spec} is not in git"


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "results"
    (root / "x").mkdir(parents=True)
    (root / "x" / "a.json").write_text("{}")
    (root / "x" / "INDEX.toml").write_text('subject = "x things"\n'
                                           + ENTRY.format(path="a.json"))
    assert run("--root", str(root)).returncode == 0  # writes INDEX.md
    assert run("--root", str(root), "--check").returncode == 0
    return root


def check(root: Path) -> tuple[int, str]:
    proc = run("--root", str(root), "--check")
    return proc.returncode, proc.stdout


def test_a_stale_index_fails(tree):
    toml = tree / "x" / "INDEX.toml"
    toml.write_text(toml.read_text().replace("a measure", "another measure"))
    stale = "results/INDEX.md is stale: run python scripts/results_index.py\n"
    assert check(tree) == (1, stale)


def test_a_loose_file_at_the_top_fails(tree):
    (tree / "bench_run2.json").write_text("{}")
    code, out = check(tree)
    assert code == 1 and out.startswith("results/bench_run2.json: a file at results/")


def test_a_file_without_metadata_fails(tree):
    (tree / "x" / "b.json").write_text("{}")
    code, out = check(tree)
    assert code == 1 and "results/x/b.json: no metadata" in out


def test_a_folder_entry_covers_its_files_and_a_missing_key_fails(tree):
    (tree / "x" / "runs").mkdir()
    (tree / "x" / "runs" / "r.log").write_text("log")
    toml = tree / "x" / "INDEX.toml"
    toml.write_text(toml.read_text() + ENTRY.format(path="runs/").replace(
        'device = "the dev machine"\n', ""))
    run("--root", str(tree))
    code, out = check(tree)
    assert (code, out) == (1, "results/x/INDEX.toml: [[result]] #2 (runs/): no device\n")


def test_a_subject_without_metadata_and_an_entry_naming_nothing_fail(tree):
    (tree / "y").mkdir()
    (tree / "y" / "c.json").write_text("{}")
    toml = tree / "x" / "INDEX.toml"
    toml.write_text(toml.read_text() + ENTRY.format(path="gone.json"))
    code, out = check(tree)
    assert code == 1
    assert "results/y/: a subject folder without INDEX.toml" in out
    assert "[[result]] #2 (gone.json): names nothing" in out


def test_a_bundle_kept_twice_fails(tree):
    for d in ("x/one/b-1", "x/two/b-1"):
        (tree / d).mkdir(parents=True)
        (tree / d / "bundle.json").write_text(
            f'{{"signature": "s", "target": "t", "seed": {len(d)}}}')
        (tree / d / "program.txt").write_text("p")
    toml = tree / "x" / "INDEX.toml"
    toml.write_text(toml.read_text() + ENTRY.format(path="one/")
                    + ENTRY.format(path="two/"))
    run("--root", str(tree))
    twice = "results/x/two/b-1: the same bundle as results/x/one/b-1 (keep one)\n"
    assert check(tree) == (1, twice)


def test_malformed_metadata_is_one_line_and_exit_2(tree):
    (tree / "x" / "INDEX.toml").write_text('subject = "x"\n[[result]\npath = 1\n')
    proc = run("--root", str(tree), "--check")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"{tree / 'x' / 'INDEX.toml'}:2:")
