"""Issue 28 on a GPU: the speed of each corrected Appendix B kernel against the outside
baseline the paper's programs stand beside, on the same data, at a size large enough
to time.

    python scripts/prism_speed_gpu.py --out gpu-out/prism_speed_gpu.json
        [--backend cuda|cpu] [--only NAME,..] [--warmup 3] [--iters 25] [--dry-run]

Each program is the corrected `examples/prism/appendix_b/corrected/NAME.prism` with its
`# launch:`, `# template:` and `# arg` header rewritten to the timed size (`gpu_cases`:
the SGEMMs and B.1 at M = N = K = 2048 with the paper's 128 x 128 x 8 tiles for B.2
kernels 3-4; B.3 at the paper's block of 16 warps and 16,384 items, the largest the
one-block model allows; B.4 copying 2^24 ints; B.5 at M = N = K = 1024 on 132
persistent blocks, one per H200 SM), parsed, compiled once by our compiler (the
default barrier placement: every mode places the same barriers in these kernels,
results/prism/sync_appendix_b_cpu.json), and launched through the project's cuda
backend (its worker, watchdog and NVRTC build: what `gpusem exec --backend cuda`
does) on seeded integer-valued inputs, so that float32 results are exact and every
comparison is equality. Then:

- ours: one checked launch, then `CudaBackend.time_kernel_each` (CUDA events, `--warmup`
  launches, then `--iters` >= 20 back to back): the median, the kernel only;
- the baseline, in this process on the same inputs, timed the same way: B.1 against
  `cupy.matmul` with cuBLAS's TF32 compute type (and FP32 beside it), B.2 against
  `cupy.matmul` (cuBLAS FP32; alpha and beta applied outside the timing), B.3 against
  `cupy.cumsum`, B.4 against a device-to-device copy of the same bytes, B.5 against an
  FP32 `cupy.matmul` of B A^T (bf16 beside it where CuPy has the dtype);
- agree: our output equals the baseline's, cell for cell, and the baseline's equals
  NumPy's exact result (float64 on the host).

One JSON (`--out`, rewritten after every row): rows of program, size, ours_ms,
baseline, baseline_ms, ratio (ours_ms / baseline_ms: above 1, ours is slower), agree,
command and device. Exit 1 when a row disagrees or a kernel fails, 2 (one line) when
CuPy or a GPU is missing. `--backend cpu` runs the same code at small sizes
(`cpu_cases`) on the cpu harness against NumPy (its times are wall clock, not a
speed); `--dry-run` renders and compiles the GPU-size kernels and launches nothing.
The lead runs it on the GPU: `bash scripts/gpu.sh prism-speed`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORRECTED = ROOT / "examples" / "prism" / "appendix_b" / "corrected"
SGEMMS = ("b2_sgemm_1_naive", "b2_sgemm_2_coalesced", "b2_sgemm_3_blocktiling",
          "b2_sgemm_4_float4")
PAPER_TILES = {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8}  # 256 threads
H200_SMS = 132


@dataclass(frozen=True)
class Case:
    """One program at one size: the header it is rendered with, and the arrays its
    inputs fill (name -> (element type, count)); `kind` picks the baseline."""

    program: str
    size: str
    kind: str  # sgemm | mma | scan | copy | gemm_abt
    blocks: int
    threads: int
    template: dict[str, int]
    scalars: dict[str, int | float]
    arrays: dict[str, tuple[str, int]]
    out: str  # the global the result is read from

    def header(self) -> dict[str, str]:
        """`# arg` values: arrays without values (zeros: the job carries the data)."""
        args = {k: str(v) for k, v in self.scalars.items()}
        args.update({k: f"{e}[{n}]" for k, (e, n) in self.arrays.items()})
        return args


def sgemm_case(name: str, n: int, k: int) -> Case:
    scalars: dict[str, int | float] = {"M": n, "N": n, "K": k, "alpha": 1.5,
                                       "beta": -0.5}
    arrays = {"A": ("float", n * k), "B": ("float", k * n), "C": ("float", n * n)}
    template: dict[str, int] = {}
    if name == "b2_sgemm_1_naive":  # one thread per element of C
        blocks, threads, scalars["block_size"] = n * n // 256, 256, 256
    elif name == "b2_sgemm_2_coalesced":  # 16 x 16 tiles, one thread per element
        blocks, threads, scalars["tile_size"] = n * n // 256, 256, 16
    else:
        if n % 128:
            raise ValueError(f"{name}: M = N must be a multiple of 128, not {n}")
        template = dict(PAPER_TILES)
        blocks, threads, scalars["num_blocks_N"] = (n // 128) ** 2, 256, n // 128
    return Case(name, f"M=N={n} K={k}", "sgemm", blocks, threads, template, scalars,
                arrays, "C")


def mma_case(n: int) -> Case:  # B.1: one warp per 16 x 8 tile of C
    return Case("b1_tf32_mma", f"M=N=K={n}", "mma", (n // 16) * (n // 8), 32, {},
                {"M": n, "N": n, "K": n},
                {"A": ("float", n * n), "B": ("float", n * n), "C": ("float", n * n)},
                "C")


def scan_case(warps: int, passes: int) -> Case:
    """B.3, one block (the look-back modelled: no predecessor): `warps` warps scan
    WORK = 32 * warps * passes items; ENDS = WORK / 32 warp ends, one per thread."""
    work = 32 * warps * passes
    return Case("b3_scan", f"one block, {work} items, {warps} warps", "scan", 1,
                32 * warps, {"WORK": work, "WARPS": warps, "PASSES": passes,
                             "ENDS": work // 32}, {"n": work},
                {"x": ("int", work), "block_idx_counter": ("int", 1),
                 "block_infos": ("int", 2)}, "x")


def copy_case(n: int) -> Case:  # B.4: 64 threads x ITEMS = 4 per block
    return Case("b4_cub_copy", f"{n} ints ({n * 4} bytes)", "copy", n // 256, 64,
                {"ITEMS": 4}, {}, {"inp": ("int", n), "out": ("int", n)}, "out")


def gemm_abt_case(m: int, n: int, k: int, blocks: int) -> Case:
    """B.5: C = A B^T (C column-major) by `blocks` persistent blocks of 3 warpgroups;
    the corrected program's tiles (BM 128, BN 16, BK 16, 8 accumulators a thread)."""
    if m % 128 or n % 32 or k % 64:
        raise ValueError("B.5 needs M % 128 == 0, N % 32 == 0 and K % 64 == 0")
    return Case("b5_h100_gemm", f"M={m} N={n} K={k}, {blocks} persistent blocks",
                "gemm_abt", blocks, 384, {"BM": 128, "BN": 16, "BK": 16,
                                          "NUM_SM": blocks, "TM": 1, "TN": 2,
                                          "NFRAG": 8},
                {"M": m, "N": n, "K": k},
                {"C": ("float", m * n), "A": ("float", m * k), "B": ("float", n * k)},
                "C")


