"""The committed bundles of the `--sync prism` seeded faults (issue 28 item 4):
`prism-drop-rule-1` and `prism-drop-rule-2` on the directed programs
tests/compiler/sync_prism/rule{1,2}.bundl, checked by the bundl target's `prism-sync`
property with the fault on, written as a campaign writes a finding.

    PYTHONPATH=src python scripts/prism_sync_bundles.py results/faults/bundles_cpu

Why directed: 2-minute `prism-sync` campaigns on the cpu backend found neither fault
(results/prism/sync_faults_cpu.json): the generators rarely write a node that reads
another thread's data without writing shared or global memory (rule 1), or a read
before a read-only partition followed by a write (rule 2). A bundle here records
`"directed": true` and no `found_after_s`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(out: str) -> None:
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.fuzz.bundle import write_bundle
    from gpusem.fuzz.bundl.target import BundlTarget

    for rule in ("1", "2"):
        fault = f"prism-drop-rule-{rule}"
        os.environ["GPUSEM_FAULT"] = fault
        source = ROOT / "tests" / "compiler" / "sync_prism" / f"rule{rule}.bundl"
        prog = parse_program(source.read_text(), str(source))
        target = BundlTarget("cpu")
        try:
            res = target.check(prog, "prism-sync")
            assert res.status == "finding", (fault, res.status, res.detail)
            meta = {"target": "bundl", "backend": "cpu", "property": "prism-sync",
                    "signature": res.signature, "kind": res.kind,
                    "detail": res.detail, "size": res.size, "seed": 0,
                    "shard": [0, 1], "shrunk": False, "directed": True,
                    "source": str(source.relative_to(ROOT))} | target.finding_meta(res)
            path = write_bundle(Path(out) / fault, meta, res.files)
            print(fault, "->", path)
        finally:
            target.close()
    os.environ.pop("GPUSEM_FAULT", None)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/faults/bundles_cpu")
