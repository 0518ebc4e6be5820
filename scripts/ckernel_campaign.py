"""A ckernel campaign with its JSON report and idiom coverage table, for a tree where
the `ckernel` entry point is not installed yet (it registers the target at run time;
after `pip install -e .` the same is `gpusem fuzz --target ckernel ...`).

    PYTHONPATH=src python scripts/ckernel_campaign.py --property compile \\
        --backend cpu --budget 180 --seed 1 --json results/toolchain/ckernel_cpu.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

from gpusem import api
from gpusem.fuzz.targets import register_target

register_target("ckernel", "gpusem.fuzz.ckernel.target:CkernelTarget")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--property", default="compile")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--budget", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--round-size", type=int, default=50)
    ap.add_argument("--out", default="fuzz-out-ckernel")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    result = api.fuzz("ckernel", (args.property,), budget_s=args.budget,
                      backend=args.backend, seed=args.seed, coverage=True,
                      out_dir=args.out, round_size=args.round_size)
    s = result.summary
    cov = s.coverage.get(args.property, {})
    data = {"command": "PYTHONPATH=src python scripts/ckernel_campaign.py "
                       + " ".join(sys.argv[1:]),
            "machine": f"{platform.machine()}, {platform.node()} (shared, niced)",
            "backend": args.backend, "property": args.property,
            "seconds": round(s.seconds, 1), "programs": s.programs,
            "programs_per_min": round(60 * s.programs / max(s.seconds, 1e-9), 1),
            "findings": [f.signature for f in s.findings],
            "outcomes": s.outcomes, "coverage_programs": cov}
    print(json.dumps({k: v for k, v in data.items() if k != "coverage_programs"},
                     indent=1))
    width = max(map(len, cov), default=0)
    for label, n in cov.items():
        print(f"{label:{width}}  {n:6}  {100 * n / max(s.programs, 1):5.1f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    return 1 if s.findings else 0


if __name__ == "__main__":
    sys.exit(main())