def gpu_cases(sms: int = H200_SMS) -> list[Case]:
    """`sms`: B.5's persistent blocks, one per SM (the paper's NUM_SM)."""
    return [mma_case(2048), *(sgemm_case(s, 2048, 2048) for s in SGEMMS),
            scan_case(16, 32), copy_case(1 << 24), gemm_abt_case(1024, 1024, 1024, sms)]


def cpu_cases() -> list[Case]:
    """The same kernels small enough for the cpu harness (the tiled SGEMMs keep the
    paper's tiles: one 128 x 128 block tile; B.3 keeps the paper's block)."""
    return [mma_case(32), sgemm_case("b2_sgemm_1_naive", 32, 16),
            sgemm_case("b2_sgemm_2_coalesced", 32, 16),
            sgemm_case("b2_sgemm_3_blocktiling", 128, 16),
            sgemm_case("b2_sgemm_4_float4", 128, 16), scan_case(16, 32),
            copy_case(2048), gemm_abt_case(256, 64, 64, 4)]


# ------------------------------------------------------------------ rendering
_ARG = re.compile(r"^#\s*arg\s+(\w+)\s*=")


def render(text: str, case: Case) -> str:
    """The program's text with its header at the case's size: the `# launch:` and
    `# template:` lines replaced, and every `# arg` (each must be given)."""
    args = case.header()
    seen: set[str] = set()
    out = []
    for line in text.splitlines():
        if line.startswith("# launch:"):
            kernel = line.split()[2]
            line = f"# launch: {kernel} blocks={case.blocks} threads={case.threads}"
        elif line.startswith("# template:"):
            line = "# template: " + " ".join(f"{k}={v}" for k, v in
                                             case.template.items())
        elif m := _ARG.match(line):
            if m.group(1) not in args:
                raise ValueError(f"{case.program}: no value for # arg {m.group(1)}")
            line = f"# arg {m.group(1)} = {args[m.group(1)]}"
            seen.add(m.group(1))
        out.append(line)
    if missing := sorted(set(args) - seen):
        raise ValueError(f"{case.program}: the program has no # arg {missing}")
    return "\n".join(out) + "\n"


