"""The package as it installs (setup.py maps the top-level folders into `gpusem`),
copied into a scratch folder: import-linter and mypy walk a package's folder on disk,
and an editable install's folders are not one tree."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("calculus", "typing_rules", "interpreter", "compiler", "fuzz", "cli")


def build(dest: Path) -> Path:
    """Write `dest/gpusem/...` (Python files only); returns `dest`."""
    package = dest / "gpusem"
    if package.exists():
        shutil.rmtree(package)
    package.mkdir(parents=True)
    for f in (ROOT / "gpusem_root").glob("*.py"):
        shutil.copy2(f, package / f.name)
    for folder in FOLDERS:
        for f in (ROOT / folder).rglob("*.py"):
            target = package / folder / f.relative_to(ROOT / folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target)
    return dest
