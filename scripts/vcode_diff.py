"""Issue 29 item 6: run NESL's pre-dumped VCODE benchmarks (Nessie-Compiler/neslgpu,
bench/NESL/*.vcode, a third-party compiler under test) under several builds of its VCODE
interpreter and compare what each prints with the first's: a differential of the CUDA
vector library against the serial one. Python's standard library only (it runs on the
GPU machine as it is); the interpreters are built by scripts/neslgpu_build.sh.

    python3 scripts/vcode_diff.py --bench CHECKOUT/bench/NESL \\
        --interp serial=BUILD/serial/bin/vinterp.serial \\
        --interp cuda=BUILD/cuda/bin/vinterp.cuda --out vcode.json

What a run prints is the program's final stack, one value a line: `( 1 2 3 )` a vector,
`[ 10 ]` a segment descriptor. Every benchmark that starts a timer (NESL's `time`) returns
its time last: that value is kept apart as the program's own seconds, never compared.
Each other token is compared with the reference run's: equal text; both NaN (`nan`
vs `-nan` is named: the sign of a NaN); two floats within --rel-tol of each other
(`float32`: the CUDA CVL keeps NESL's floats in single precision, the serial one in
double); else a difference, a finding to attribute.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fnmatch
import hashlib
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

TIMER = "STOP_TIMER"
BRACKETS = {"(", ")", "[", "]"}
NOISE = ("rnd_wuz:",)  # the serial CVL's leftover debug print, one line per RAND


def tokens(text: str) -> list[str]:
    return text.split()


def groups(toks: list[str]) -> list[list[str]]:
    """The printed values, each a bracketed group of tokens (brackets included)."""
    out: list[list[str]] = []
    for tok in toks:
        if tok in ("(", "[") or not out:
            out.append([])
        out[-1].append(tok)
    return out


def as_float(tok: str) -> float | None:
    try:
        return float(tok)
    except ValueError:
        return None


def compare_token(ref: str, got: str, rel_tol: float) -> tuple[str, float]:
    """The class of one token pair and its relative difference (0 when equal)."""
    if ref == got:
        return "equal", 0.0
    a, b = as_float(ref), as_float(got)
    if a is None or b is None or ref in BRACKETS or got in BRACKETS:
        return "differs", math.inf
    if math.isnan(a) and math.isnan(b):
        return "nan-sign", 0.0
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return "differs", math.inf
    is_int = all(c in "+-0123456789" for c in ref + got)
    rel = abs(a - b) / max(abs(a), abs(b))
    if not is_int and rel <= rel_tol:
        return "float32", rel
    return "differs", rel


def compare(ref: list[str], got: list[str], rel_tol: float) -> dict:
    """Token by token: the count per class, the largest relative difference of the
    floats that were not equal, and the first few differences."""
    counts = {"equal": 0, "nan-sign": 0, "float32": 0, "differs": 0}
    first: list[dict] = []
    max_rel = 0.0
    if len(ref) != len(got):
        counts["differs"] += 1
        first.append({"token": min(len(ref), len(got)), "why": "lengths differ",
                      "reference": len(ref), "got": len(got)})
    for i, (r, g) in enumerate(zip(ref, got)):
        cls, rel = compare_token(r, g, rel_tol)
        counts[cls] += 1
        if cls == "float32":
            max_rel = max(max_rel, rel)
        if cls != "equal" and len(first) < 5:
            first.append({"token": i, "class": cls, "reference": r, "got": g,
                          "rel": None if math.isinf(rel) else rel})
    verdict = ("differs" if counts["differs"] else "float32" if counts["float32"]
               else "nan-sign" if counts["nan-sign"] else "same" if ref
               else "timer-only")  # a program that prints its time alone
    return {"verdict": verdict, "counts": counts, "max_rel_float32": max_rel,
            "first": first}


def split_timer(text: str, timed: bool) -> tuple[list[str], float | None]:
    """The compared tokens and, for a timed program, its own seconds (last value)."""
    gs = groups(tokens(text))
    if timed and gs and len(gs[-1]) == 3 and gs[-1][0] == "(":
        secs = as_float(gs[-1][1])
        return [t for g in gs[:-1] for t in g], secs
    return [t for g in gs for t in g], None


def run_one(interp: str, vcode: Path, mem: int, timeout: float,
            deadline: float) -> dict:
    if not Path(interp).is_file():
        return {"rc": "not-built", "seconds": 0.0, "stdout": "", "stderr_tail": []}
    start = time.perf_counter()
    if start > deadline:  # the whole run's budget is spent: this one never starts
        return {"rc": "deadline", "seconds": 0.0, "stdout": "", "stderr_tail": []}
    timeout = max(1.0, min(timeout, deadline - start))
    cmd = [interp, "-m", str(mem), str(vcode)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              errors="replace", check=False)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out = "timeout", (exc.stdout or b"").decode(errors="replace")
        err = (exc.stderr or b"").decode(errors="replace")
    secs = time.perf_counter() - start
    err_lines = [ln for ln in err.splitlines() if not ln.startswith(NOISE)]
    return {"rc": rc, "seconds": round(secs, 3), "stdout": out,
            "stderr_tail": err_lines[-4:]}


def summarise(run: dict, timed: bool) -> dict:
    toks, secs = split_timer(run["stdout"], timed)
    text = " ".join(toks)
    return {"rc": run["rc"], "seconds": run["seconds"], "program_timer_s": secs,
            "tokens": len(toks), "values_head": text[:160],
            "values_sha256": hashlib.sha256(text.encode()).hexdigest()[:16],
            "stderr_tail": run["stderr_tail"]}


def cost(vcode: Path) -> tuple[int, int]:
    """A guess at a run's cost, to start the short ones first (a deadline then cuts
    the longest, not a family's every size): the program's size, then the size its
    name gives (bh.75000)."""
    digits = "".join(c for c in vcode.name.split(".")[1] if c.isdigit()) \
        if vcode.name.count(".") > 1 else ""
    return vcode.stat().st_size, int(digits or 0)


def builds(logs: list[str], interps: dict[str, str]) -> dict:
    """Per interpreter: built or not, and its build log's last lines."""
    out: dict = {n: {"built": Path(p).is_file()} for n, p in interps.items()}
    for kv in logs:
        name, path = kv.split("=", 1)
        log = Path(path)
        lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
        out.setdefault(name, {})["log_tail"] = lines[-30:]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", required=True, type=Path)
    ap.add_argument("--pattern", default="*.vcode")
    ap.add_argument("--only", action="append", default=[],
                    help="a file name (repeatable); default: every match")
    ap.add_argument("--interp", action="append", required=True,
                    help="NAME=PATH (repeatable); the first is the reference")
    ap.add_argument("--jobs", action="append", default=[],
                    help="NAME=N: that interpreter's runs at once (default 1)")
    ap.add_argument("-m", "--mem", type=int, default=250_000_000,
                    help="the interpreter's -m: vector memory in doubles")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds a run")
    ap.add_argument("--deadline", type=float, default=math.inf,
                    help="seconds for everything: runs not started by then are not")
    ap.add_argument("--build-log", action="append", default=[],
                    help="NAME=LOG: the build's log, its last lines kept in the JSON")
    ap.add_argument("--rel-tol", type=float, default=1e-5)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)

    interps = dict(kv.split("=", 1) for kv in args.interp)
    jobs = {k: int(v) for k, v in (kv.split("=", 1) for kv in args.jobs)}
    names = list(interps)
    files = sorted((p for p in args.bench.iterdir()
                    if fnmatch.fnmatch(p.name, args.pattern)
                    and (not args.only or p.name in args.only)), key=cost)
    if not files:
        print(f"vcode_diff: no {args.pattern} in {args.bench}", file=sys.stderr)
        return 2
    timed = {p.name: TIMER in p.read_text(errors="replace") for p in files}
    raw: dict[tuple[str, str], dict] = {}
    start = time.perf_counter()
    pools = {n: concurrent.futures.ThreadPoolExecutor(jobs.get(n, 1)) for n in names}
    deadline = start + args.deadline
    futs = {(n, p.name): pools[n].submit(run_one, interps[n], p, args.mem, args.timeout,
                                         deadline)
            for n in names for p in files}
    for key, fut in futs.items():
        raw[key] = fut.result()
        n, f = key
        print(f"{n:>8} {f:32} rc={raw[key]['rc']} {raw[key]['seconds']:.2f}s",
              file=sys.stderr, flush=True)
    for pool in pools.values():
        pool.shutdown()

    rows = []
    files.sort(key=lambda p: p.name)
    tally: dict[str, int] = {}
    ref = names[0]
    for p in files:
        row: dict = {"file": p.name, "timed": timed[p.name],
                     "runs": {n: summarise(raw[n, p.name], timed[p.name])
                              for n in names}}
        ref_run = raw[ref, p.name]
        ref_toks, _ = split_timer(ref_run["stdout"], timed[p.name])
        row["against"] = {}
        for n in names[1:]:
            run = raw[n, p.name]
            if ref_run["rc"] != 0 or run["rc"] != 0:
                cmp = {"verdict": "error", "rc": {ref: ref_run["rc"], n: run["rc"]}}
            else:
                cmp = compare(ref_toks, split_timer(run["stdout"], timed[p.name])[0],
                              args.rel_tol)
            row["against"][n] = cmp
            tally[f"{n}:{cmp['verdict']}"] = tally.get(f"{n}:{cmp['verdict']}", 0) + 1
        if len(names) == 1:
            verdict = "ran" if ref_run["rc"] == 0 else "error"
            tally[f"{ref}:{verdict}"] = tally.get(f"{ref}:{verdict}", 0) + 1
        rows.append(row)

    report = {
        "what": "NESL 3.1 VCODE benchmarks (neslgpu bench/NESL) under each "
                "interpreter build, compared with the first",
        "command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]),
        "host": {"machine": platform.machine(), "python": platform.python_version(),
                 "cpus": os.cpu_count()},
        "interpreters": interps, "reference": ref, "mem_doubles": args.mem,
        "timeout_s": args.timeout, "rel_tol": args.rel_tol,
        "wall_s": round(time.perf_counter() - start, 1),
        "builds": builds(args.build_log, interps),
        "tally": dict(sorted(tally.items())), "benchmarks": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["tally"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
