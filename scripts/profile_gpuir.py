"""Where the time goes per program of the GPU IR target's `seqpar` property, and why
its programs are not compared (issue 31.6).

Runs the campaign's own rounds by hand (`generate_round` of the target's strategy,
seeded as `gpusem fuzz --target gpuir --seed S` seeds them, then the target's batch
check and `check`, as the campaign loop does) with each stage timed (wall and CPU
seconds of this process; the backend's worker processes are waited for, so their time
is inside `backend`):

  generate   hypothesis draws the round
  sync       the AMIR sync check (the reference's verdict: accepted / rejected)
  prepare    GPU IR -> CUDA and the inputs (`compiler/gpuir_cuda`)
  backend    the backend's build, launches and the comparison with seq[[p]]
  other      the rest of the target's batch check and `check`

and tallies every program that is not compared by its reason (the verdict's kind and
the first words of its detail; and by the result's kind alone, which is the target's
reason since issue 31.6's report table: `not_compared_by_reason`).

`--backend nvrtc` is the cuda path with no GPU (issue 31.6: what a GPU's host CPUs
spend per program): the target runs as on cuda (its launch watchdog, its batches), and
its backend is the cuda backend itself, in process, with a stand-in for the worker's
device that builds every module with NVRTC as the worker does (`Device.build`: the
kernels of a batch in one namespaced unit, the backend's options, a cubin for sm_90)
through the newest installed libnvrtc (`nvrtc_lib`, no driver), timed as `nvrtc`
(inside `backend`), and launches nothing: each launch answers "unsupported", so every
compiled program counts as not compared there (its shares come from a cpu or cuda
run). Each run builds into a fresh cache folder (a tree profiled second does not find
the first one's g++ libraries).

  python scripts/profile_gpuir.py --backend cpu --rounds 4 --json out.json
  python scripts/profile_gpuir.py --tree /path/to/before --tree . --rounds 4
    (each tree's src/ in a process of its own, one table: before/after in one command)
  python scripts/profile_gpuir.py --backend nvrtc --tree /path/to/before --tree .
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from tree_runs import tree_env

STAGES = ("generate", "sync", "prepare", "backend", "other")
NO_LAUNCH = "unsupported: no GPU launch (profile_gpuir.py --backend nvrtc)"


class Clock:
    def __init__(self) -> None:
        self.wall: Counter[str] = Counter()
        self.cpu: Counter[str] = Counter()

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            w0, c0 = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.wall[stage] += time.perf_counter() - w0
                self.cpu[stage] += time.process_time() - c0
        return timed


def reason(kind: str, detail: str) -> str:
    """A not-compared program's reason: its kind and the detail up to its first
    parenthesis or comma, numbers taken out (so that reasons group)."""
    head = re.split(r"[(,\n]", detail, maxsplit=1)[0].strip()
    head = re.sub(r"\b\d+\b", "N", head)
    return f"{kind}: {head[:80]}"


def profile(backend: str, rounds: int, round_size: int, seed: int) -> dict[str, Any]:
    from gpusem.fuzz import campaign
    from gpusem.fuzz.gpuir import seqpar
    from gpusem.fuzz.hunt import generate_round
    from gpusem.fuzz.targets import load_target

    clock = Clock()
    for name, stage in (("_sync_verdict", "sync"), ("prepare", "prepare"),
                        ("make_inputs", "prepare"), ("check_batch", "backend")):
        setattr(seqpar, name, clock.wrap(stage, getattr(seqpar, name)))
    if backend == "nvrtc":
        _nvrtc_instead_of_a_gpu(clock)
    # every program's class (holds, witness, ...) and the launches that failed (a
    # timeout costs seconds on a GPU: a rejected program's hang passes as a witness)
    classes: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    check_sources = seqpar.check_sources

    def counted(*args: Any, **kwargs: Any) -> Any:
        found = check_sources(*args, **kwargs)
        for o in found:
            classes[f"{o.sync}/{o.classification}"] += 1
            if o.verdict.kind == "kernel-failed":
                failed[reason(o.classification, o.verdict.message)] += 1
        return found

    seqpar.check_sources = counted
    target = load_target("gpuir", "cuda" if backend == "nvrtc" else backend)
    strategy = target.strategy("seqpar")
    outcomes: Counter[str] = Counter()
    not_compared: Counter[str] = Counter()
    by_reason: Counter[str] = Counter()  # the target's own reason (its result's kind)
    programs = 0
    w_all, c_all = time.perf_counter(), time.process_time()
    try:
        for r in range(rounds):
            gen = clock.wrap("generate", generate_round)
            drawn = gen(strategy, campaign.round_seed(seed, r), round_size)
            kernels = [d.program for d in drawn]
            target.prefetch(kernels, "seqpar")
            for k in kernels:
                res = target.check(k, "seqpar")
                programs += 1
                outcomes[res.status] += 1
                if res.status == "invalid":
                    not_compared[reason(res.kind, res.detail)] += 1
                    by_reason[res.kind] += 1
    finally:
        target.close()
    wall = time.perf_counter() - w_all
    cpu = time.process_time() - c_all
    named_w = sum(clock.wall[s] for s in STAGES if s != "other")
    named_c = sum(clock.cpu[s] for s in STAGES if s != "other")
    clock.wall["other"], clock.cpu["other"] = wall - named_w, cpu - named_c
    per = max(1, programs)
    shown = (*STAGES, "nvrtc") if backend == "nvrtc" else STAGES
    return {
        "backend": backend, "seed": seed, "rounds": rounds, "round_size": round_size,
        "programs": programs,
        "ms_per_program": {"wall": {s: round(1e3 * clock.wall[s] / per, 2)
                                    for s in shown},
                           "cpu": {s: round(1e3 * clock.cpu[s] / per, 2)
                                   for s in shown},
                           "total_wall": round(1e3 * wall / per, 2),
                           "total_cpu": round(1e3 * cpu / per, 2)},
        "outcomes": dict(outcomes),
        "not_compared_share": round(outcomes["invalid"] / per, 3),
        "not_compared": dict(not_compared.most_common()),
        "not_compared_by_reason": dict(by_reason.most_common()),
        "classes": dict(classes.most_common()),
        "failed_launches": dict(failed.most_common()),
    }


def _nvrtc_instead_of_a_gpu(clock: Clock) -> None:
    """The cuda backend, in process, its device a stand-in that builds with NVRTC
    (no driver) and launches nothing (see the module docstring)."""
    from gpusem.compiler.backends import cpu_source
    from gpusem.compiler.backends.cuda import CudaBackend
    from gpusem.compiler.backends.cuda_worker import Device
    from gpusem.compiler.backends.nvrtc_lib import compile_cubin, find_nvrtc
    from gpusem.compiler.gpuir_cuda import run

    nvrtc = find_nvrtc()[0]  # the newest

    class NvrtcDevice(Device):
        def __init__(self) -> None:  # no CuPy, no context
            self.modules, self.functions = {}, {}

        def compile(self, items: list[tuple[int, str, str]]
                    ) -> tuple[bytes | None, dict, str]:
            unit = cpu_source.namespaced_unit(
                [(i, f"k{i}_src", src, "") for i, _, src in items], for_cpu=False)
            binary, log = clock.wrap("nvrtc", compile_cubin)(nvrtc, unit, "batch.cu")
            return binary, {i: name for i, name, _ in items}, log

        def load(self, key: str, binary: bytes, lowered: dict[int, str]) -> None:
            self.modules[key] = (binary, lowered)

        def launch(self, *payload: Any) -> tuple[str, str, dict, float]:
            return "unsupported", NO_LAUNCH, {}, 0.0

    backend = CudaBackend(in_process=True)
    backend._device = NvrtcDevice()
    shared = run.shared_backend
    run.shared_backend = lambda name: backend if name == "cuda" else shared(name)


def table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    out = [f"{'ms per program (cpu / wall)':32}" + "".join(
        f"{label[-28:]:>30}" for label, _ in rows)]
    for s in (*STAGES, "total", "nvrtc"):
        if s not in rows[0][1]["ms_per_program"]["cpu"] and s != "total":
            continue
        cells = []
        for _, r in rows:
            m = r["ms_per_program"]
            c = m["total_cpu"] if s == "total" else m["cpu"][s]
            w = m["total_wall"] if s == "total" else m["wall"][s]
            cells.append(f"{c:>14.2f} / {w:<13.2f}")
        out.append(f"{s:32}" + "".join(cells))
    for label, r in rows:
        out.append(f"\n{label}: {r['programs']} programs, outcomes {r['outcomes']}, "
                   f"not compared {100 * r['not_compared_share']:.1f}%")
        out += [f"  {n:6}  {why}" for why, n in r["not_compared"].items()]
        out.append("  by the target's reason (its result's kind):")
        out += [f"  {n:6}  {100 * n / max(1, r['programs']):5.1f}%  {why}"
                for why, n in r.get("not_compared_by_reason", {}).items()]
        out.append(f"  classes: {r.get('classes', {})}")
        out += [f"  {n:6}  failed launch: {why}"
                for why, n in r.get("failed_launches", {}).items()]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--round-size", type=int, default=25)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--tree", action="append", default=[],
                    help="a source tree to profile (its src/), repeatable")
    ap.add_argument("--json")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    rows = []
    if args.tree and not args.one:
        for tree in args.tree:
            env = tree_env(tree)
            cmd = [sys.executable, __file__, "--one", "--backend", args.backend,
                   "--rounds", str(args.rounds), "--round-size", str(args.round_size),
                   "--seed", str(args.seed)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  check=True)
            rows.append((tree, json.loads(done.stdout.splitlines()[-1])))
    else:
        with tempfile.TemporaryDirectory(prefix="gpusem-profile-") as cache:
            os.environ["GPUSEM_CACHE_DIR"] = cache  # builds made here, not found
            result = profile(args.backend, args.rounds, args.round_size, args.seed)
        if args.one:
            print(json.dumps(result))
            return
        rows.append(("this tree", result))
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": "python " + " ".join(sys.argv),
                       "runs": [{"tree": t, **r} for t, r in rows]}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
