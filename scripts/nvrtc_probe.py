"""What the cuda worker's NVRTC build costs per call and per kernel, and which options
cut it without changing the cubin (issues 19, 31.3). Needs NVRTC, not a GPU.

Compiles the distinct CUDA texts of the compile property's programs (the rounds a
campaign with `--seed` checks, as profile_stages.py draws them) as the worker builds a
batch (`cuda_worker.Device.compile`: one NVRTC program, each kernel in its namespace,
a name expression each, sm_90a, the cubin), under each variant of options:

  plain    NVRTC_OPTIONS (the worker before issue 31.3)
  worker   NVRTC_OPTIONS + BUILD_SPEEDUPS (the worker now)
  pch      the worker's + NVRTC's automatic precompiled header (--pch; measured,
           not adopted)

in calls of one kernel (a sample), of 25, and of a whole round (what profile_stages
builds), each call made once per variant in turn and `--repeat` times, so that a shared
machine's load falls on every variant alike. Per variant: CPU ms per call (this
process: NVRTC runs in it), per kernel, a header-only call (the fixed cost), the fit
fixed + per kernel through the round calls, and how many cubins equal the plain
options' byte for byte (the speed-ups must change none).

NVRTC: `--nvrtc cupy` is CuPy's binding, the worker's own `run_nvrtc` (on a GPU
machine; no CUDA context is made); `--nvrtc PATH` a libnvrtc.so (put its folder on
LD_LIBRARY_PATH, for its builtins); by default CuPy where it imports, else the newest
NVRTC wheel (`nvrtc_lib`, the ctypes calls the worker's binding makes).

  python3 scripts/nvrtc_probe.py --rounds 3 --json out.json
  python3 scripts/nvrtc_probe.py --rounds 3 --repeat 1 --phases  (where NVRTC's time
    goes a kernel: front end, NVVM, ptxas, from its own -fdevice-time-trace)
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable

from tree_runs import write_result

Build = Callable[[str, dict[int, str], list[str]], tuple[bytes | None, dict, str]]
EMPTY = ("gs_empty", 'extern "C" __global__ void gs_empty() {}\n')


def kernels(seed: int, rounds: int, size: int) -> list[list[tuple[str, str]]]:
    """Each round's distinct (kernel name, CUDA text) of the compiled programs."""
    from gpusem.compiler.bundl_cuda.pipeline import compile_program
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    target, out = BundlTarget(), []
    for r in range(rounds):
        found = []
        for d in generate_round(target.strategy("compile"), round_seed(seed, r), size):
            try:
                k = compile_program(as_generated(d.program).program)
            except Exception:  # noqa: BLE001, S112 - not compiled: not built either
                continue
            found.append((k.name, k.source))
        out.append(list(dict.fromkeys(found)))
    return out


def binding(which: str, nvrtc_cache: bool = False) -> tuple[Build, dict]:
    """(the NVRTC call, what it is) for --nvrtc; NVRTC's own cache off as in the
    worker, unless `nvrtc_cache` (nvrtc_cache_probe.py)."""
    from gpusem.compiler.backends import cuda_worker, nvrtc_lib

    if which in ("auto", "cupy"):
        try:
            from cupy_backends.cuda.libs import nvrtc
        except ImportError:
            if which == "cupy":
                raise
        else:
            device = object.__new__(cuda_worker.Device)  # no context: NVRTC only
            device.nvrtc_cache = nvrtc_cache
            major, minor = nvrtc.getVersion()
            return device.run_nvrtc, {"binding": "cupy (cuda_worker.Device.run_nvrtc)",
                                      "version": f"{major}.{minor}"}
    if which not in ("auto", "cupy"):
        os.environ[nvrtc_lib.ENV_PATH] = os.path.dirname(os.path.abspath(which))
    lib = nvrtc_lib.find_nvrtc()[0]

    # a partial, not a closure: phases() sends it to a child process
    build = functools.partial(nvrtc_lib.compile_unit, lib, nvrtc_cache=nvrtc_cache)
    return build, {"binding": "ctypes (nvrtc_lib.compile_unit)", "library": lib.path,
                   "version": f"{lib.version[0]}.{lib.version[1]}"}


