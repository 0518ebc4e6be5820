"""What NVRTC costs per kernel of the compile property, and what batching buys
(issue 19: the build stage of the cuda backend; needs CuPy, no GPU launch).

Compiles the CUDA text of generated programs (the rounds a campaign with `--seed`
checks) the way the cuda backend does (`cuda_worker.Device.compile`: one NVRTC program
of many kernels, each in its own namespace, the backend's options), in batches of
1, 25, 100 and 400 kernels, and with NVRTC's automatic precompiled header (`--pch`,
CUDA 12.8+) added where NVRTC takes it. Writes one JSON object: milliseconds per
kernel for each batch size (median over repeats) and the fixed cost per NVRTC call
(a fit of time = fixed + per_kernel x n).

  python3 scripts/nvrtc_probe.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time


def kernels(seed: int, rounds: int) -> list[tuple[str, str]]:
    from gpusem.compiler.bundl_cuda.pipeline import compile_program
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    target, out = BundlTarget(), []
    for r in range(rounds):
        for d in generate_round(target.strategy("compile"), round_seed(seed, r), 100):
            try:
                k = compile_program(as_generated(d.program).program)
            except Exception:  # noqa: BLE001, S112 - not compiled: not built either
                continue
            out.append((k.name, k.source))
    return out


def nvrtc_seconds(items: list[tuple[str, str]], extra: tuple[str, ...]) -> float | None:
    """One NVRTC compile of `items` as the backend builds a batch; None if NVRTC
    rejects the options."""
    from cupy_backends.cuda.libs import nvrtc
    from gpusem.compiler.backends import cpu_source
    from gpusem.compiler.backends.cuda_worker import NVRTC_OPTIONS

    unit = cpu_source.namespaced_unit(
        [(i, f"k{i}_src", src, "") for i, (_, src) in enumerate(items)], for_cpu=False)
    add_name = getattr(nvrtc, "addNameExpression", None) or nvrtc.addAddNameExpression
    start = time.perf_counter()
    prog = nvrtc.createProgram(unit, "batch.cu", [], [])
    try:
        for i, (name, _) in enumerate(items):
            add_name(prog, f"gs_k{i}::{name}")
        try:
            nvrtc.compileProgram(prog, [*NVRTC_OPTIONS, *extra])
        except nvrtc.NVRTCError:
            return None
        for i, (name, _) in enumerate(items):
            nvrtc.getLoweredName(prog, f"gs_k{i}::{name}")
        nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the result here (also printed)")
    args = ap.parse_args(argv)
    items = kernels(args.seed, 4)
    nvrtc_seconds(items[:5], ())  # NVRTC loaded, its first-call costs paid
    result: dict = {"kernels": len(items), "seed": args.seed, "per_kernel_ms": {},
                    "device": os.environ.get("GPUSEM_DEVICE", "")}
    for label, extra in (("default", ()), ("pch", ("--pch",))):
        table = {}
        for n, repeats in ((1, 10), (25, 4), (100, 3), (400, 1)):
            n = min(n, len(items))
            per_kernel = []
            for k in range(repeats):
                chunk = items[(k * n) % max(1, len(items) - n + 1):][:n]
                t = nvrtc_seconds(chunk, extra)
                if t is None:
                    break
                per_kernel.append(t / len(chunk))
            if per_kernel:
                table[str(n)] = round(1000 * statistics.median(per_kernel), 3)
        result["per_kernel_ms"][label] = table or "rejected by this NVRTC"
    base = result["per_kernel_ms"]["default"]
    sizes = sorted(int(n) for n in base) if isinstance(base, dict) else []
    if len(sizes) >= 2:  # t(n) = fixed + per x n, through the smallest and largest
        lo, hi = sizes[0], sizes[-1]
        per = (hi * base[str(hi)] - lo * base[str(lo)]) / (hi - lo)
        result["fit_ms"] = {"per_kernel": round(per, 3),
                            "fixed_per_call": round(lo * (base[str(lo)] - per), 3)}
    result["command"] = shlex.join([os.path.basename(sys.executable), *sys.argv])
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
