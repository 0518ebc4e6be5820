"""What the lifts' `reach` test (interpreter/amir/records.py) saves: the AMIR sync
check of the given GPU IR programs (default: the conformance program
gemm_sm80_mma.gpuir, whose every thread arrives on barriers that every record of its
task observes) with the test as shipped and with `reach` answering "every thread"
(each candidate record goes to W, as before the test), in turns in one process:

    python scripts/measure_amir_reach.py [FILE ...] [--rounds R]

Prints one JSON line per program and mode: W calls, CPU seconds (the least of R
runs), the verdict (which must be the same in both modes).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from gpusem.interpreter.amir import lift, records
from gpusem.interpreter.amir.synccheck import synccheck
from gpusem.typing_rules.gpuir.frontend import header_defines

DEFAULT = Path(__file__).resolve().parents[1] / "tests" / "gpuir" / "conformance" / \
    "gemm_sm80_mma.gpuir"


def run(path: Path, rounds: int) -> tuple[int, float, str]:
    calls = [0]
    real = records.passing

    def counted(*a, **kw):
        calls[0] += 1
        return real(*a, **kw)

    lift.passing = counted
    try:
        text, best, verdict = path.read_text(), float("inf"), ""
        for _ in range(rounds):
            calls[0] = 0
            start = time.process_time()
            res = synccheck(text, str(path), header_defines(text))
            best = min(best, time.process_time() - start)
            v = res.verdict.violation
            verdict = "accepted" if v is None else f"rejected {v.check} {v.variable}"
        return calls[0], best, verdict
    finally:
        lift.passing = real


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*", type=Path, default=[DEFAULT])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    shipped = lift.reach
    for path in args.files:
        out = {}
        for mode in ("every-record", "reach"):
            lift.reach = shipped if mode == "reach" else (lambda *a: -1)
            out[mode] = run(path, args.rounds)
        lift.reach = shipped
        assert out["reach"][2] == out["every-record"][2], out
        for mode, (calls, cpu, verdict) in out.items():
            print(json.dumps({"program": path.name, "mode": mode, "W_calls": calls,
                              "cpu_s": round(cpu, 3), "verdict": verdict}))


if __name__ == "__main__":
    main()
