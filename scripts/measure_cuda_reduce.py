"""Measure the CUDA reducer (fuzz/cuda_reduce, issue 23) on three committed
reproducers with a PTX interestingness test (no GPU): lines before and after, tests
run, seconds, and whether the result still passes the test and builds alone.

    PYTHONPATH=src nice python scripts/measure_cuda_reduce.py [--budget S] [--out F]

The inputs: the one `repro.cu` committed in a bundle (results/campaign/...), and the
`repro.cu` of two committed fault bundles, made by `api.standalone` from their
`program.bundl` (results/toolchain/reduce/inputs/, see the README there). Each is
reduced as `gpusem reduce FILE --keep-ptx REGEX --budget S` does (guards on).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path

from gpusem import api
from gpusem.fuzz.cuda_reduce.oracles import BuildsAlone, KeepPtx
from gpusem.fuzz.cuda_reduce.tokens import count_lines

ROOT = Path(__file__).resolve().parents[1]
CASES = [
    ("results/campaign/trust_seed2611/bundl-compile-kernel-failed-38c3f511ac/repro.cu",
     r"bar\.warp\.sync"),
    ("results/toolchain/reduce/inputs/index-at-code-perspective.repro.cu",
     r"ld\.global\.nc"),
    ("results/toolchain/reduce/inputs/drop-partition-barrier.repro.cu",
     r"ld\.global\.nc"),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=600.0)
    ap.add_argument("--out", default="results/toolchain/reduce/measure.json")
    args = ap.parse_args()
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True,
                          check=False).stdout.strip().splitlines()[-2:]
    rows = []
    for path, pattern in CASES:
        t0 = time.monotonic()
        r = api.reduce_cuda(ROOT / path, keep_ptx=pattern, budget_s=args.budget)
        wall = time.monotonic() - t0
        out = ROOT / "results/toolchain/reduce" / (Path(path).parent.name + ".min.cu"
                                                   if path.endswith("/repro.cu") else
                                                   Path(path).name.replace(
                                                       ".repro.cu", ".min.cu"))
        out.write_text(r.text)
        rows.append({"input": path, "keep_ptx": pattern,
                     "lines_before": count_lines((ROOT / path).read_text()),
                     "lines_after": r.lines_after, "tests": r.tests,
                     "rounds": r.rounds, "seconds": round(wall, 1),
                     "stopped": r.stopped, "guards_off": r.guards_off,
                     "still_interesting": KeepPtx(pattern)(r.text),
                     "builds_alone": BuildsAlone()(r.text) is None,
                     "output": str(out.relative_to(ROOT)),
                     "passes": {k: vars(v) | {"seconds": round(v.seconds, 1)}
                                for k, v in r.passes.items()}})
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "passes"}),
              flush=True)
    record = {"command": f"PYTHONPATH=src nice python scripts/measure_cuda_reduce.py "
                         f"--budget {args.budget:g}",
              "device": f"no GPU: {platform.node()} (2 cores shared), "
                        + " ".join(nvcc), "budget_s": args.budget, "cases": rows}
    Path(ROOT / args.out).write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
