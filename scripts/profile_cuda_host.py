"""The cuda backend's host side with no GPU (issue 31.3): what `CudaBackend.run` costs
the CPU per program of the bundl target's `compile` property, apart from NVRTC and the
GPU. The backend is the real one, with its real worker process, pipe and protocol
(`build`, `launch_many`, one reply per launch); only the worker's `Device` is a
stand-in whose build answers at once and whose launch hands the arrays back copied
(what `cupy.asarray` and `cupy.asnumpy` leave: new arrays). So it times the parent's
part (arguments prepared, keys hashed, payloads built and pickled, replies read) and
the worker's Python (unpickling, the dispatch, pickling the replies), not CuPy's
calls, the copies to and from the GPU or the kernels (`profile_stages.py --backend
cuda` on a GPU has those).

  python scripts/profile_cuda_host.py --rounds 6
  python scripts/profile_cuda_host.py --tree /path/to/main --tree . --turns 2 \
      --json results/scale/stagecost/cuda_host.json

The rounds are the campaign's (seed 0, rounds of 100, `generate_round`); the programs
compared are those whose fast reference the campaign compares; per program four jobs
(HARNESS_SEEDS), as `check_batch` makes them. With `--tree`, each tree's src/ runs in a
process of its own, the trees in turns, so a shared machine's load falls on both.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

from profile_stages import live_children_cpu, round_launch_jobs  # this folder's
from tree_runs import tree_env


class StandinDevice:
    """The worker's `Device` with no GPU: builds nothing, launches nothing."""

    def __init__(self) -> None:
        self.modules: dict[str, object] = {}

    def build(self, key: str, items: list[tuple[int, str, str]]):
        return {}, b"standin", {i: f"gs_k{i}" for i, _, _ in items}

    def load(self, key: str, binary: bytes, lowered: dict) -> None:
        self.modules[key] = lowered

    def unload(self, keys: list[str]) -> None:
        for key in keys:
            self.modules.pop(key, None)

    def launch(self, key, index, grid, block, dyn, params, arrays, scalars,
               timing=None, scribble=True):
        return "ok", "", {n: a.copy() for n, a in arrays.items()}, 0.0


def standin_serve(conn, parent_pid: int | None = None, pdeathsig: bool = False) -> None:
    """`cuda_worker.serve` with the stand-in device (the spawned worker's target)."""
    from gpusem.compiler.backends import cuda_worker

    cuda_worker.Device = StandinDevice  # type: ignore[misc]
    cuda_worker.serve(conn, parent_pid, pdeathsig)


def one(rounds: int, round_size: int, seed: int) -> dict:
    from gpusem.compiler.backends import cuda
    from gpusem.fuzz.bundl.target import BundlTarget

    target = BundlTarget(backend="cuda")
    try:
        batches = [round_launch_jobs(target, seed, r, round_size) for r in range(rounds)]
    finally:
        target.close()
    backend, serve = cuda.CudaBackend(), cuda.serve
    cuda.serve = standin_serve  # what CudaBackend._spawn starts (put back after)
    try:
        backend.run([j for j in batches[0][0]])  # the worker started, untimed
        programs = launches = 0
        t0, c0, w0 = os.times(), live_children_cpu(), time.perf_counter()
        for per_program in batches:
            jobs = [j for js in per_program for j in js]
            results = backend.run(jobs)
            assert all(res.kind == "ok" for res in results), {r.kind for r in results}
            programs += len(per_program)
            launches += len(jobs)
        t1, c1, wall = os.times(), live_children_cpu(), time.perf_counter() - w0
    finally:
        backend.close()
        cuda.serve = serve
    parent = (t1.user + t1.system) - (t0.user + t0.system)
    worker = c1 - c0
    n = max(1, programs)
    return {"programs": programs, "launches": launches, "wall_s": round(wall, 3),
            "parent_cpu_ms_per_program": round(1e3 * parent / n, 3),
            "worker_cpu_ms_per_program": round(1e3 * worker / n, 3),
            "cpu_ms_per_program": round(1e3 * (parent + worker) / n, 3),
            "stats": dict(backend.stats)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tree", action="append", default=[])
    ap.add_argument("--turns", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if not args.tree:
        out = one(args.rounds, args.round_size, args.seed)
        print(json.dumps(out))
        return 0
    runs: dict[str, list[dict]] = {t: [] for t in args.tree}
    for _ in range(args.turns):
        for tree in args.tree:
            env = tree_env(tree)
            cmd = [sys.executable, os.path.abspath(__file__), "--rounds",
                   str(args.rounds), "--round-size", str(args.round_size),
                   "--seed", str(args.seed)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  check=True)
            runs[tree].append(json.loads(done.stdout.splitlines()[-1]))
    keys = ("parent_cpu_ms_per_program", "worker_cpu_ms_per_program",
            "cpu_ms_per_program")
    trees = []
    for tree, rs in runs.items():
        n = sum(r["programs"] for r in rs)
        row = {k: round(sum(r[k] * r["programs"] for r in rs) / max(1, n), 3)
               for k in keys}
        trees.append({"tree": tree, "programs": n, **row, "runs": rs})
        print(f"{tree}: {n} programs, CPU ms a program: parent "
              f"{row['parent_cpu_ms_per_program']}, worker "
              f"{row['worker_cpu_ms_per_program']}, both {row['cpu_ms_per_program']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": args.rounds, "round_size": args.round_size,
                       "seed": args.seed, "turns": args.turns,
                       "cores": os.cpu_count(), "loadavg": os.getloadavg(),
                       "trees": trees,
                       "command": shlex.join(["python", *sys.argv])}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
