"""The documentation (issue 18): `mkdocs build --strict` succeeds, the Errata page is
proofs_notes/errata.md (included, not copied), the CI workflow file is valid and asks
only for options `gpusem fuzz` has, and every code block runs: each ```console line
`$ cmd` must exit as its trailing `# exit N` says (0 if it says nothing), each
```python block must run; a block after `<!-- no-run -->` is skipped (installs,
placeholders)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent
BLOCK = re.compile(r"(<!-- no-run -->\s*\n)?```(console|python)\n(.*?)```", re.S)


def blocks(page: Path) -> list[tuple[str, str]]:
    return [(lang, body) for skip, lang, body in BLOCK.findall(page.read_text())
            if not skip]


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("GPUSEM_", "PYTEST"))}
    e["PATH"] = f"{BIN}{os.pathsep}{e.get('PATH', '')}"
    e["COLUMNS"] = "120"
    return e


def test_mkdocs_builds_strictly_with_the_readmes_own_command(tmp_path) -> None:
    """The README's command itself (no `-q`, which hid the warning that `--strict`
    turns into exit 1), run in a copy of what the site is built from, so the
    checkout gets no `site/`."""
    (command,) = re.findall(r"`(mkdocs build[^`]*)`", (ROOT / "README.md").read_text())
    assert command == "mkdocs build --strict"
    for part in ("docs", "proofs_notes"):
        shutil.copytree(ROOT / part, tmp_path / part)
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    argv = command.split()
    proc = subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    errata = (tmp_path / "site/errata/index.html").read_text()
    first = next(ln for ln in (ROOT / "proofs_notes/errata.md").read_text().splitlines()
                 if ln.startswith("## "))
    assert first[3:].split("`")[0].strip()[:20] in errata  # the real errata, included
    assert len((DOCS / "errata.md").read_text()) < 400  # ... not a copy of them
    assert (tmp_path / "site/schema/campaign-report.schema.json").is_file()


def test_the_ci_workflow_is_valid() -> None:
    flow = yaml.safe_load((DOCS / "ci/gpusem-fuzz.yml").read_text())
    steps = flow["jobs"]["fuzz"]["steps"]
    run = next(s["run"] for s in steps if s.get("name") == "Campaign")
    assert any("upload-sarif" in s.get("uses", "") for s in steps)
    assert flow["permissions"]["security-events"] == "write"
    helptext = subprocess.run([str(BIN / "gpusem"), "fuzz", "--help"], env=env(),
                              capture_output=True, text=True).stdout
    for option in re.findall(r"--[a-z-]+", run):
        assert option in helptext, option


PAGES = sorted(p.name for p in DOCS.glob("*.md") if blocks(p))


def test_pages_have_code_to_run() -> None:
    assert {"quickstart.md", "bundles.md", "reports.md", "plugins.md"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_the_code_blocks_run(tmp_path, page) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for lang, body in blocks(DOCS / page):
        if lang == "python":
            proc = subprocess.run([sys.executable, "-c", body], cwd=tmp_path, env=env(),
                                  capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, f"{page}:\n{body}\n{proc.stderr[-3000:]}"
            continue
        for line in body.splitlines():
            if not line.startswith("$ "):
                continue
            cmd = line[2:]
            m = re.search(r"#\s*exit (\d+)\s*$", cmd)
            want = int(m[1]) if m else 0
            proc = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env(),
                                  capture_output=True, text=True, timeout=600)
            assert proc.returncode == want, (
                f"{page}: `{cmd}` exited {proc.returncode}, not {want}\n"
                f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
