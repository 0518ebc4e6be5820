"""Attribute finding bundles written earlier (before attribution existed, or on another
machine) under the toolchain matrix, as a campaign does for a final finding
(`fuzz/campaign.py` `_attributed`, `fuzz/attribution.py`): the bundle's target re-runs
its program under every configuration of the matrix and the rules table gives the
verdict.

    python scripts/attribute_bundles.py OUTDIR BUNDLE [BUNDLE ...]

Writes OUTDIR/<bundle name>/attribution.json and prints one line per bundle (verdict,
rule, seconds). A bundle whose target has no attribution says so; an exception is
printed and counted, never taken for a verdict (exit 3 when any bundle failed)."""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

from gpusem.fuzz.bundle import read_bundle
from gpusem.fuzz.targets import CheckResult, load_target


def finding_of(folder: Path) -> tuple[dict, CheckResult]:
    """The bundle's metadata and the finding it records, as the campaign held it."""
    bundle = read_bundle(folder)
    meta = bundle.meta
    res = CheckResult(status="finding", signature=str(meta.get("signature", "")),
                      kind=str(meta.get("kind", "")),
                      detail=str(meta.get("detail", "")),
                      files=bundle.files, size=int(meta.get("size", 0)),
                      program_file=str(meta.get("program_file", "")),
                      line=int(meta.get("line", 0)))
    return meta, res


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[5], file=sys.stderr)
        return 2
    out = Path(argv[0])
    failed = 0
    for name in argv[1:]:
        bundle = Path(name)
        start = time.perf_counter()
        try:
            meta, res = finding_of(bundle)
            target = load_target(str(meta["target"]), str(meta.get("backend", "cpu")))
            attribute = getattr(target, "attribute", None)
            found = attribute(res, str(meta.get("property", ""))) if attribute else None
            getattr(target, "close", lambda: None)()
        except Exception:  # noqa: BLE001 - reported and counted, never a verdict
            failed += 1
            print(f"{bundle.name}\tERROR\t{traceback.format_exc(limit=3)}")
            continue
        seconds = round(time.perf_counter() - start, 2)
        if not found:
            print(f"{bundle.name}\tno attribution for target {meta['target']}"
                  f"\t{seconds}s")
            continue
        (out / bundle.name).mkdir(parents=True, exist_ok=True)
        (out / bundle.name / "attribution.json").write_text(
            json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"{bundle.name}\t{found.get('verdict')}\t{found.get('rule')}\t{seconds}s")
    return 3 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
