"""Issue 30: the few Nsight Compute numbers that say what bounds a kernel, as JSON, from
the CSV pages that `scripts/gpu/cypress_ncu.sh` exports (`ncu --import R --page raw
--csv`, and `--page source --csv --print-source sass` for per-instruction wavefronts).

    python scripts/ncu_summary.py RAW.csv [--source SOURCE.csv] [--kernel fig5_gemm_1]
        [--json OUT.json]

Per kernel whose name holds --kernel: duration, instructions, the FMA and LSU pipes'
share of peak, L1 throughput, shared-memory wavefronts (and their share of peak), bank
conflicts, local-memory requests, the warp-stall samples by reason (shares), and from
the source page, per kind of shared load (LDS, LDS.64, LDS.128): instructions executed,
wavefronts, ideal wavefronts, wavefronts an instruction, and how many SASS lines take
each number of wavefronts (the source page sums every profiled launch of the kernel:
read its ratios, not its counts).
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import sys

RAW = {
    "duration_ms": "gpu__time_duration.sum",
    "instructions": "smsp__inst_executed.sum",
    "fma_pipe_pct": "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
    "lsu_pipe_pct": "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "l1_throughput_pct": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "shared_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "shared_wavefronts_pct": "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
    "shared_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "shared_load_instructions": "smsp__sass_inst_executed_op_shared_ld.sum",
    "local_load_requests": "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum",
    "local_store_requests": "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum",
    "registers": "launch__registers_per_thread",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
}
STALL = "smsp__pcsamp_warps_issue_stalled_"


def number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def raw_rows(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    return [dict(zip(header, r)) for r in rows[2:]]  # row 1 holds the units


def kernel_summary(row: dict[str, str]) -> dict:
    out: dict = {"kernel": row.get("Kernel Name", "")}
    for name, metric in RAW.items():
        out[name] = number(row.get(metric, ""))
    stalls = {k[len(STALL):]: number(v) or 0.0 for k, v in row.items()
              if k.startswith(STALL) and not k.endswith("not_issued")}
    total = sum(stalls.values()) or 1.0
    out["stall_shares"] = {k: round(v / total, 3) for k, v in
                           sorted(stalls.items(), key=lambda kv: -kv[1]) if v / total >= 0.005}
    return out


def shared_loads(path: str) -> dict:
    """Per kind of shared load in the source page: executed, wavefronts, ideal."""
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"Address"'))
    rows = list(csv.DictReader(lines[start:]))
    kinds: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in rows:
        op = r["Source"].split()[0] if r["Source"].split() else ""
        if not op.startswith("LDS"):
            continue
        k = kinds[op]
        k["instructions"] += 1
        executed = int(number(r.get("Instructions Executed", "")) or 0)
        if executed:  # how many of the kind's SASS lines take 1, 2, 4 .. wavefronts
            per = round(int(number(r.get("L1 Wavefronts Shared", "")) or 0) / executed, 1)
            k[f"lines_at_{per:g}_wavefronts"] += 1
        for col, key in (("Instructions Executed", "executed"), ("L1 Wavefronts Shared", "wavefronts"),
                         ("L1 Wavefronts Shared Ideal", "ideal")):
            k[key] += int(number(r.get(col, "")) or 0)
    return {op: dict(c, wavefronts_an_instruction=round(c["wavefronts"] / c["executed"], 3)
                     if c["executed"] else None) for op, c in sorted(kinds.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw")
    ap.add_argument("--source")
    ap.add_argument("--kernel", default="")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    seen: dict[str, dict] = {}
    for row in raw_rows(args.raw):
        if args.kernel in row.get("Kernel Name", ""):
            seen.setdefault(row["Kernel Name"], kernel_summary(row))  # first launch of each
    out = {"kernels": list(seen.values()), "command": "python scripts/ncu_summary.py "
           + " ".join(sys.argv[1:] if argv is None else argv)}
    if args.source:
        out["shared_loads"] = shared_loads(args.source)
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
