"""What the `ptx` property costs per kernel (issue 23, item 3), per installed NVRTC:
NVRTC alone (one program per kernel), NVRTC screening a round (`check_many`: one
program per version for the round), and the static checks on one kernel's PTX.

Draws the programs of the ptx property's strategy for `--seed` (the rounds a campaign
with that seed draws), compiles them with our compiler, then times each stage. No GPU.

  python scripts/ptx_cost.py --seed 1 --kernels 200 \
      --json results/toolchain/ptx_cost_cpu.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time


def sources(seed: int, n: int) -> list[str]:
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    target, out, r = BundlTarget(), [], 0
    while len(out) < n:
        for d in generate_round(target.strategy("ptx"), round_seed(seed, r), 100):
            try:
                out.append(compile_program(as_generated(d.program).program,
                                           CompileOptions()).source)
            except Exception:  # noqa: BLE001, S112 - not compiled: not checked either
                continue
        r += 1
    return out[:n]


def main() -> None:
    from gpusem.compiler.backends.nvrtc_lib import compile_ptx, find_nvrtc
    from gpusem.compiler.backends.ptx_check import check_ptx
    from gpusem.compiler.backends.ptx_oracle import check_many

    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kernels", type=int, default=200)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    srcs = sources(args.seed, args.kernels)
    per_version = {}
    for n in find_nvrtc():
        alone, checks, nc = [], [], 0
        for src in srcs:
            t0 = time.perf_counter()
            ptx = compile_ptx(n, src)
            t1 = time.perf_counter()
            verdict = check_ptx(ptx.ptx or "", n.label, src)
            checks.append(time.perf_counter() - t1)
            alone.append(t1 - t0)
            nc += verdict.nc_loads
        t0 = time.perf_counter()
        for i in range(0, len(srcs), 100):
            check_many(srcs[i:i + 100], [n])
        screen = (time.perf_counter() - t0) / len(srcs)
        per_version[n.label] = {
            "arch": n.arch, "library": n.path,
            "nvrtc_alone_ms_per_kernel": {
                "median": round(1e3 * statistics.median(alone), 2),
                "mean": round(1e3 * statistics.mean(alone), 2)},
            "screen_ms_per_kernel_rounds_of_100": round(1e3 * screen, 2),
            "check_ms_per_kernel": {
                "median": round(1e3 * statistics.median(checks), 3),
                "mean": round(1e3 * statistics.mean(checks), 3)},
            "ld_global_nc_per_kernel": round(nc / len(srcs), 2)}
    out = {"command": "python " + " ".join(sys.argv), "kernels": len(srcs),
           "machine": "2-core dev machine, no GPU "
                      f"({platform.processor() or 'x86_64'})",
           "date": time.strftime("%Y-%m-%d", time.gmtime()), "per_version": per_version}
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
