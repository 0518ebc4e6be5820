#!/usr/bin/env python3
"""The GPU IR target's coverage table (issue 14 item 7): how many of N generated
programs per 10,000 reach each AMIR rule (fuzz/gpuir/coverage.py's labels: Figure 5
rows, Figure 19 cases, Figure 16 rows, the checks of Figure 7, the machine's lifts).
A label at 0 is a blind spot of the generator.

    python scripts/gpuir_coverage.py --programs 10000 --seed 0 \
        --json results/gpuir/coverage.json
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    from gpusem.fuzz.gpuir.coverage import blind_spots, coverage_of, table
    from gpusem.fuzz.gpuir.strategies import kernels_from_random

    rng = random.Random(args.seed)
    start = time.perf_counter()
    per_10k = table(coverage_of(kernels_from_random(rng).source())
                    for _ in range(args.programs))
    seconds = time.perf_counter() - start
    for label, n in per_10k.items():
        print(f"{n:9.1f}  {label}")
    blind = blind_spots(per_10k)
    print(f"{args.programs} programs in {seconds:.0f} s; blind spots: {blind or 'none'}")
    if args.json:
        data = {"command": "python scripts/gpuir_coverage.py " + " ".join(
                    sys.argv[1:] if argv is None else argv),
                "machine": f"{platform.machine()}, {platform.python_version()}",
                "generator": "fuzz/gpuir/strategies.kernels_from_random",
                "programs": args.programs, "seed": args.seed,
                "seconds": round(seconds, 1), "per_10000": per_10k,
                "blind_spots": blind}
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    return 1 if blind else 0


if __name__ == "__main__":
    raise SystemExit(main())