def inputs(case: Case, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Integer-valued data: float32 products and sums stay exact (|A B| <= 4 K)."""
    data: dict[str, np.ndarray] = {}
    for name, (elem, n) in case.arrays.items():
        if case.kind == "copy" and name == "inp":
            data[name] = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
        elif case.kind == "scan" and name == "x":
            data[name] = rng.integers(0, 4, n).astype(np.int32)
        elif elem == "float" and not (case.kind in ("mma", "gemm_abt") and name == "C"):
            data[name] = rng.integers(-2, 3, n).astype(np.float32)
        else:
            data[name] = np.zeros(n, np.int32 if elem == "int" else np.float32)
    return data


def exact(case: Case, d: dict[str, np.ndarray]) -> np.ndarray:
    """NumPy's result in float64 / int64 (exact on these inputs), flat."""
    s = case.scalars
    if case.kind == "sgemm":
        m, n, k = s["M"], s["N"], s["K"]
        ab = d["A"].reshape(m, k).astype(np.float64) @ d["B"].reshape(k, n)
        return (s["alpha"] * ab + s["beta"] * d["C"].reshape(m, n)).ravel()
    if case.kind == "mma":
        n = s["N"]
        return (d["A"].reshape(n, n).astype(np.float64) @ d["B"].reshape(n, n)).ravel()
    if case.kind == "gemm_abt":  # C[n * M + m] = sum_k A[m, k] B[n, k]
        m, n, k = s["M"], s["N"], s["K"]
        a = d["A"].reshape(m, k).astype(np.float64)
        return (d["B"].reshape(n, k).astype(np.float64) @ a.T).ravel()
    if case.kind == "scan":
        return np.cumsum(d["x"].astype(np.int64))
    return d["inp"].astype(np.int64)


# ------------------------------------------------------------------ baselines
@dataclass
class Baseline:
    """What the baseline is called, its timed call on device data, the result it
    gives (flat, host: computed once before the timing), and its median ms where it
    was timed already (under a setting the call alone does not carry: TF32)."""

    name: str
    call: Callable[[], object]
    result: np.ndarray
    ms: float | None = None
    extra: dict = field(default_factory=dict)


def baseline(case: Case, d: dict[str, np.ndarray], xp, timer) -> Baseline:
    """`xp`: cupy on the GPU, numpy on the cpu backend; `timer(call)` -> median ms."""
    s = case.scalars
    on_gpu = xp.__name__ == "cupy"
    lib = f"cupy.{{}} (CuPy {xp.__version__})" if on_gpu else "numpy.{} (cpu backend)"
    dev = {k: xp.asarray(v) for k, v in d.items()}
    if case.kind in ("sgemm", "mma"):
        m, n, k = s["M"], s["N"], s["K"]
        a, b = dev["A"].reshape(m, k), dev["B"].reshape(k, n)
        out = xp.empty((m, n), xp.float32)
        call = lambda: xp.matmul(a, b, out=out)
        if case.kind == "sgemm":  # alpha and beta outside the timing: cuBLAS's GEMM
            got = s["alpha"] * call() + s["beta"] * dev["C"].reshape(m, n)
            return Baseline(lib.format("matmul") + (", cuBLAS FP32" if on_gpu else ""),
                            call, _host(xp, got))
        if not on_gpu:
            return Baseline(lib.format("matmul"), call, _host(xp, call()))
        return tf32_baseline(lib.format("matmul"), xp, call, timer)
    if case.kind == "gemm_abt":
        m, n, k = s["M"], s["N"], s["K"]
        a, b = dev["A"].reshape(m, k), dev["B"].reshape(n, k)
        out = xp.empty((n, m), xp.float32)
        call = lambda: xp.matmul(b, a.T, out=out)
        return Baseline(lib.format("matmul") + " FP32 of B A^T", call,
                        _host(xp, call()),
                        extra=bf16_time(xp, a, b, timer) if on_gpu else {})
    if case.kind == "scan":
        x = dev["x"]
        call = lambda: xp.cumsum(x, dtype=xp.int32)
        return Baseline(lib.format("cumsum"), call, _host(xp, call()))
    src, dst = dev["inp"], xp.empty_like(dev["inp"])
    if on_gpu:
        nbytes = src.nbytes
        call = lambda: dst.data.copy_from_device_async(src.data, nbytes)
        name = f"device-to-device memcpy of {nbytes} bytes (CuPy {xp.__version__})"
    else:
        call = lambda: xp.copyto(dst, src)
        name = "numpy.copyto (cpu backend)"
    call()
    return Baseline(name, call, _host(xp, dst))


def tf32_baseline(name: str, xp, call, timer) -> Baseline:
    """B.1 is a TF32 kernel: cuBLAS with CuPy's TF32 compute type for float32
    (`cupy._core._routines_linalg.set_compute_type`, what CUPY_TF32=1 sets), put
    back after; FP32 timed beside it. Where CuPy lacks the switch: FP32, said so."""
    fp32_ms = timer(call)
    try:
        from cupy._core import _routines_linalg as linalg

        saved = linalg.get_compute_type(np.float32)
        tf32 = getattr(linalg, "COMPUTE_TYPE_TF32", 7)  # 7: its value in CuPy 13-14
    except (ImportError, AttributeError) as err:
        return Baseline(f"{name}, cuBLAS FP32 (CuPy offers no TF32 switch here: "
                        f"{type(err).__name__})", call, _host(xp, call()), fp32_ms)
    linalg.set_compute_type(np.float32, tf32)
    try:
        got, ms = _host(xp, call()), timer(call)
    finally:
        linalg.set_compute_type(np.float32, saved)
    return Baseline(f"{name}, cuBLAS TF32", call, got, ms, {"fp32_ms": _ms(fp32_ms)})


def _host(xp, a) -> np.ndarray:
    return (xp.asnumpy(a) if xp.__name__ == "cupy" else np.asarray(a)).ravel()


def bf16_time(xp, a, b, timer) -> dict:
    """B.5's own precision beside the FP32 baseline, where CuPy has bfloat16 (its
    result is not compared: sums of bf16 products round in a bf16 output)."""
    try:
        import ml_dtypes

        a16, b16 = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
        return {"bf16_ms": _ms(timer(lambda: xp.matmul(b16, a16.T)))}
    except Exception as err:  # noqa: BLE001 - reported in the row, not hidden
        return {"bf16": f"not timed: {type(err).__name__}: {err}"[:200]}


def gpu_timer(xp, warmup: int, iters: int) -> Callable[[Callable[[], object]], float]:
    def median_ms(call: Callable[[], object]) -> float:
        for _ in range(warmup):
            call()
        marks = [xp.cuda.Event() for _ in range(iters + 1)]
        marks[0].record()
        for mark in marks[1:]:
            call()
            mark.record()
        marks[-1].synchronize()
        return statistics.median(xp.cuda.get_elapsed_time(a, b)
                                 for a, b in itertools.pairwise(marks))
    return median_ms


def wall_timer(warmup: int, iters: int) -> Callable[[Callable[[], object]], float]:
    def median_ms(call: Callable[[], object]) -> float:
        for _ in range(warmup):
            call()
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            call()
            times.append((time.perf_counter() - t) * 1e3)
        return statistics.median(times)
    return median_ms


# ------------------------------------------------------------------ our kernel
def compile_case(case: Case):
    """The rendered program, parsed (front end, surface rules, elaboration) and
    compiled by our compiler, as `gpusem compile` would."""
    from gpusem.api.prism import parse
    from gpusem.compiler.bundl_cuda.pipeline import compile_program

    path = CORRECTED / f"{case.program}.prism"
    text = render(path.read_text(), case)
    return compile_program(parse(text, str(path)), source=text, file=str(path))


def job_for(kernel, case: Case, data: dict[str, np.ndarray], timeout_s: float):
    from gpusem.compiler.backends.kernel import Job
    from gpusem.compiler.bundl_cuda.launch import kernel_spec

    # the elaborator names globals g_<arg>; `alloc in Global` scratch starts zeroed
    return Job(kernel_spec(kernel), {f"g_{k}": v for k, v in data.items()}, 0,
               timeout_s)


def run_ours(backend, job, case: Case, warmup: int, iters: int
             ) -> tuple[np.ndarray | None, list[float], str]:
    """(output, each timed launch's ms, why it failed or ""). One checked launch; on
    cuda then the timed ones (the build is done by then); on cpu the harness's wall
    clock of that launch (no GPU: not a speed)."""
    (res,) = backend.run([job])
    if not res.ok:
        return None, [], f"{res.kind}: {res.message[:500]}"
    out = np.asarray(res.outputs[f"g_{case.out}"]).ravel()
    if backend.name != "cuda":
        return out, [res.elapsed * 1e3], ""
    return out, backend.time_kernel_each(job, warmup, iters), ""


# ------------------------------------------------------------------ rows
def differences(got: np.ndarray | None, want: np.ndarray) -> tuple[int, int | None]:
    """(cells that differ, the first of them): values compared exactly (float32
    results are integers or halves here, so float64 holds them exactly)."""
    if got is None:
        return int(want.size), 0
    g, w = np.asarray(got, np.float64).ravel(), np.asarray(want, np.float64).ravel()
    if g.shape != w.shape:
        return int(max(g.size, w.size)), 0
    bad = np.flatnonzero(g != w)
    return int(bad.size), (int(bad[0]) if bad.size else None)


def make_row(case: Case, ours_ms: list[float], base: str, base_ms: float | None,
             ours: np.ndarray | None, base_out: np.ndarray, exact_out: np.ndarray,
             command: str, device: str) -> dict:
    """One row: medians, the ratio ours / baseline, and agreement (ours = baseline
    and baseline = exact, cell for cell)."""
    wrong, first = differences(ours, base_out)
    base_wrong, _ = differences(base_out, exact_out)
    ours_med = statistics.median(ours_ms) if ours_ms else None
    ratio = _ms(ours_med / base_ms) if ours_med is not None and base_ms else None
    return {"program": case.program, "size": case.size,
            "ours_ms": _ms(ours_med), "baseline": base, "baseline_ms": _ms(base_ms),
            "ratio": ratio, "agree": wrong == 0 and base_wrong == 0,
            "wrong_cells": wrong, "first_wrong": first,
            "baseline_exact": base_wrong == 0, "cells": int(exact_out.size),
            "launches_timed": len(ours_ms),
            "ours_ms_min": _ms(min(ours_ms)) if ours_ms else None,
            "ours_ms_max": _ms(max(ours_ms)) if ours_ms else None,
            "launch": {"blocks": case.blocks, "threads": case.threads,
                       "template": case.template},
            "command": command, "device": device}


def _ms(v: float | None) -> float | None:
    return None if v is None else float(f"{v:.5g}")


SMI = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
       "--format=csv,noheader", "-i", "0"]


