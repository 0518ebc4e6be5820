#!/usr/bin/env python3
"""Sync-check time of the paper's Hopper GEMM: gpusem's AMIR checker against Exo-GPU's,
side by side, same machine, one command (issue 16's checker-speed goal).

The kernel is Exo-GPU's Figure 9 benchmark kernel, make_Sm90a_gemm(Sm90aGemmConfig(128,
256, tma_to_gmem=False, enable_split_k=False), ncta_M=2, ncta_N=1) of github
akeley98/sporkbench, branch pldi26 (examples/Sm90a_gemm/template), checked by an
installed Exo-GPU (branch akeley98/pldi26, the paper's) with sizes L=1, M=N=cluster_K=n,
K_split=1; gpusem checks its GPU IR transcription examples/gpuir/gemm_hopper.gpuir
(same clusters, warps, TMA ring, multicast, wgmma, mbarriers, commit groups, cluster
sync) at N=n. Neither Exo-GPU nor sporkbench is part of this repository: pass where
they are installed. Each side is timed as the paper times it: one warm-up check, then
the mean of the timed checks, from a constructed procedure: Exo-GPU's `sync_check`
(its backend checks, the abstract-machine program, the interpretation) in a fresh
process per size (import and kernel construction not timed); gpusem's
`synccheck_proc` (the front end's analyses, the conversion, the machine) on the parsed
procedure (parsing not timed).

    python scripts/bench_synccheck_exo.py \\
        --exo-python /work/exo/venv-pldi26/bin/python \\
        --sporkbench /work/exo/sporkbench-pldi26 \\
        --sizes 256 512 1024 2048 --json results/exo/synccheck_vs_exo.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "examples" / "gpuir" / "gemm_hopper.gpuir"

# The driver run by Exo-GPU's Python: build the sporkbench kernel (its construction
# calls sync_check on other sizes: stubbed while building), then time sync_check.
EXO_DRIVER = textwrap.dedent("""
    import json, sys, time
    n, repeats, spork = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    from exo import Procedure
    import exo.platforms.cuda, exo.platforms.Sm80, exo.platforms.Sm90  # noqa: F401
    real = Procedure.sync_check
    Procedure.sync_check = lambda self, **kw: None
    sys.path.insert(0, spork + "/examples/Sm90a_gemm")
    from template.make_Sm90a_gemm import make_Sm90a_gemm
    from template.Sm90a_gemm_pre_config import Sm90aGemmConfig
    gemm = make_Sm90a_gemm(Sm90aGemmConfig(128, 256, tma_to_gmem=False,
                                           enable_split_k=False), 2, 1)
    Procedure.sync_check = real
    sizes = dict(L=1, M=n, N=n, cluster_K=n, K_split=1)
    t0 = time.perf_counter(); gemm.sync_check(**sizes)
    warm = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter(); gemm.sync_check(**sizes)
        times.append(time.perf_counter() - t0)
    import exo
    print(json.dumps({"proc": gemm.name(), "first": warm, "times": times,
                      "exo": exo.__file__}))
""")


def time_gpusem(n: int, repeats: int, reference: bool) -> dict[str, object]:
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.interpreter.amir.synccheck import synccheck_proc

    proc = parse_module(KERNEL.read_text(), str(KERNEL)).procs[-1]

    def once() -> tuple[float, str]:
        t0 = time.perf_counter()
        result = synccheck_proc(proc, {"N": n}, reference=reference)
        return time.perf_counter() - t0, ("accepted" if result.verdict.accepted
                                          else "rejected")
    first, verdict = once()
    times = [once()[0] for _ in range(repeats)]
    return {"first": round(first, 4), "times": [round(t, 4) for t in times],
            "mean": round(sum(times) / len(times), 4), "verdict": verdict}


def time_exo(python: str, spork: str, n: int, repeats: int) -> dict[str, object]:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(EXO_DRIVER)
        driver = f.name
    try:
        out = subprocess.run([python, driver, str(n), str(repeats), spork],
                             capture_output=True, text=True, check=False,
                             timeout=3600)
    finally:
        os.unlink(driver)
    lines = [x for x in out.stdout.splitlines() if x.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:]}
    got = json.loads(lines[-1])
    times = got["times"]
    return {"first": round(got["first"], 4), "times": [round(t, 4) for t in times],
            "mean": round(sum(times) / len(times), 4), "verdict": "accepted",
            "proc": got["proc"], "exo": got["exo"]}


def machine() -> dict[str, object]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(),
            "load_before": os.getloadavg() if hasattr(os, "getloadavg") else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exo-python", required=True,
                    help="the Python of a venv with Exo-GPU (branch pldi26) installed")
    ap.add_argument("--sporkbench", required=True,
                    help="a checkout of github akeley98/sporkbench, branch pldi26")
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reference-upto", type=int, default=1024,
                    help="also time gpusem's reference machine up to this size")
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    rows = []
    for n in args.sizes:
        g = time_gpusem(n, args.repeats, reference=False)
        e = time_exo(args.exo_python, args.sporkbench, n, args.repeats)
        row: dict[str, object] = {"N": n, "gpusem": g, "exo": e}
        if n <= args.reference_upto:
            row["gpusem_reference"] = time_gpusem(n, 1, reference=True)
        if "mean" in e:
            row["ratio_exo_over_gpusem"] = round(float(e["mean"]) /  # type: ignore[arg-type]
                                                 float(g["mean"]), 2)  # type: ignore[arg-type]
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        data = {"command": "python scripts/bench_synccheck_exo.py " + " ".join(
                    sys.argv[1:] if argv is None else argv),
                "machine": machine(),
                "kernel": {"gpusem": str(KERNEL.relative_to(ROOT)),
                           "exo": "sporkbench@pldi26 make_Sm90a_gemm(Sm90aGemmConfig("
                                  "128, 256, False, False), 2, 1), L=1, M=N=cluster_K"
                                  "=n, K_split=1"},
                "timing": "seconds per sync check, mean of the timed repeats after "
                          "one warm-up; ratio = Exo-GPU mean / gpusem mean",
                "results": rows,
                "load_after": os.getloadavg() if hasattr(os, "getloadavg") else None}
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
