"""How often the CKernel generator reaches T1-like PTX (issue 23 item 5), with no GPU:
N generated kernels compiled to PTX by `nvcc -ptx` (sm_90a, --fmad=false), counting
the kernels with an `ld.global.nc` whose address may come from a parameter the kernel
writes (rw, rwr or atomic): the shape of NVVM bug T1.

A crude may-point-to of our own, flow-insensitive: every PTX register's bases are the
union over its definitions of its source registers' bases (and a parameter's own name
for `ld.param`); a `.nc` load whose address register may point to a written parameter
is counted. The real checker is `compiler/backends/ptx_check.py` (branch ptxcheck).

    PYTHONPATH=src python scripts/ckernel_ptx_census.py --programs 2000 --seed 1 \\
        --json results/toolchain/ckernel_ptx_census.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpusem.calculus.ckernel.printer import print_kernel
from gpusem.compiler.backends.cpu import HERE
from gpusem.compiler.ckernel_cuda.emit import emit_kernel
from gpusem.fuzz.ckernel.coverage import coverage_of
from gpusem.fuzz.ckernel.templates import kernels
from gpusem.fuzz.hunt import generate_round

NVCC = ["nvcc", "-ptx", "-gencode", "arch=compute_90a,code=sm_90a", "-std=c++17",
        "--fmad=false", "-w", f"-I{HERE}"]
BATCH = 50
REG = re.compile(r"%[a-z]+\d+")


def batch_ptx(sources: list[str]) -> str:
    unit = "\n".join(src.replace('void k(', f'void k{i}(', 1)
                     for i, src in enumerate(sources))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "batch.cu"
        path.write_text(unit)
        out = Path(tmp) / "batch.ptx"
        proc = subprocess.run([*NVCC, str(path), "-o", str(out)], capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        return out.read_text()


def nc_from_written(body: str, written: set[int]) -> list[tuple[str, set[int]]]:
    """The `ld.global.nc` lines of one entry whose address may point to a written
    parameter, with those parameters' indices."""
    bases: dict[str, set[str]] = {}
    lines = [ln.strip() for ln in body.splitlines() if ln.strip().endswith(";")]
    changed = True
    while changed:
        changed = False
        for ln in lines:
            regs = REG.findall(ln)
            if not regs or ln.startswith(("st.", "@", "bra", "red.", "ret", "bar")):
                continue
            dst, srcs = regs[0], regs[1:]
            new = set().union(*(bases.get(r, set()) for r in srcs)) if srcs else set()
            if ln.startswith(("ld.", "atom.", "shfl.")):  # a value read is no pointer
                new = set()
            m = re.search(r"_param_(\d+)\]", ln)
            if ln.startswith("ld.param") and m:
                new = new | {m.group(1)}
            if not new <= bases.get(dst, set()):
                bases[dst] = bases.get(dst, set()) | new
                changed = True
    hits = []
    for ln in lines:
        if ln.startswith("ld.global.nc"):
            addr = REG.findall(ln.split("[", 1)[1]) if "[" in ln else []
            params = {int(b) for r in addr for b in bases.get(r, set())} & written
            if params:
                hits.append((ln, params))
    return hits


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    start = time.time()
    progs = []
    for r in range(0, args.programs, 100):
        progs += [d.program for d in generate_round(kernels(), args.seed + r,
                                                    min(100, args.programs - r))]
    gen_s = time.time() - start
    sources = [emit_kernel(k) for k in progs]
    batches = [sources[i:i + BATCH] for i in range(0, len(sources), BATCH)]
    t = time.time()
    with ThreadPoolExecutor(max_workers=2) as pool:
        ptxs = list(pool.map(batch_ptx, batches))
    nvcc_s = time.time() - t
    with_nc = with_written_nc = t1_source = t1_store_source = 0
    examples: list[dict] = []
    by_mode: dict[str, int] = {}
    for b, ptx in enumerate(ptxs):
        entries = re.split(r"\.visible \.entry ", ptx)[1:]
        for entry in entries:
            index = int(re.match(r"k(\d+)\(", entry).group(1)) + b * BATCH
            k = progs[index]
            written = {i for i, p in enumerate(k.params) if p.mode != "ro"}
            cov = coverage_of(k)
            t1_source += "idiom:t1-branch" in cov
            t1_store_source += "idiom:t1-branch-store" in cov
            with_nc += "ld.global.nc" in entry
            hits = nc_from_written(entry, written)
            if hits:
                with_written_nc += 1
                modes = {k.params[i].mode for _, ps in hits for i in ps}
                for mode in modes:
                    by_mode[mode] = by_mode.get(mode, 0) + 1
                if len(examples) < 5 or ("rw" in modes and len(examples) < 8):
                    examples.append({"program": print_kernel(k), "modes": sorted(modes),
                                     "ptx": [ln for ln, _ in hits[:3]]})
    data = {"command": "PYTHONPATH=src python scripts/ckernel_ptx_census.py "
                       + " ".join(sys.argv[1:]),
            "nvcc": subprocess.run(["nvcc", "--version"], capture_output=True, check=False,
                                   text=True).stdout.strip().splitlines()[-1],
            "flags": NVCC, "programs": len(progs), "generate_s": round(gen_s, 1),
            "nvcc_s": round(nvcc_s, 1),
            "source_t1_branch": t1_source, "source_t1_branch_store": t1_store_source,
            "ptx_with_ld_global_nc": with_nc,
            "ptx_nc_load_may_read_written_param": with_written_nc,
            "of_those_by_param_mode": by_mode,
            "examples": examples}
    print(json.dumps({k: v for k, v in data.items() if k != "examples"}, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
