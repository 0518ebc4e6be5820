"""The Dask budget test of issue 31.1, cold, on source trees in turns (branch handover).

Runs tests/fuzz/test_budget_kept.py::test_the_dask_engine_keeps_the_budget_while_a_
finding_shrinks of each tree (its own src and tests), each run with a fresh
GPUSEM_CACHE_DIR and XDG_CACHE_HOME (a cold g++ cache), the trees in turns, and
records per run: passed or the assertion it failed at, the load average before it,
the CLI's wall seconds (`gpusem fuzz`, as the test's `fuzz` times it), the report's
seconds / fuzz_s / shrink_s, and the floor-division finding's sizes, `shrunk`,
`shrink_cut` (its bundle), found_after_s and shrink_s.

    nice python scripts/measure_dask_budget.py --tree /tmp/main --tree . --runs 5 \\
        --json results/scale/dask_budget_cold_cpu_dev.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# run in the tree (cwd), its src and tests first on the path
HARNESS = r'''
import json, sys, tempfile, time, traceback
from pathlib import Path
import tests.fuzz.test_budget_kept as t
got = {}
real = t.fuzz
def fuzz(tmp_path, *extra, **kw):
    t0 = time.monotonic()
    try:
        wall, report, text = real(tmp_path, *extra, **kw)
    finally:
        got["wall_s"] = round(time.monotonic() - t0, 2)
    got["wall_s"], got["report"] = round(wall, 2), report
    return wall, report, text
t.fuzz = fuzz
tmp = Path(tempfile.mkdtemp(prefix="dask-budget-"))
try:
    t.test_the_dask_engine_keeps_the_budget_while_a_finding_shrinks(tmp)
    got["passed"] = True
except AssertionError as err:
    got["passed"] = False
    tb = traceback.extract_tb(err.__traceback__)[-1]
    got["failed_at"] = f"{Path(tb.filename).name}:{tb.lineno}: {tb.line}"
    got["message"] = " ".join(str(err).split())[-600:]
print("RESULT " + json.dumps(got))
'''
SIGNATURE = "compile:disagree:disagree:out:int:value"


def one(tree: Path) -> dict:
    env = dict(os.environ, GPUSEM_CACHE_DIR=tempfile.mkdtemp(prefix="gsc-"),
               XDG_CACHE_HOME=tempfile.mkdtemp(prefix="xdg-"),
               PYTHONPATH=f"{tree / 'src'}{os.pathsep}{tree}")
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", HARNESS], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), "")
    if not line:
        return {"error": proc.stderr[-1500:], "load_before": round(load, 2)}
    got = json.loads(line[len("RESULT "):])
    report = got.pop("report", {}) or {}
    out = {"utc": time.strftime("%H:%M:%S", time.gmtime()),
           "load_before": round(load, 2), "passed": got["passed"],
           "test_s": round(time.monotonic() - t0, 1), "cli_wall_s": got.get("wall_s")}
    for k in ("failed_at", "message"):
        if k in got:
            out[k] = got[k]
    out |= {k: report.get(k) for k in ("seconds", "fuzz_s", "shrink_s")}
    out["programs"] = (report.get("counts") or {}).get("programs")
    out["cut_pieces"] = len(report.get("cut_pieces", []))
    found = next((f for f in report.get("findings", [])
                  if f.get("signature") == SIGNATURE), None)
    if found is not None:
        out |= {"size_before": found.get("size_before"), "size": found.get("size"),
                "shrunk": found.get("shrunk"),
                "found_after_s": found.get("found_after_s"),
                "finding_shrink_s": found.get("shrink_s")}
        try:
            meta = json.loads((Path(found["bundle"]) / "bundle.json").read_text())
            out["shrink_cut"] = bool(meta.get("shrink_cut"))
        except (OSError, KeyError, ValueError):
            pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", required=True, type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--runs-of", action="append", default=[],
                    help="TREE=N: N runs of that tree (default --runs)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    runs_of = {str(Path(k).resolve()): int(v) for k, v in
               (x.split("=", 1) for x in args.runs_of)}
    rows = []
    for i in range(max([args.runs, *runs_of.values()])):
        for tree in args.tree:
            tree = tree.resolve()
            if i >= runs_of.get(str(tree), args.runs):
                continue
            commit = (tree / "COMMIT").read_text().strip() if (
                tree / "COMMIT").exists() else "this tree"
            row = {"tree": commit, "run": i + 1} | one(tree)
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json:
        args.json.write_text(json.dumps({
            "test": "tests/fuzz/test_budget_kept.py::test_the_dask_engine_keeps_"
                    "the_budget_while_a_finding_shrinks",
            "cache": "fresh GPUSEM_CACHE_DIR and XDG_CACHE_HOME per run",
            "command": " ".join(["python", *sys.argv]), "runs": rows},
            indent=1) + "\n")


if __name__ == "__main__":
    main()
