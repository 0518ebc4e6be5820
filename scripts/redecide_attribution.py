"""Decide recorded findings again under today's attribution rules, without a GPU
(`fuzz/attribution.py`): each bundle's `attribution.json` holds every configuration's
launches and the static PTX check's failures; only the second reference path is
recomputed, here, from the bundle's program (a Bundl bundle; other targets have
none). For a rule changed after a campaign ran, e.g. stop 28's `stale-nc-reads` and
the undecided race verdict (FINDINGS.md G1, N1).

    python scripts/redecide_attribution.py BUNDLE [BUNDLE ...]

One line per bundle: recorded verdict (rule) -> today's verdict (rule), then today's
evidence. Exit 0; 2 for a folder without attribution.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpusem.fuzz.attribution import decide, evidence_of


def second_path(folder: Path) -> str | None:
    program = folder / "program.bundl"
    if not program.is_file():
        return None
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.fuzz.bundl.attribute import second_reference
    from gpusem.interpreter.bundl.reference import reference

    prog = parse_program(program.read_text(), str(program))
    full = reference(prog)
    if full.kind != "terminated" or full.racy:
        return None  # not compared today: no second path to weigh
    return second_reference(prog, full)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[7].strip(), file=sys.stderr)
        return 2
    for name in argv:
        folder = Path(name)
        path = folder / "attribution.json"
        if not path.is_file():
            print(f"{name}: no attribution.json", file=sys.stderr)
            return 2
        found = json.loads(path.read_text())
        today = decide(evidence_of(found, second_path(folder)))
        print(f"{folder.name}: {found.get('verdict')} ({found.get('rule')}) -> "
              f"{today.verdict} ({today.rule})")
        for line in today.evidence:
            print(f"    {line[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