def device_line(backend: str) -> str:
    if backend != "cuda":
        return (f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores: cpu "
                "SIMT harness (times are wall clock, not a GPU speed)")
    import subprocess

    import cupy

    rt = cupy.cuda.runtime
    props = rt.getDeviceProperties(0)
    try:
        smi = subprocess.run(SMI, capture_output=True, text=True,
                             check=False).stdout.strip()
    except OSError:  # no nvidia-smi: the line says so
        smi = ""
    v = rt.runtimeGetVersion()
    return (f"{smi or props['name'].decode()}; {props['multiProcessorCount']} SMs; "
            f"CUDA runtime {v // 1000}.{v % 1000 // 10}; CuPy {cupy.__version__}; "
            f"Python {platform.python_version()}; {os.cpu_count()} CPU cores")


def no_gpu() -> str | None:
    """Why the cuda backend cannot run here (None: it can)."""
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as err:  # noqa: BLE001 - any failure means: not here
        return f"{type(err).__name__}: {err}".splitlines()[0]
    return None


# ------------------------------------------------------------------ main
def measure(case: Case, backend, xp, args, command: str, device: str) -> dict:
    kernel = compile_case(case)
    data = inputs(case, np.random.default_rng(28))
    job = job_for(kernel, case, data, args.timeout)
    start = time.monotonic()
    ours, each, why = run_ours(backend, job, case, args.warmup, args.iters)
    spent = time.monotonic() - start
    timer = (gpu_timer(xp, args.warmup, args.iters) if xp.__name__ == "cupy"
             else wall_timer(1, 5))
    base = baseline(case, data, xp, timer)
    base_ms = base.ms if base.ms is not None else timer(base.call)
    row = make_row(case, each, base.name, base_ms, ours, base.result,
                   exact(case, data), command, device)
    row |= {"first_run_and_timing_s": round(spent, 2), **base.extra}
    if case.kind in ("sgemm", "scan"):
        row["note"] = (f"{case.out} is updated in place: each timed launch works on "
                       "the previous one's output (the same work); the checked "
                       "launch ran on the inputs")
    if why:
        row["failed"] = why
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--out", default="gpu-out/prism_speed_gpu.json")
    ap.add_argument("--only", default="", help="comma-separated program names")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=25)
    ap.add_argument("--timeout", type=float, default=30.0,
                    help="seconds one launch may take (the watchdog)")
    ap.add_argument("--dry-run", action="store_true",
                    help="render and compile the GPU-size kernels, launch nothing")
    args = ap.parse_args(argv)
    command = " ".join(["python", "scripts/prism_speed_gpu.py",
                        *(sys.argv[1:] if argv is None else argv)])
    if args.backend == "cuda" and not args.dry_run and (why := no_gpu()):
        print(f"prism_speed_gpu.py: the cuda backend cannot run here: {why}",
              file=sys.stderr)
        return 2
    if args.backend == "cuda" and args.iters < 20:
        ap.error("--iters: at least 20 launches on cuda (a median of >= 20)")
    only = set(filter(None, args.only.split(",")))
    sms = H200_SMS
    if args.backend == "cuda" and not args.dry_run:
        import cupy

        sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    cases = cpu_cases() if args.backend == "cpu" else gpu_cases(sms)
    cases = [c for c in cases if not only or c.program in only]
    if only - {c.program for c in cases}:
        ap.error(f"--only: no such program {sorted(only - {c.program for c in cases})}")
    if args.dry_run:
        return dry_run(cases, args.out, command)
    return run_all(cases, args, command)


