"""Does every finding of a campaign carry its attribution? (issue 23's "Done when";
branch attrcut: a shrink cut at the deadline used to leave none.)

    python scripts/attribution_coverage.py REPORT.json [--json OUT.json]

REPORT.json is a `gpusem fuzz --json` report. One line per finding: its verdict as
the report gives it, whether its shrink was cut (`shrink_cut` in `bundle.json`), the
program its `attribution.json` is of (`as found` / `shrunk`, and whether that is the
bundle's program) and what the attribution cost (`seconds`). Exit 0 when every
finding has a verdict in the report and an `attribution.json` in its bundle, 1 when
one lacks either, 2 for a report that cannot be read. Reads files only (no gpusem
import: it runs wherever the report and its bundles are)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def row(finding: dict[str, Any]) -> dict[str, Any]:
    bundle = Path(str(finding.get("bundle") or ""))
    try:
        meta = json.loads((bundle / "bundle.json").read_text())
    except (OSError, ValueError):
        meta = {}
    try:
        found = json.loads((bundle / "attribution.json").read_text())
    except (OSError, ValueError):
        found = {}
    blame = meta.get("attribution") or {}
    return {"signature": finding.get("signature"),
            "report_verdict": finding.get("attribution"),
            "bundle_verdict": found.get("verdict"), "rule": found.get("rule"),
            "seconds": found.get("seconds"), "program": found.get("program"),
            "of_this_program": blame.get("of_this_program"),
            "shrunk": finding.get("shrunk"), "shrink_cut": bool(meta.get("shrink_cut")),
            "size_before": finding.get("size_before"), "size": finding.get("size"),
            "found_after_s": finding.get("found_after_s"), "bundle": str(bundle)}


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--json"]
    out = argv[argv.index("--json") + 1] if "--json" in argv[:-1] else None
    if out is not None:
        args.remove(out)
    if len(args) != 1:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    try:
        report = json.loads(Path(args[0]).read_text())
    except (OSError, ValueError) as err:
        print(f"{args[0]}: cannot read the report: {err}", file=sys.stderr)
        return 2
    rows = [row(f) for f in report.get("findings", [])]
    for r in rows:
        print(f"{r['signature']}\t{r['size_before']}->{r['size']}\t"
              f"{'cut' if r['shrink_cut'] else 'shrunk' if r['shrunk'] else '-'}\t"
              f"report {r['report_verdict']}\tbundle {r['bundle_verdict']} "
              f"({r['rule']}, {r['seconds']} s, program {r['program']}, "
              f"of this program: {r['of_this_program']})")
    missing = [r for r in rows if not r["report_verdict"] or not r["bundle_verdict"]]
    cut = [r for r in rows if r["shrink_cut"]]
    costs = [float(r["seconds"]) for r in rows if r["seconds"] is not None]
    print(f"{len(rows)} findings, {len(rows) - len(missing)} attributed "
          f"({sum(1 for r in cut if r not in missing)} of {len(cut)} cut shrinks); "
          f"attribution seconds: max {max(costs, default=0.0):.2f}, "
          f"sum {sum(costs):.2f}; campaign {report.get('seconds')} s")
    if out is not None:
        Path(out).write_text(json.dumps({"report": args[0], "findings": rows,
                                         "missing": len(missing),
                                         "seconds": report.get("seconds")},
                                        indent=1) + "\n")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
