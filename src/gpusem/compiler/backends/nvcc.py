"""`nvcc -c` compile checks for sm_90a, so CUDA that would not build never lands.

`compile_check(sources)` returns, per source, None (it builds) or the error text. The
sources are batched several to a translation unit (each in its own namespace, `extern
"C"` dropped so same-named kernels do not collide, `#line` so nvcc's diagnostics name
`k<i>_src.cu`); a failing batch has the kernels its diagnostics blame (or all of them,
for ptxas errors that name no source line) checked alone, and the rest re-checked (a
failing batch of one kernel is its own alone check: not compiled again).
Verdicts are cached by content hash (of the source, the runtime header and the nvcc
version) under `$GPUSEM_CACHE_DIR/nvcc`.

Note: the architecture is given as `-gencode arch=compute_90a,code=sm_90a`: with CUDA
13, `-arch=sm_90a` also builds `compute_90` PTX, where wgmma does not exist.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpusem.compiler.backends import cpu_source
from gpusem.compiler.backends.cache import cache_dir, touch
from gpusem.compiler.backends.cpu import HARNESS_FILES, HERE

NVCC = os.environ.get("GPUSEM_NVCC", "nvcc")
NVCC_FLAGS = (
    "-gencode",
    "arch=compute_90a,code=sm_90a",
    "-std=c++17",
    "--fmad=false",
    "-w",
)
BATCH = 24


def nvcc_available() -> bool:
    return shutil.which(NVCC) is not None


def _cache_dir() -> Path:
    return cache_dir("nvcc")


def _toolchain_hash() -> str:
    h = hashlib.sha256(" ".join((NVCC, *NVCC_FLAGS)).encode())
    for name in HARNESS_FILES:
        h.update((HERE / name).read_bytes())
    version = subprocess.run(
        [NVCC, "--version"], capture_output=True, text=True, check=False
    ).stdout
    h.update(version.encode())
    return h.hexdigest()[:16]


def compile_check(sources: list[str], parallel: int = 2) -> list[str | None]:
    """Per source: None when `nvcc -c` for sm_90a accepts it, else the error text."""
    if not nvcc_available():
        raise FileNotFoundError(f"{NVCC} not found on PATH")
    cache, tool = _cache_dir(), _toolchain_hash()
    keys = [hashlib.sha256((tool + s).encode()).hexdigest()[:24] for s in sources]
    verdicts: dict[str, str | None] = {}
    todo: dict[str, str] = {}
    for key, src in zip(keys, sources, strict=True):
        if (cache / f"{key}.ok").exists():
            touch(cache / f"{key}.ok")  # used now: kept by the LRU trim (cache.py)
            verdicts[key] = None
        elif (cache / f"{key}.err").exists():
            verdicts[key] = (cache / f"{key}.err").read_text()
        else:
            todo[key] = src
    items = list(todo.items())
    # At most BATCH a translation unit, and at least `parallel` units when there are
    # that many sources, of equal size: 34 sources were 24 + 10, one core idle for
    # most of the check; now 17 + 17 side by side (issue 32.11).
    count = max(min(parallel, len(items)), -(-len(items) // BATCH)) if items else 1
    size = max(1, -(-len(items) // count))
    batches = [items[i : i + size] for i in range(0, len(items), size)]
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        for found in pool.map(_check_batch, batches):
            verdicts.update(found)
    for key in todo:
        verdict = verdicts[key]
        if verdict is None:
            (cache / f"{key}.ok").write_text("")
        else:
            (cache / f"{key}.err").write_text(verdict)
    return [verdicts[k] for k in keys]


def _run_nvcc(items: list[tuple[int, str]]) -> tuple[bool, str]:
    unit = cpu_source.namespaced_unit(
        [(i, f"k{i}_src", src, "") for i, src in items], for_cpu=False
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "batch.cu"
        path.write_text(unit)
        cmd = [NVCC, *NVCC_FLAGS, f"-I{HERE}", "-c", str(path), "-o", str(path) + ".o"]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, check=False)
    return proc.returncode == 0, proc.stdout + proc.stderr


def _check_batch(batch: list[tuple[str, str]]) -> dict[str, str | None]:
    """Check a batch; failures blamed by the diagnostics are confirmed alone."""
    out: dict[str, str | None] = {}
    remaining = list(enumerate(batch))
    while remaining:
        ok, log = _run_nvcc([(i, src) for i, (_, src) in remaining])
        if ok:
            out.update({key: None for _, (key, _) in remaining})
            return out
        if len(remaining) == 1:  # alone already: its log is the verdict (no rerun)
            out[remaining[0][1][0]] = "nvcc error: " + _trim(log)
            return out
        blamed = cpu_source.blamed_kernels(log)
        suspects = [r for r in remaining if r[0] in blamed] or remaining
        failed = set()
        for index, (key, src) in suspects:
            alone_ok, alone_log = _run_nvcc([(index, src)])
            if not alone_ok:
                out[key] = "nvcc error: " + _trim(alone_log)
                failed.add(index)
        if not failed:  # builds alone, fails together: report rather than loop
            for _, (key, _) in remaining:
                out[key] = "nvcc error: fails only when batched: " + _trim(log)
            return out
        remaining = [r for r in remaining if r[0] not in failed]
    return out


def _trim(log: str, limit: int = 4000) -> str:
    lines = [ln for ln in log.splitlines() if "error" in ln.lower()]
    return ("\n".join(lines) or log)[:limit]