def run_all(cases: list[Case], args, command: str) -> int:
    from gpusem.calculus.errors import CannotRunHere
    from gpusem.compiler.backends.registry import get_backend

    if args.backend == "cuda":
        import cupy as xp
    else:
        xp = np
    device = device_line(args.backend)
    report: dict = {"command": command, "device": device, "backend": args.backend,
                    "warmup": args.warmup, "iters": args.iters, "rows": []}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    backend = get_backend(args.backend)
    start = time.monotonic()
    try:
        for case in cases:
            try:
                row = measure(case, backend, xp, args, command, device)
            except CannotRunHere:
                raise
            except Exception as err:  # noqa: BLE001 - one failing row keeps the rest
                row = {"program": case.program, "size": case.size, "agree": False,
                       "failed": f"{type(err).__name__}: {err}"[:1000],
                       "command": command, "device": device}
            report["rows"].append(row)
            print(json.dumps({k: row.get(k) for k in (
                "program", "size", "ours_ms", "baseline_ms", "ratio", "agree",
                "failed")}), flush=True)
            out.write_text(json.dumps(report, indent=1) + "\n")
    except CannotRunHere as err:
        print(f"prism_speed_gpu.py: {err}".splitlines()[0], file=sys.stderr)
        return 2
    finally:
        getattr(backend, "close", lambda: None)()
    rows = report["rows"]
    report["summary"] = {"rows": len(rows), "agree": sum(r["agree"] for r in rows),
                         "wrong": sum(not r["agree"] for r in rows),
                         "seconds": round(time.monotonic() - start, 1)}
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["summary"]))
    return 1 if report["summary"]["wrong"] else 0


def dry_run(cases: list[Case], out_path: str, command: str) -> int:
    """The GPU-size programs rendered and compiled (what a GPU run builds first)."""
    rows, failed = [], 0
    for case in cases:
        start = time.monotonic()
        try:
            k = compile_case(case)
            row = {"program": case.program, "size": case.size, "blocks": k.blocks,
                   "threads": k.threads, "smem_bytes": k.smem_bytes,
                   "cuda_lines": len(k.source.splitlines())}
        except Exception as err:  # noqa: BLE001 - reported, and exit 1
            failed += 1
            row = {"program": case.program, "size": case.size,
                   "failed": f"{type(err).__name__}: {err}"[:1000]}
        row["compile_s"] = round(time.monotonic() - start, 2)
        rows.append(row)
        print(json.dumps(row), flush=True)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": command, "dry_run": True, "rows": rows},
                              indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
