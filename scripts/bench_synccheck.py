"""Time the AMIR sync check of examples/gpuir/gemm_tiled.gpuir (the machine only:
conversion is outside the timed region), the best of ROUNDS runs per size. Used to
compare the control-expression evaluator before and after a change, in one command:

    python scripts/bench_synccheck.py [N ...] [--rounds R]

Prints one JSON line per size: N, seconds (min), statements, recorded accesses.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from gpusem.calculus.gpuir.parser import parse_module
from gpusem.interpreter.amir.from_gpuir import convert
from gpusem.interpreter.amir.machine import check_amir

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "gpuir" / "gemm_tiled.gpuir"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("sizes", nargs="*", type=int, default=[256, 512])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    text = EXAMPLE.read_text()
    for n in args.sizes:
        proc = convert(parse_module(text, str(EXAMPLE)).procs[0], {"N": n})
        best, verdict = float("inf"), None
        for _ in range(args.rounds):
            start = time.perf_counter()
            verdict = check_amir(proc, {"N": n})
            best = min(best, time.perf_counter() - start)
        assert verdict is not None and verdict.accepted
        print(json.dumps({"N": n, "seconds": round(best, 4),
                          "statements": verdict.stats.statements,
                          "recorded_accesses": verdict.stats.recorded_accesses}))


if __name__ == "__main__":
    main()
