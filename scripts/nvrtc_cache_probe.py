"""Does NVRTC answer the cuda worker's build from a cache, and what does the cache cost
a campaign of new programs? (issue 31.3)

NVRTC 12.9 and later keep compiled PTX and cubins in the CUDA driver's compute cache
where a driver is loaded (the library's own strings: "[nvrtc cache] ...", "Successfully
retrieved cached cubin from driver cache, skip compilation", the options `--no-cache`
and `--enable-cache-trace`, and the variable CUDA_CACHE_DISABLE). With no driver (CI,
the development machines) there is no cache, which is why a repeated batch cost the
same there and ~7x less on the H200 (results/scale/h200_2026-11-30m).

For each round of the compile property's kernels of `--seed` (draw a seed this lease
has not built, or the first call is not a miss), built as the worker builds a batch
(`cuda_worker.Device.run_nvrtc` through CuPy, the worker's options), in this order:

  nocache_1  the worker's options + --no-cache   (compiles, writes nothing)
  cache_1    the worker's options                (a miss: compiles, writes the entry)
  cache_2    the same call again                 (a hit: the driver cache's answer)
  nocache_2  the worker's options + --no-cache   (compiles again)

CPU ms per kernel of each, the cubins compared byte for byte (all four must be one
cubin), NVRTC's own cache trace of one round (`--enable-cache-trace`: the program log),
the cache variables of the environment and which files under the cache path, ~/.nv
and ~/.cache the run wrote.

  python3 scripts/nvrtc_cache_probe.py --seed 9141 --rounds 3 --json out.json
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ORDER = ("nocache_1", "cache_1", "cache_2", "nocache_2")


def written_since(roots: list[str], since: float) -> dict[str, dict]:
    """Per root: files modified after `since` (count, bytes, a few names)."""
    out = {}
    for root in roots:
        files, size = [], 0
        for folder, _, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if st.st_mtime >= since:
                    files.append(path)
                    size += st.st_size
        out[root] = {"files": len(files), "bytes": size, "some": sorted(files)[:5]}
    return out


def cache_lines(log: str) -> list[str]:
    """The log's cache lines (its warnings are the kernels' unused variables)."""
    return [line for line in log.splitlines() if "cache" in line.lower()][:40]


def main(argv: list[str] | None = None) -> int:
    import nvrtc_probe
    from gpusem.compiler.backends import cpu_source
    from tree_runs import write_result
    from gpusem.compiler.backends.cuda_worker import BUILD_SPEEDUPS, NVRTC_OPTIONS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--nvrtc", default="cupy", help="cupy (the worker's) or a path")
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    build, nvrtc = nvrtc_probe.binding(args.nvrtc, nvrtc_cache=True)
    rounds = nvrtc_probe.kernels(args.seed, args.rounds, args.round_size)
    worker = [*NVRTC_OPTIONS, *BUILD_SPEEDUPS]
    options = {"nocache_1": [*worker, "--no-cache"], "cache_1": worker,
               "cache_2": worker, "nocache_2": [*worker, "--no-cache"]}
    home = os.path.expanduser("~")
    cache_path = os.environ.get("CUDA_CACHE_PATH", os.path.join(home, ".nv"))
    roots = sorted({cache_path, os.path.join(home, ".nv"), os.path.join(home, ".cache")})
    nvrtc_probe.call(build, [nvrtc_probe.EMPTY], worker)  # NVRTC loaded
    start = time.time() - 1

    cpu = {v: 0.0 for v in ORDER}
    kernels_n, same, per_round = 0, 0, []
    for batch in rounds:
        row, digests = {}, {}
        for v in ORDER:
            ms, digests[v] = nvrtc_probe.call(build, batch, options[v])
            cpu[v] += ms
            row[v] = round(ms / len(batch), 3)
        same += len(set(digests.values())) == 1
        kernels_n += len(batch)
        per_round.append({"kernels": len(batch), "cpu_ms_per_kernel": row,
                          "one_cubin": len(set(digests.values())) == 1})

    # NVRTC's own word on a hit: the last round again, traced (its log).
    batch = rounds[-1]
    unit = cpu_source.namespaced_unit(
        [(i, f"k{i}_src", src, "") for i, (_, src) in enumerate(batch)], for_cpu=False)
    exprs = {i: f"gs_k{i}::{name}" for i, (name, _) in enumerate(batch)}
    _, _, log_hit = build(unit, exprs, [*worker, "--enable-cache-trace"])
    _, _, log_off = build(unit, exprs, [*worker, "--no-cache", "--enable-cache-trace"])

    result = {
        "nvrtc": nvrtc, "seed": args.seed, "rounds": args.rounds,
        "round_size": args.round_size, "kernels": kernels_n,
        "order": list(ORDER),
        "cpu_ms_per_kernel": {v: round(cpu[v] / kernels_n, 3) for v in ORDER},
        "rounds_one_cubin": f"{same}/{len(rounds)}",
        "per_round": per_round,
        "cache_trace_hit_log": cache_lines(log_hit),
        "cache_trace_nocache_log": cache_lines(log_off),
        "env": {k: v for k, v in os.environ.items() if k.startswith("CUDA_CACHE")},
        "written": written_since(roots, start),
        "options_worker": worker[len(NVRTC_OPTIONS):],
        "device": os.environ.get("GPUSEM_DEVICE", ""),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "command": shlex.join([os.path.basename(sys.executable), *sys.argv]),
        "digest_of_first_round": hashlib.sha256(
            repr(rounds[0]).encode()).hexdigest()[:16]}
    write_result(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
