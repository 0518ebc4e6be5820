"""What starting the cuda backend's worker costs (issue 31.3): the CPU and wall time
from a `CudaBackend` with no worker to its first module built, the cost a campaign's
process paid at every worker replacement, including the one every
`MAX_MODULES_PER_WORKER` modules that unloading now avoids.

Each of `--starts` times: a new `CudaBackend`, one build of a one-kernel module (the
worker's start: a spawned Python, gpusem's and CuPy's imports, a CUDA context, the
shared-memory scribbler's NVRTC call and module; then the kernel's NVRTC call), the
worker's CPU read from /proc before it is ended, and the same build again on the
started worker (the kernel's part alone, to subtract). Needs a GPU (elsewhere each
run says why the worker does not start; with tests/backends/fake_cupy first on
PYTHONPATH it runs on the fake, nvcc standing in for NVRTC: a check of the script).

  python3 scripts/cuda_worker_start.py --starts 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time

KERNEL = ('#include "gpusem_rt.cuh"\n'
          'extern "C" __global__ void k(int* o) { o[0] = 1; }\n')


def _cpu_ms(pid: int) -> float:
    """utime + stime of a live process in ms (/proc/PID/stat fields 14, 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return 1e3 * (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_start(tag: int) -> dict:
    from gpusem.calculus.errors import CannotRunHere
    from gpusem.compiler.backends.cuda import CudaBackend

    backend = CudaBackend()
    items = [(0, "k", KERNEL + f"// start {tag}\n")]
    try:
        t0 = time.perf_counter()
        status, _, _ = backend.build_module(f"start{tag}", items)
        wall = time.perf_counter() - t0
        assert backend._worker is not None
        pid = backend._worker[0].pid
        cpu = _cpu_ms(pid)
        t1 = time.perf_counter()
        again = [(0, "k", KERNEL + f"// again {tag}\n")]
        backend.build_module(f"again{tag}", again)
        build_wall = time.perf_counter() - t1
        build_cpu = _cpu_ms(pid) - cpu
        return {"status": status, "start_wall_ms": round(1e3 * wall, 1),
                "start_cpu_ms": round(cpu, 1),
                "build_wall_ms": round(1e3 * build_wall, 1),
                "build_cpu_ms": round(build_cpu, 1)}
    except CannotRunHere as err:
        return {"unavailable": str(err)}
    finally:
        backend.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--json", help="write the result here (also printed)")
    args = ap.parse_args(argv)
    runs = [one_start(i) for i in range(args.starts)]
    ok = [r for r in runs if "start_cpu_ms" in r]
    result: dict = {"runs": runs}
    if ok:
        result["median"] = {k: statistics.median(r[k] for r in ok)
                            for k in ("start_wall_ms", "start_cpu_ms", "build_wall_ms",
                                      "build_cpu_ms")}
        # the start less one kernel's build: what a replacement costs beyond the build
        result["worker_start_cpu_ms"] = round(result["median"]["start_cpu_ms"]
                                              - result["median"]["build_cpu_ms"], 1)
        result["worker_start_wall_ms"] = round(result["median"]["start_wall_ms"]
                                               - result["median"]["build_wall_ms"], 1)
    result["device"] = os.environ.get("GPUSEM_DEVICE", "")
    result["command"] = shlex.join([os.path.basename(sys.executable), *sys.argv])
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
