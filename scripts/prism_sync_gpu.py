"""Issue 28 item 4 on a GPU: every corrected Appendix B program through the Bundl ->
CUDA compiler in each barrier placement, and B.3's scan against `cupy.cumsum`.

    python scripts/prism_sync_gpu.py --out gpu-out/prism_sync_gpu.json [--backend cuda]

For each `examples/prism/appendix_b/corrected/*.prism` and each mode of `--modes`
(default naive,motion,prism) it runs `gpusem exec FILE --backend B --sync MODE --json`
(a fresh process: the command a user types; B.5, `BIG_STEP`, in process against the
big-step outcome instead) and records its exit code, verdict kind
and wall time; and, in the prism mode, the compiled kernel's placed barriers
(`pipeline.count_barriers`, naive beside it). Then B.3: the kernel compiled in each
mode, launched once on the backend, its `x` compared with `cupy.cumsum` of the input
(numpy's on the cpu backend, which has no CuPy). One JSON table; exit 1 when a row
disagrees or a kernel fails (a program the reference declines as racy is counted
apart). The lead runs it (`bash scripts/gpu.sh prism-sync`); on the dev machine
`--backend cpu` runs the same table on the cpu harness.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORRECTED = ROOT / "examples" / "prism" / "appendix_b" / "corrected"


def exec_row(path: Path, mode: str, backend: str, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "gpusem", "exec", str(path), "--backend", backend,
           "--sync", mode, "--json"]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"program": path.stem, "mode": mode, "exit": None, "kind": "timeout",
                "seconds": round(time.monotonic() - start, 2)}
    kind = ""
    try:
        kind = json.loads(proc.stdout).get("kind", "")
    except json.JSONDecodeError:
        kind = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [""]
        kind = f"no JSON: {kind[0][:200]}"
    return {"program": path.stem, "mode": mode, "exit": proc.returncode, "kind": kind,
            "seconds": round(time.monotonic() - start, 2),
            "command": " ".join(cmd[1:])}


def sampled_row(path: Path, mode: str, backend: str) -> dict:
    """A program `exec` declines as racy (the z3 analysis does not prove B.1, B.2
    kernels 3-4 and B.4 race-free: scripts/prism_appendix_b.py) compared against the
    interpreter's sampled schedules instead, in process, and said so."""
    from gpusem.api.prism import parse
    from gpusem.fuzz.bundl.compile_property import check_program
    from gpusem.interpreter.bundl.reference import reference

    prog = parse(path.read_text(), str(path))
    start = time.monotonic()
    v = check_program(prog, backend, (0, 1, 2, 3) if backend == "cpu" else (0,),
                      ref=reference(prog, prove_race_free=False), sync=mode)
    return {"kind": v.kind, "detail": v.message[:300],
            "seconds": round(time.monotonic() - start, 2),
            "reference": "sampled schedules (race freedom not proven)"}


# Programs whose small-step reference is too slow for a device run: B.5's 384 threads
# take minutes per schedule (exec's round-robin run alone, then four for the sampled
# reference). They skip `gpusem exec` and are compared in process against the
# big-step outcome, which tests/prism/test_appendix_b.py checks against NumPy.
BIG_STEP = {"b5_h100_gemm"}


def big_step_row(path: Path, mode: str, backend: str) -> dict:
    from gpusem.api.prism import parse
    from gpusem.fuzz.bundl.compile_property import check_program
    from gpusem.interpreter.bundl.big_step import run_big_step
    from gpusem.interpreter.bundl.reference import Reference

    prog = parse(path.read_text(), str(path))
    start = time.monotonic()
    # run_big_step itself: fast_reference's smaller step budget would fall back to
    # the four small-step schedules (44 s of CPU for B.5)
    big = run_big_step(prog)
    v = check_program(prog, backend, (0, 1, 2, 3) if backend == "cpu" else (0,),
                      ref=Reference(big, fast=True), sync=mode)
    return {"program": path.stem, "mode": mode, "exit": None, "kind": v.kind,
            "detail": v.message[:300], "seconds": round(time.monotonic() - start, 2),
            "reference": "big-step (= NumPy; race freedom not proven)"}


def barrier_counts(path: Path) -> dict[str, int | str]:
    from gpusem.api.prism import parse
    from gpusem.compiler.bundl_cuda.pipeline import (
        CompileOptions,
        count_barriers,
        kir_after_sync,
    )

    prog = parse(path.read_text(), str(path))
    out: dict[str, int | str] = {}
    for mode in ("naive", "motion", "prism"):
        try:
            out[mode] = count_barriers(kir_after_sync(prog, CompileOptions(sync=mode)))
        except Exception as err:  # noqa: BLE001 - reported in the table, not hidden
            out[mode] = f"{type(err).__name__}: {err}"
    return out


