"""What the Bundl `toolchain` property costs per program on the CPU, per configuration
of the toolchain matrix (issue 23, item 1 of the toolchain task), before and after the
cuts, in one command; and the rate on an H200 host of 16 cores that cost allows.

Draws the rounds a campaign with `--seed` draws (the toolchain property's strategy),
then times, round by round, in CPU seconds of this process and its children (so a
loaded machine's waiting is not counted):

    generate     hypothesis drawing the round
    reference    the reference outcome (big-step where it may, as the campaign)
    compile      our Bundl -> CUDA compiler
    nvrtc        NVRTC (the newest installed, through ctypes) -> a cubin of the round
                 (on a GPU machine the cuda worker does this, with CuPy's NVRTC)
    nvcc-ptx     before only: nvcc -ptx, the PTX ptxas-O0 and ptx-jit build
    nvcc-O3      before: nvcc -cubin; after: nvcc -cubin --keep (it also leaves
                 that PTX: one nvcc front end for nvcc-O3, ptxas-O0 and ptx-jit)
    nvcc-G       nvcc -cubin -G
    ptxas-O0     ptxas -O0 of the PTX
    ptx-jit      host side: none (the PTX is reused); the driver's JIT at load time
                 runs on the GPU machine and is not measured here
    no-restrict  NVRTC on the source without __restrict__; after: only for sources
                 that have one (else it is nvrtc's build)
    cpu          the cpu harness (g++ + the SIMT harness, two launches a program, as
                 on cuda); after: only for programs a GPU configuration got wrong,
                 none in a clean round (counted: `cpu_programs_after`)
    digests      after only: the kernel digests that decide which launches are shared

and counts the GPU launches before (every configuration, two a program) and after
(one a configuration, and none where its cubin holds for the kernel what an earlier
configuration's held: here `nvcc-O3` against this machine's NVRTC, which is another
version than nvcc's (on the H200 both are 13.0), and `no-restrict` against `nvrtc`;
a clean round has no program to run again).

nvcc-G on every K-th round (`--g-every K`, default the tree's GPUSEM_TOOLCHAIN_G_EVERY
default): the `g_every` block of the JSON is `after` (every configuration on every
round: K = 1) against `sampled`, the same runs less nvcc-G's build and launch on the
rounds a campaign with K leaves it out of (round r with r % K != 0; a clean round has
no program that brings it back): that nvcc call is the only work that differs, so
the two columns are one measurement. It gives the cost and the rate on 16 cores for
K = 1, 2, 4, 8, 16 at the long-run share 1/K of programs (rounds are of one size),
and, with `--h200 FILE` (a toolchain_cost JSON made on the H200 host), the same
estimate from that host's own per-configuration costs.

Note: `after` builds every host configuration from one order of the round's kernels,
which the campaign's matrix did not until `toolchain.host_unit` (each configuration had
its own order, so nvcc ran for ptxas-O0, ptx-jit and nvcc-G again); what a campaign's
own code spends is scripts/toolchain_speed.py's.

Launches need a GPU. The estimate charges each `--launch-ms` of a core (default 4:
the H200's `compile` property, 30,000 programs/min on 16 cores, spends 32 ms of a
core per program, of which this machine's CPU cost of drawing, reference, compiling
and NVRTC is about 16 ms; the rest is its four launches). It leaves out the driver's
JIT of ptx-jit's PTX and a campaign's start and end, so it is an upper bound;
scripts/gpu/toolchain_rate.sh measures the rate on an H200.

  python scripts/toolchain_cost.py --seed 0 --rounds 3 \
      --json results/toolchain/toolchain_cost_cpu.json
  python scripts/toolchain_cost.py --seed 0 --rounds 8 --g-every 4 \
      --h200 results/toolchain/toolchain_h200_2026-11-29/toolchain_cost_h200.json \
      --json results/toolchain/toolchain_g_every_cpu.json
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORES = 16  # one H200 machine's cores, one campaign shard each (--jobs 16)
KS = (1, 2, 4, 8, 16)  # the K of GPUSEM_TOOLCHAIN_G_EVERY the estimate is given for


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Clock:
    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    def time(self, key: str, fn, *args):
        start = cpu_seconds()
        out = fn(*args)
        self.spent[key] = self.spent.get(key, 0.0) + cpu_seconds() - start
        return out


def nvcc_before(config: str, unit: str) -> None:
    """The commands the matrix ran before this change (nvcc -ptx, then each
    configuration's own)."""
    from gpusem.compiler.backends import toolchain_build as tb

    nvcc = tb.find_tool("nvcc")
    with tempfile.TemporaryDirectory() as tmp:
        cu, ptx, out = (str(Path(tmp) / n) for n in ("b.cu", "b.ptx", "out"))
        Path(cu).write_text(unit)
        common = list(tb.COMMON)
        cmd = {"nvcc-ptx": [nvcc, "-ptx", "-arch=compute_90a", *common, cu, "-o", ptx],
               "nvcc-O3": [nvcc, "-cubin", "-arch=sm_90a", "-Xptxas", "-O3", *common,
                           cu, "-o", out],
               "nvcc-G": [nvcc, "-cubin", "-arch=sm_90a", "-G", *common, cu, "-o",
                          out]}[config]
        subprocess.run(cmd, check=True, capture_output=True)
        if config == "nvcc-ptx":  # ptxas-O0 timed apart, from this PTX
            Path("/tmp/gpusem-cost.ptx").write_text(Path(ptx).read_text())


def ptxas_o0() -> None:
    from gpusem.compiler.backends import toolchain_build as tb

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([tb.find_tool("ptxas"), "-arch=sm_90a", "-O0",
                        "/tmp/gpusem-cost.ptx", "-o", str(Path(tmp) / "o")],
                       check=True, capture_output=True)


def harness(jobs) -> list:
    from gpusem.compiler.backends.cpu import CpuBackend

    backend = CpuBackend(cache_dir=tempfile.mkdtemp(prefix="gpusem-cost-"))
    try:
        return backend.run(jobs)
    finally:
        backend.close()  # its worker's CPU time is counted once it is reaped


def one_round(seed: int, r: int, size: int, before: Clock, after: Clock,
              launches: dict[str, int]) -> int:
    from gpusem.compiler.backends import cpu_source, nvrtc_lib
    from gpusem.compiler.backends import toolchain_build as tb
    from gpusem.compiler.bundl_cuda.launch import jobs_for
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    target, shared = BundlTarget("cpu"), Clock()
    drawn = shared.time("generate", lambda: list(generate_round(
        target.strategy("toolchain"), round_seed(seed, r), size)))
    gens = [as_generated(d.program) for d in drawn]
    refs = shared.time("reference", lambda: [target._reference(g, "toolchain")[0]
                                             for g in gens])
    kernels = []

    def compile_all() -> None:
        for g, ref in zip(gens, refs, strict=True):
            if ref.kind != "terminated" or ref.racy:
                continue
            try:
                kernels.append((g, compile_program(g.program, CompileOptions())))
            except Exception:  # noqa: BLE001, S112 - the compile property's finding
                continue

    shared.time("compile", compile_all)
    target.close()
    # the backends build each distinct kernel once (by its code key), launch per job
    distinct = list(dict.fromkeys((k.name, k.source) for _, k in kernels))
    items = [(i, name, src) for i, (name, src) in enumerate(distinct)]
    index = [distinct.index((k.name, k.source)) for _, k in kernels]

    def unit(strip: bool, only: list | None = None) -> str:
        chosen = items if only is None else only
        return cpu_source.namespaced_unit(
            [(i, f"k{i}_src", tb.strip_restrict(s) if strip else s, "")
             for i, _, s in chosen], for_cpu=False)

    found = nvrtc_lib.find_nvrtc()  # none: the NVRTC rows are left out, not zero
    newest = found[0] if found else None
    cubin = shared.time("nvrtc", nvrtc_lib.compile_cubin, newest,
                        unit(False))[0] if newest else None
    jobs = [j for g, k in kernels for j in jobs_for(g.program, k, (0, 1), 5.0)]
    for key, secs in shared.spent.items():
        before.spent[key] = before.spent.get(key, 0.0) + secs
        after.spent[key] = after.spent.get(key, 0.0) + secs
    # before: the previous commands, every configuration, the harness every program
    for config in ("nvcc-ptx", "nvcc-O3", "nvcc-G"):
        before.time(config, nvcc_before, config, unit(False))
    before.time("ptxas-O0", ptxas_o0)
    if newest:
        before.time("no-restrict", nvrtc_lib.compile_cubin, newest, unit(True))
    before.time("cpu", harness, jobs)
    launches["before"] += 2 * 6 * len(kernels)
    # after: this tree's builds (one nvcc front end), no-restrict where it differs
    tb._NVVM.clear()
    o3 = after.time("nvcc-O3", tb.build, "nvcc-O3", items)[1]
    g_before = after.spent.get("nvcc-G", 0.0)
    after.time("nvcc-G", tb.build, "nvcc-G", items)
    g_rounds.append((r, len(kernels), after.spent["nvcc-G"] - g_before))
    after.time("ptxas-O0", tb.build, "ptxas-O0", items)
    after.time("ptx-jit", tb.build, "ptx-jit", items)
    with_restrict = [it for it in items if "__restrict__" in it[2]]
    plain_cubin = after.time("no-restrict", nvrtc_lib.compile_cubin, newest,
                             unit(True, with_restrict))[0] if with_restrict \
        and newest else None
    mine = after.time("digests", tb.kernel_digests, cubin)
    same_o3 = after.time("digests", tb.kernel_digests, o3)
    plain = after.time("digests", tb.kernel_digests, plain_cubin)
    restrict = {i for i, _, _ in with_restrict}
    shared_o3 = sum(1 for i in index if i in mine and mine[i] == same_o3.get(i))
    shared_nr = sum(1 for i in index if i not in restrict
                    or (i in mine and plain.get(i) == mine[i]))
    launches["after"] += 6 * len(kernels) - shared_o3 - shared_nr  # one each
    launches["shared_nvcc_O3"] += shared_o3
    launches["shared_no_restrict"] += shared_nr
    built[0] += len(items)
    return len(kernels)


built = [0]
g_rounds: list[tuple[int, int, float]] = []  # (round, programs, nvcc-G CPU seconds)


def _nvrtc_label() -> str:
    from gpusem.compiler.backends.nvrtc_lib import find_nvrtc

    found = find_nvrtc()
    return found[0].label if found else "none"


def _nvcc_version() -> str:
    from gpusem.compiler.backends.toolchain_build import tool_version

    return tool_version("nvcc")


def table(clock: Clock, programs: int) -> dict[str, float]:
    return {k: round(1e3 * v / programs, 2) for k, v in sorted(clock.spent.items())}


def per_min(ms: float) -> int:
    return round(CORES * 60_000 / ms)


def g_every_block(k: int, after: Clock, programs: int, launches: dict[str, int],
                  launch_ms: float, h200: str | None) -> dict:
    """`after` (K = 1) against `sampled` (nvcc-G on the rounds r % k == 0 only), and
    the estimate for each K of `KS` from nvcc-G's cost per program (here, and on the
    H200 host where its JSON is given)."""
    g_ms = 1e3 * sum(s for _, _, s in g_rounds) / programs
    kept = [(r, n, s) for r, n, s in g_rounds if r % k == 0]
    left_out = programs - sum(n for _, n, _ in kept)
    every_ms = 1e3 * sum(after.spent.values()) / programs
    sampled = dict(table(after, programs))
    sampled["nvcc-G"] = round(1e3 * sum(s for _, _, s in kept) / programs, 2)
    sampled_ms = every_ms - g_ms + sampled["nvcc-G"]
    every_all = every_ms + launch_ms * launches["after"] / programs
    sampled_all = sampled_ms + launch_ms * (launches["after"] - left_out) / programs
    out: dict = {
        "k": k, "rounds": [r for r, _, _ in g_rounds],
        "rounds_with_nvcc_G": [r for r, _, _ in kept],
        "programs_with_nvcc_G": programs - left_out,
        "nvcc_G_cpu_ms_per_program_every_round": round(g_ms, 2),
        "cpu_ms_per_program": {"after": table(after, programs), "sampled": sampled},
        "cpu_ms": {"after": round(every_ms, 1), "sampled": round(sampled_ms, 1)},
        "cpu_and_launches_ms": {"after": round(every_all, 1),
                                "sampled": round(sampled_all, 1)},
        f"estimated_per_min_on_{CORES}_cores": {"after": per_min(every_all),
                                               "sampled": per_min(sampled_all)},
        # nvcc-G's build and its one launch, on 1/K of the programs
        "estimated_per_min_by_k": {str(n): per_min(
            every_all - (1 - 1 / n) * (g_ms + launch_ms)) for n in KS},
    }
    if h200:
        there = json.loads(Path(h200).read_text())
        g_there = there["cpu_ms_per_program"]["after"]["nvcc-G"]
        base = there["cpu_and_launches_ms_after"]
        out["h200"] = {
            "from": h200, "nvcc_G_cpu_ms_per_program": g_there,
            "cpu_and_launches_ms_every_round": base,
            "estimated_per_min_by_k": {str(n): per_min(
                base - (1 - 1 / n) * (g_there + there["launch_ms"])) for n in KS}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--launch-ms", type=float, default=4.0)
    ap.add_argument("--json", required=True)
    ap.add_argument("--g-every", type=int, default=None,
                    help="K: nvcc-G on every K-th round (default: the tree's)")
    ap.add_argument("--h200", default=None,
                    help="a toolchain_cost JSON of the H200 host, for its estimate")
    args = ap.parse_args()
    from gpusem.compiler.backends.toolchain import G_EVERY

    k = args.g_every or G_EVERY
    before, after = Clock(), Clock()
    launches = {"before": 0, "after": 0, "shared_nvcc_O3": 0, "shared_no_restrict": 0}
    programs = sum(one_round(args.seed, r, args.round_size, before, after, launches)
                   for r in range(args.rounds))
    out: dict = {
        "command": "python " + " ".join(sys.argv), "programs_compared": programs,
        "distinct_kernels_built": built[0],
        "machine": f"{platform.machine()} dev machine, 2 cores (shared), no GPU",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "nvrtc": _nvrtc_label(), "nvcc": _nvcc_version(),
        "cpu_ms_per_program": {"before": table(before, programs),
                               "after": table(after, programs)},
        "gpu_launches_per_program": {k: round(v / programs, 2)
                                     for k, v in launches.items()},
        "cpu_programs_after": 0,
    }
    out["launch_ms"] = args.launch_ms
    for when, clock in (("before", before), ("after", after)):
        ms = 1e3 * sum(clock.spent.values()) / programs
        with_launches = ms + args.launch_ms * launches[when] / programs
        out[f"cpu_ms_{when}"] = round(ms, 1)
        out[f"cpu_and_launches_ms_{when}"] = round(with_launches, 1)
        out[f"estimated_per_min_on_{CORES}_cores_{when}"] = round(
            CORES * 60_000 / with_launches)
    out["g_every"] = g_every_block(k, after, programs, launches, args.launch_ms,
                                   args.h200)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
