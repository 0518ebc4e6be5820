"""scripts/ stays small and described (issue 25 item 4): every script is listed in
scripts/README.md and nothing listed there is missing, and every `scripts/...` path
that the README, the docs, the examples, the tests, the code or the scripts name
exists (a script renamed or removed without its readers fails here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
NAMED = re.compile(r"scripts/([\w./-]+\.(?:sh|py))")
READERS = ["README.md", "ARCHITECTURE.md", "docs", "examples", "tests", "src", "scripts"]


def scripts() -> set[str]:
    return {p.relative_to(SCRIPTS).as_posix() for p in SCRIPTS.rglob("*")
            if p.is_file() and p.suffix in (".sh", ".py")}


def test_every_script_is_listed_and_every_listed_script_exists():
    listed = set(re.findall(r"^\| `([\w./-]+)` \|", (SCRIPTS / "README.md").read_text(),
                            re.M))
    assert listed == scripts()


def test_every_script_a_reader_names_exists():
    files = [ROOT / r for r in READERS if (ROOT / r).is_file()]
    files += [p for r in READERS if (ROOT / r).is_dir() for p in (ROOT / r).rglob("*")
              if p.is_file() and p.suffix in (".md", ".py", ".sh", ".bundl", ".gpuir")]
    missing = sorted({f"{f.relative_to(ROOT)}: scripts/{name}" for f in files
                      for name in NAMED.findall(f.read_text(errors="replace"))
                      if not (SCRIPTS / name).is_file()})
    assert not missing