def variants() -> dict[str, list[str]]:
    from gpusem.compiler.backends.cuda_worker import BUILD_SPEEDUPS, NVRTC_OPTIONS

    return {"plain": list(NVRTC_OPTIONS),
            "worker": [*NVRTC_OPTIONS, *BUILD_SPEEDUPS],
            "pch": [*NVRTC_OPTIONS, *BUILD_SPEEDUPS, "--pch", "--pch-messages=false",
                    "--pch-verbose=false"]}


def call(build: Build, batch: list[tuple[str, str]], options: list[str]
         ) -> tuple[float, str]:
    """CPU ms of one NVRTC call on `batch` as the worker builds it; the cubin's hash."""
    from gpusem.compiler.backends import cpu_source

    unit = cpu_source.namespaced_unit(
        [(i, f"k{i}_src", src, "") for i, (_, src) in enumerate(batch)], for_cpu=False)
    exprs = {i: f"gs_k{i}::{name}" for i, (name, _) in enumerate(batch)}
    start = time.process_time()
    binary, _, log = build(unit, exprs, options)
    cpu = 1e3 * (time.process_time() - start)
    if binary is None:
        raise RuntimeError(f"NVRTC failed ({' '.join(options[-3:])}): {log[:2000]}")
    return cpu, hashlib.sha256(binary).hexdigest()


