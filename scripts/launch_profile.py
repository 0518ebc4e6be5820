"""Where the cuda backend's `launch` stage spends CPU per program of the `compile`
property (issue 31.3: 1.3-1.5 of the campaign's 12.8 CPU ms a program on the H200s,
results/scale/h200x2_2026-11-30j). Needs a GPU.

Draws the rounds a campaign with `--seed` checks (as profile_stages.py does), builds
each round's kernels, then runs the round's launch jobs (`HARNESS_SEEDS` per program)
twice: through the campaign's backend (the spawned CUDA worker: this process's CPU
and the worker's, read from /proc), and through `CudaBackend(in_process=True)` under
cProfile, whose time is split by what it is spent in: the host-to-device copies
(`cupy.asarray`), the device-to-host copies (`cupy.asnumpy`), the shared-memory
scribble, the kernel launch call, the wait for the GPU, the rest; and the round's
build in this process (NVRTC, the module's load, the rest), also under cProfile, and
the campaign's build through the worker (this process's CPU and each child's).

    python3 scripts/launch_profile.py --rounds 3 --json launch_profile.json
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# cProfile's functions (file fragment, name) -> the part of a launch they are
PARTS = {
    "h2d": [("cupy/_creation/from_data", "asarray")],
    "d2h": [("cupy/_core", "asnumpy"), ("cupy/__init__", "asnumpy")],
    "scribble": [("cuda_worker", "scribble")],
    "wait": [("", "deviceSynchronize")],
    "launch call": [("cupy/_core/raw", "__call__"), ("", "launchKernel")],
}


# the in-process build (`CudaBackend._ensure_built`): NVRTC, the module's load
BUILD_PARTS = {"nvrtc": ("", "compileProgram"), "cubin": ("", "getCUBIN"),
               "module load": ("cuda_worker", "load"),
               "unit": ("cpu_source", "namespaced_unit")}


def part_seconds(stats: pstats.Stats) -> dict[str, float]:
    """Cumulative seconds of each PARTS entry (the first function that matches)."""
    out = dict.fromkeys(PARTS, 0.0)
    for (file, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():
        for part, keys in PARTS.items():
            if any(frag in file and name == fn for frag, fn in keys):
                out[part] = max(out[part], ct)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    import profile_stages as ps

    from gpusem.compiler.backends.cuda import CudaBackend
    from gpusem.fuzz.bundl import compile_property as cp
    from gpusem.fuzz.bundl.target import BundlTarget

    target = BundlTarget(backend="cuda")
    worker_backend = cp.shared_backend("cuda")
    local = CudaBackend(in_process=True)
    ps._warm_up(target, "cuda", args.seed)
    programs, launches, worker_cpu, worker_wall = 0, 0, 0.0, 0.0
    worker_build_own, worker_build_kids = 0.0, {}
    prof, build_prof = cProfile.Profile(), cProfile.Profile()
    local_cpu = build_cpu = 0.0
    for r in range(args.rounds):
        per_program = ps.round_launch_jobs(target, args.seed, r, args.round_size)
        programs += len(per_program)
        jobs = [j for js in per_program for j in js]
        launches += len(jobs)
        own0, kids0 = time.process_time(), ps.children_cpu()
        ps._build(worker_backend, [j.spec for j in jobs])
        worker_build_own += time.process_time() - own0
        for pid, (name, cpu) in ps.children_cpu().items():
            was = kids0.get(pid, (name, 0.0))[1]
            worker_build_kids[name] = worker_build_kids.get(name, 0.0) + cpu - was
        cpu0, wall0 = ps.tree_cpu(), time.perf_counter()
        worker_backend.run(jobs)
        worker_cpu += ps.tree_cpu() - cpu0
        worker_wall += time.perf_counter() - wall0
        cpu0 = time.process_time()
        build_prof.enable()
        ps._build(local, [j.spec for j in jobs])  # NVRTC in this process
        build_prof.disable()
        build_cpu += time.process_time() - cpu0
        cpu0 = time.process_time()
        prof.enable()
        local.run(jobs)
        prof.disable()
        local_cpu += time.process_time() - cpu0
    target.close()
    stats = pstats.Stats(prof)
    parts = part_seconds(stats)
    named = sum(parts.values())
    per_program = {k: round(1e3 * v / max(1, programs), 3) for k, v in parts.items()}
    report = {
        "programs": programs, "launches": launches,
        "launches_per_program": round(launches / max(1, programs), 2),
        "worker_cpu_ms_per_program": round(1e3 * worker_cpu / max(1, programs), 3),
        "worker_wall_ms_per_program": round(1e3 * worker_wall / max(1, programs), 3),
        "in_process_cpu_ms_per_program": round(1e3 * local_cpu / max(1, programs), 3),
        "in_process_profiled_ms_per_program": per_program | {
            "rest": round(1e3 * (stats.total_tt - named) / max(1, programs), 3),
            "total": round(1e3 * stats.total_tt / max(1, programs), 3)},
        "seed": args.seed, "rounds": args.rounds, "round_size": args.round_size,
        "command": " ".join(["python3", *sys.argv]),
    }
    built = pstats.Stats(build_prof)
    build_parts = dict.fromkeys(BUILD_PARTS, 0.0)
    for (file, _line, name), (_cc, _nc, _tt, ct, _callers) in built.stats.items():
        for part, (frag, fn) in BUILD_PARTS.items():
            if frag in file and name == fn:
                build_parts[part] = max(build_parts[part], ct)
    report["worker_build_ms_per_program"] = {
        "this process": round(1e3 * worker_build_own / max(1, programs), 3)} | {
        f"child {name}": round(1e3 * cpu / max(1, programs), 3)
        for name, cpu in worker_build_kids.items()}
    report["backend_stats"] = dict(worker_backend.stats)
    report["in_process_build_cpu_ms_per_program"] = round(
        1e3 * build_cpu / max(1, programs), 3)
    report["in_process_build_profiled_ms_per_program"] = {
        k: round(1e3 * v / max(1, programs), 3) for k, v in build_parts.items()} | {
        "total": round(1e3 * built.total_tt / max(1, programs), 3)}
    print(json.dumps(report, indent=1))
    stats.sort_stats("tottime").print_stats(25)
    built.sort_stats("cumulative").print_stats(40)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
