"""The compile census: generated programs that Exo-GPU and gpusem both accept, compiled
by Exo, built with nvcc for sm_90a and run (backend `cuda`) or only built (backend
`cpu`), each compared with the sequential reading (`fuzz/exo/compile_property.py`).
Issue 16, item 5: "at least 1,000 Exo-compiled kernels run on the H100".

Run: `python -m gpusem.fuzz.exo.compile_census --kernels 1000 --jobs 16
--backend cuda --out FILE.json --bundles DIR`. Each job draws its own rounds (as the
verdict census does, from `--seed`), checks them with both checkers, compiles the
accepted ones in batches of `--batch` (one Exo compile, one nvcc build, one runner
process per batch) until it has run its share of kernels; a finding's first program
is written as a bundle (`gpusem replay DIR` re-runs it).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import time
from collections import Counter


def _job(args: tuple) -> dict:
    j, jobs, quota, seed, batch, backend, bundles, deadline, steer = args
    from gpusem.compiler.gpuir_exo.driver import ExoDriver
    from gpusem.compiler.gpuir_exo.harness import Harness
    from gpusem.fuzz.exo.census_tally import round_programs
    from gpusem.fuzz.exo.checking import check_program
    from gpusem.fuzz.exo.compile_property import compile_batch

    tally: dict = {"outcomes": Counter(), "programs": 0, "kernels": 0,
                   "findings": {}, "seconds": Counter(), "features": {}}
    harness = Harness(backend)
    r = j
    with ExoDriver() as driver:
        tally["install"] = driver.install.as_json()
        pending: list = []
        while tally["kernels"] < quota and time.time() < deadline:
            t0 = time.perf_counter()
            for k in round_programs(seed, r, steer=steer):
                c = check_program(driver, k)
                tally["programs"] += 1
                if c.both_accept:
                    pending.append(c)
            tally["seconds"]["check"] += time.perf_counter() - t0
            r += jobs
            while len(pending) >= batch or (pending and r > j + 200 * jobs):
                todo, pending = pending[:batch], pending[batch:]
                t0 = time.perf_counter()
                for res in compile_batch(driver, harness, todo, seed=r * 1000):
                    record(tally, res.outcome, res.features, res.result(), bundles,
                           {"backend": backend, "seed": seed})
                tally["seconds"]["compile_build_run"] += time.perf_counter() - t0
            if r > j + 400 * jobs:
                break  # a generator that stopped producing accepted programs
    harness.close()
    return tally


def record(tally: dict, outcome: str, features: frozenset | set, cr, bundles: str,
           where: dict) -> None:
    """One compiled kernel into the tally: its outcome per feature, and a finding
    (its first program a bundle) unless it agreed, was only built, or was not
    compared (the G2 rule: a program that reads memory before writing it has no
    defined CUDA result; stop 30's H200 census wrote those 14 as an empty finding)."""
    from gpusem.fuzz.bundle import write_bundle

    tally["kernels"] += 1
    tally["outcomes"][outcome] += 1
    for f in sorted(features) or ["none"]:
        tally["features"].setdefault(f, Counter())[outcome] += 1
    if cr.status in ("pass", "skip", "invalid"):
        return
    f = tally["findings"].setdefault(cr.signature, {
        "kind": cr.kind, "count": 0, "detail": cr.detail})
    f["count"] += 1
    if f["count"] == 1 and bundles:
        meta = {"target": "exo", "property": "compile", "signature": cr.signature,
                "kind": cr.kind, "detail": cr.detail, "size": cr.size,
                "exo": tally.get("install"), **where}
        f["bundle"] = str(write_bundle(bundles, meta, cr.files))


def _merge(parts: list[dict]) -> dict:
    total: dict = {"outcomes": Counter(), "programs": 0, "kernels": 0, "findings": {},
                   "seconds": Counter(), "features": {}}
    for p in parts:
        for f, outs in p.get("features", {}).items():
            total["features"][f] = total["features"].get(f, Counter()) + Counter(outs)
        total["outcomes"] += Counter(p["outcomes"])
        total["seconds"] += Counter(p["seconds"])
        total["programs"] += p["programs"]
        total["kernels"] += p["kernels"]
        total.setdefault("install", p.get("install"))
        for s, f in p["findings"].items():
            if s in total["findings"]:
                total["findings"][s]["count"] += f["count"]
            else:
                total["findings"][s] = dict(f)
    return total


def device_info() -> dict:
    out: dict = {}
    for key, cmd in (("gpu", ["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"]),
                     ("nvcc", [os.environ.get("GPUSEM_NVCC", "nvcc"), "--version"])):
        try:
            text = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                                  check=False).stdout
            out[key] = text.strip().splitlines()[-1] if text.strip() else "none"
        except (OSError, subprocess.TimeoutExpired):
            out[key] = "none"
    return out


def run(kernels: int, seed: int, jobs: int, batch: int, backend: str,
        bundles: str, seconds: float = 1e9, steer: bool = False) -> dict:
    """`seconds`: no job starts a new round after that long (the JSON is written
    whatever is done: a device call has a hard time limit)."""
    quota = -(-kernels // jobs)
    deadline = time.time() + seconds
    args = [(j, jobs, quota, seed, batch, backend, bundles, deadline, steer)
            for j in range(jobs)]
    t0 = time.time()
    if jobs == 1:
        parts = [_job(args[0])]
    else:
        with mp.get_context("spawn").Pool(jobs) as pool:
            parts = pool.map(_job, args)
    total = _merge(parts)
    total.update(seconds_wall=round(time.time() - t0, 1), seed=seed, jobs=jobs,
                 backend=backend, batch=batch, steer=steer, device=device_info())
    # per async feature: kernels that used it, and how many ran and agreed
    total["feature_kernels"] = {f: sum(v.values())
                                for f, v in sorted(total["features"].items())}
    return total


def main(argv: list[str] | None = None) -> None:
    from gpusem.fuzz.exo.census import common_arguments, require_exo, write_json

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=100)
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--bundles", default="")
    ap.add_argument("--steer", action="store_true",
                    help="draw the async mix (mbarrier rings, clusters, cp.async "
                    "pipelines: strategies.compile_programs) instead of the verdict "
                    "census's programs")
    common_arguments(ap)
    a = ap.parse_args(argv)
    require_exo(a.exo_python)
    total = run(a.kernels, a.seed, a.jobs, a.batch, a.backend, a.bundles, a.seconds,
                a.steer)
    write_json(total, a.out)
    print(f"{total['kernels']} Exo-compiled kernels ({a.backend}) from "
          f"{total['programs']} programs in {total['seconds_wall']} s: "
          f"{dict(total['outcomes'])}; per feature {total['feature_kernels']}; "
          f"{len(total['findings'])} finding signatures "
          f"-> {a.out}")


if __name__ == "__main__":
    main()