def measure(build: Build, rounds: list[list[tuple[str, str]]], repeat: int,
            singles: int) -> dict:
    every = [k for r in rounds for k in r]
    shapes = {"1": [[k] for k in every[::max(1, len(every) // singles)][:singles]],
              "25": [every[i:i + 25] for i in range(0, len(every), 25)],
              "round": rounds,
              "header_only": [[EMPTY]] * 3}
    opts = variants()
    for options in opts.values():  # NVRTC loaded, first-call costs paid
        call(build, [EMPTY], options)
    cpu: dict[str, dict[str, list[list[float]]]] = {
        v: {s: [[] for _ in b] for s, b in shapes.items()} for v in opts}
    hashes: dict[str, dict[str, list[str]]] = {
        v: {s: [""] * len(b) for s, b in shapes.items()} for v in opts}
    for _ in range(repeat):
        for shape, batches in shapes.items():
            for i, batch in enumerate(batches):
                for v, options in opts.items():
                    ms, digest = call(build, batch, options)
                    cpu[v][shape][i].append(ms)
                    hashes[v][shape][i] = digest
    out = {}
    for v, options in opts.items():
        med = {s: [statistics.median(x) for x in calls] for s, calls in cpu[v].items()}
        fixed = statistics.median(med["header_only"])
        row: dict = {"options": options[len(opts["plain"]):],
                     "header_only_call_cpu_ms": round(fixed, 2),
                     "cpu_ms_per_call": {}, "cpu_ms_per_kernel": {}}
        for s in ("1", "25", "round"):
            n = sum(len(b) for b in shapes[s])
            row["cpu_ms_per_call"][s] = round(sum(med[s]) / len(med[s]), 2)
            row["cpu_ms_per_kernel"][s] = round(sum(med[s]) / n, 3)
        n_round = sum(len(b) for b in shapes["round"])
        row["fit_ms"] = {"fixed_per_call": row["header_only_call_cpu_ms"],
                         "per_kernel": round((sum(med["round"]) - fixed * len(rounds))
                                             / n_round, 3)}
        same = sum(hashes[v][s][i] == hashes["plain"][s][i]
                   for s in shapes for i in range(len(shapes[s])))
        row["cubins_equal_plain"] = f"{same}/{sum(len(b) for b in shapes.values())}"
        out[v] = row
    return out


def phases(build: Build, rounds: list[list[tuple[str, str]]]) -> dict:
    """NVRTC's own time trace (`-fdevice-time-trace`) of each round's call with the
    worker's options: ms a kernel in the front end (the trace's span before and
    around LibNVVM and ptxas), NVVM (LibNVVM: its optimizer and code generation) and
    ptxas. The trace slows the call: the shares are what it gives, not the times."""
    import concurrent.futures
    import glob
    import multiprocessing
    import tempfile

    from gpusem.compiler.backends.cuda_worker import BUILD_SPEEDUPS, NVRTC_OPTIONS

    total: dict[str, float] = {"front end": 0.0, "nvvm": 0.0, "ptxas": 0.0}
    kernels_n = 0
    for batch in rounds:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "trace")
            # each traced call in a process of its own: NVRTC 12.9-13.5 crash on a
            # second traced program whose #line names a file an earlier one named
            # (results/toolchain/FINDINGS.md, T4), which every batch's kernels do
            with concurrent.futures.ProcessPoolExecutor(
                    1, mp_context=multiprocessing.get_context("spawn")) as pool:
                pool.submit(call, build, batch, [*NVRTC_OPTIONS, *BUILD_SPEEDUPS,
                                                 f"-fdevice-time-trace={path}"]).result()
            with open(min(glob.glob(path + "*"))) as f:
                events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
        span = (max(e["ts"] + e["dur"] for e in events)
                - min(e["ts"] for e in events))
        nvvm = sum(e["dur"] for e in events if e["name"] == "LibNVVM")
        ptxas = sum(e["dur"] for e in events if e["name"] == "Total PTXAS Time")
        total["front end"] += span - nvvm - ptxas
        total["nvvm"] += nvvm
        total["ptxas"] += ptxas
        kernels_n += len(batch)
    ms = {k: round(v / 1e3 / max(1, kernels_n), 3) for k, v in total.items()}
    return {"ms_per_kernel_traced": ms, "kernels": kernels_n,
            "shares": {k: round(v / max(1e-9, sum(total.values())), 3)
                       for k, v in total.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--singles", type=int, default=20,
                    help="kernels compiled one a call (a sample)")
    ap.add_argument("--nvrtc", default="auto", help="auto, cupy or a libnvrtc path")
    ap.add_argument("--json", help="write the result here (also printed)")
    ap.add_argument("--phases", action="store_true",
                    help="also NVRTC's time trace of each round: front end, NVVM, "
                    "ptxas a kernel")
    args = ap.parse_args(argv)
    build, nvrtc = binding(args.nvrtc)
    rounds = kernels(args.seed, args.rounds, args.round_size)
    every = [k for r in rounds for k in r]
    result: dict = {
        "nvrtc": nvrtc, "seed": args.seed, "rounds": args.rounds,
        "round_size": args.round_size,
        "kernels": {"distinct": len(every), "per_round": [len(r) for r in rounds],
                    "bytes_total": sum(len(s) for _, s in every)},
        "variants": measure(build, rounds, args.repeat, args.singles)}
    if args.phases:
        result["phases"] = phases(build, rounds)
    v = result["variants"]
    result["saved_cpu_ms_worker_vs_plain"] = {
        "per_call_header_only": round(v["plain"]["header_only_call_cpu_ms"]
                                      - v["worker"]["header_only_call_cpu_ms"], 2),
        "per_kernel_round_calls": round(v["plain"]["cpu_ms_per_kernel"]["round"]
                                        - v["worker"]["cpu_ms_per_kernel"]["round"], 3)}
    result["fit_ms"] = v["worker"]["fit_ms"]  # what gpu/scale.sh's summary reads
    result["device"] = os.environ.get("GPUSEM_DEVICE", "")
    result["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    result["cores"] = os.cpu_count()
    result["command"] = shlex.join([os.path.basename(sys.executable), *sys.argv])
    write_result(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