def scan_rows(backend: str, modes: list[str]) -> list[dict]:
    """B.3 compiled in each mode, run once, `x` against cumsum of the input."""
    import numpy as np

    from gpusem.api.prism import parse
    from gpusem.compiler.backends import get_backend
    from gpusem.compiler.bundl_cuda.launch import initial_globals, jobs_for
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program

    path = CORRECTED / "b3_scan.prism"
    prog = parse(path.read_text(), str(path))
    x0 = initial_globals(prog)["g_x"]  # the elaborator names globals g_<arg>
    if backend == "cuda":
        import cupy

        want = cupy.asnumpy(cupy.cumsum(cupy.asarray(x0)))
        baseline = f"cupy.cumsum (CuPy {cupy.__version__})"
    else:
        want = np.cumsum(x0)
        baseline = "numpy.cumsum (cpu backend: no CuPy)"
    runner = get_backend(backend)
    rows = []
    try:
        for mode in modes:
            kernel = compile_program(prog, CompileOptions(sync=mode))
            start = time.monotonic()
            (result,) = runner.run(jobs_for(prog, kernel, (0,), 30.0))
            row = {"program": "b3_scan", "mode": mode, "baseline": baseline,
                   "cells": int(x0.size), "seconds": round(time.monotonic() - start, 2)}
            if not result.ok:
                row |= {"agree": False, "kind": f"{result.kind}: {result.message}"}
            else:
                got = np.asarray(result.outputs["g_x"]).astype(np.int64)
                bad = np.flatnonzero(got != want.astype(np.int64))
                row |= {"agree": bad.size == 0, "wrong_cells": int(bad.size),
                        "first_wrong": int(bad[0]) if bad.size else None}
            rows.append(row)
    finally:
        getattr(runner, "close", lambda: None)()
    return rows


SMI = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
       "--format=csv,noheader", "-i", "0"]


def device_line(backend: str) -> str:
    """The GPU this ran on, as the Appendix B table's header names it (nvidia-smi's
    name, driver and memory; the CUDA runtime and CuPy); the machine on cpu."""
    if backend != "cuda":
        return f"{platform.node()} {platform.machine()}, {backend} backend"
    try:
        smi = subprocess.run(SMI, capture_output=True, text=True,
                             check=False).stdout.strip()
    except OSError:  # no nvidia-smi: the line says so
        smi = ""
    try:
        import cupy

        v = cupy.cuda.runtime.runtimeGetVersion()
        lib = f"CUDA runtime {v // 1000}.{v % 1000 // 10}; CuPy {cupy.__version__}"
    except Exception as err:  # noqa: BLE001 - the line says what it could not read
        lib = f"no CuPy ({type(err).__name__})"
    return f"{smi or 'nvidia-smi gave nothing'}; {lib}; {platform.node()}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--modes", default="naive,motion,prism")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--out", default="gpu-out/prism_sync_gpu.json")
    args = ap.parse_args()
    modes = args.modes.split(",")
    programs = sorted(CORRECTED.glob("*.prism"))
    report: dict = {"command": " ".join([sys.executable, *sys.argv]),
                    "machine": f"{platform.node()} {platform.machine()}",
                    "device": device_line(args.backend),
                    "backend": args.backend, "exec": [], "barriers": {}, "scan": []}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for path in programs:
        report["barriers"][path.stem] = barrier_counts(path)
        for mode in modes:
            if path.stem in BIG_STEP:
                report["exec"].append(big_step_row(path, mode, args.backend))
                print(json.dumps(report["exec"][-1]), flush=True)
                continue
            row = exec_row(path, mode, args.backend, args.timeout)
            if row["kind"] == "racy":
                row["sampled"] = sampled_row(path, mode, args.backend)
            report["exec"].append(row)
            print(json.dumps(report["exec"][-1]), flush=True)
            out.write_text(json.dumps(report, indent=1) + "\n")
    report["scan"] = scan_rows(args.backend, modes)
    # racy / not-compared: the reference declines the program (exit 1 of exec, but
    # no disagreement): counted apart, as the fuzzer counts them
    def kind(r: dict) -> str:
        return r.get("sampled", {}).get("kind", r["kind"])

    declined = [r for r in report["exec"] if kind(r) in ("racy", "not-compared")]
    wrong = [r for r in report["exec"] if kind(r) != "agree" and r not in declined]
    wrong += [r for r in report["scan"] if not r["agree"]]
    report["summary"] = {"agree": sum(kind(r) == "agree" for r in report["exec"]),
                         "agree_sampled": sum("sampled" in r and kind(r) == "agree"
                                              for r in report["exec"]),
                         "declined": len(declined), "wrong": len(wrong),
                         "scan_agree": all(r["agree"] for r in report["scan"])}
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["scan"]), json.dumps(report["summary"]), sep="\n")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
