"""Golden outputs of the command line over every example program (issue 13, STYLE 20).

Each case is one verb on one file; its golden is what `gpusem VERB FILE` prints (stdout,
then stderr) and its exit code, byte for byte. A refactor must leave every golden
unchanged. The test (`test_goldens.py`) never writes a golden; regenerating them is
this explicit command, run from the repository root:

    python -m tests.golden.goldens --update

The verbs run in-process (one interpreter for ~300 cases, not ~300 start-ups).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = Path(__file__).resolve().parent / "outputs"

# Which verbs apply to which kind of file; each is a golden.
VERBS_BY_SUFFIX = {
    ".bundl": ("check", "run", "compile"),
    ".gpuir": ("check", "synccheck", "compile"),
    ".py": ("check", "run"),  # APPy (issue 17): parse + legality; the sequential reading
    ".amir": ("synccheck",),
    ".cyp": ("check", "run"),  # Cypress (issue 30): legality + task tree; seq reading
    ".lcu": ("check", "run"),  # lambda-cu (issue 29): well-formedness; Sec 6.2's rules
}
# The folders whose programs are pinned: every example, plus the conformance programs.
PROGRAM_DIRS = ("examples", "tests/gpuir/conformance", "tests/compiler/programs",
                "tests/bundl/semantics", "tests/amir/programs")
# The one thing that differs between two runs: how long the sync check took.
ELAPSED = re.compile(r"records in \d+\.\d+ s")


@dataclass(frozen=True)
class Case:
    verb: str
    path: str  # relative to ROOT, POSIX separators

    @property
    def golden(self) -> Path:
        return GOLDEN_DIR / f"{self.path.replace('/', '__')}.{self.verb}.txt"

    @property
    def id(self) -> str:
        return f"{self.verb}:{self.path}"


def cases() -> list[Case]:
    found = []
    for folder in PROGRAM_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            for verb in VERBS_BY_SUFFIX.get(path.suffix, ()):
                found.append(Case(verb, path.relative_to(ROOT).as_posix()))
    return found


def render(case: Case) -> str:
    """What `gpusem VERB FILE` prints, run in-process from ROOT, with its exit code."""
    from gpusem.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    argv, cwd, columns = sys.argv, os.getcwd(), os.environ.get("COLUMNS")
    sys.argv = ["gpusem", case.verb, case.path]
    os.environ["COLUMNS"] = "100"
    os.chdir(ROOT)
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None
                                                               else 1)
    finally:
        sys.argv = argv
        os.chdir(cwd)
        if columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = columns
    stdout = ELAPSED.sub("records in <elapsed> s", out.getvalue())
    return (f"$ gpusem {case.verb} {case.path}\n{stdout}"
            f"--- stderr\n{err.getvalue()}--- exit {code}\n")


def update() -> None:
    GOLDEN_DIR.mkdir(exist_ok=True)
    wanted = {case.golden for case in cases()}
    for case in cases():
        case.golden.write_text(render(case))
    for stale in set(GOLDEN_DIR.glob("*.txt")) - wanted:
        stale.unlink()
    print(f"wrote {len(wanted)} goldens under {GOLDEN_DIR.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python -m tests.golden.goldens --update")
    update()
