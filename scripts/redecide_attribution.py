"""Decide recorded findings again under today's attribution rules, without a GPU:
`gpusem triage --redecide [--write]` (`fuzz/redecide.py` says what is computable from
a bundle's stored evidence and what --write rewrites). Kept under its stop-28 name for
the commands in results/ and LEDGER.md.

    python scripts/redecide_attribution.py [--write] BUNDLE_OR_FOLDER [...]

One line per bundle: recorded verdict (rule) -> today's verdict (rule), then today's
evidence. Exit 0; 2 for a path that holds no attributed bundle."""

from __future__ import annotations

import sys

from gpusem import api


def main(argv: list[str]) -> int:
    write = "--write" in argv
    paths = [a for a in argv if a != "--write"]
    if not paths:
        print(__doc__.strip().splitlines()[5].strip(), file=sys.stderr)
        return 2
    found = api.redecide(paths, write)
    if not found:
        print(f"no bundle with attribution.json under {' '.join(paths)}",
              file=sys.stderr)
        return 2
    for r in found:
        print(r.line())
        for line in r.evidence:
            print(f"    {line[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
