"""The cost of the bloated-T1 reduction of tests/fuzz/test_cuda_reduce_nvcc.py (the
suite's slowest test) on source trees, in turns, in one command: candidates tested
(`r.tests`), the reduction's seconds (`r.seconds`), the nvcc runs by kind (`-ptx`: the
KeepPtx test; `-c`: BuildsAlone), the CPU seconds of all children (nvcc and what it
starts: the cost on a shared machine, where wall time is noise) and the result's
lines. No GPU.

    python scripts/measure_cuda_reduce_t1.py --trees BASE_TREE . [--repeat 2]
        [--budget 300]

A tree is a checkout or a `git archive` of one (its src/ and tests/ are used).
"""

from __future__ import annotations

import argparse
import json

from tree_runs import child_json, tree_commit

# Run inside each tree's own interpreter: counts nvcc runs by wrapping subprocess.run.
CHILD = r"""
import json, resource, subprocess, sys, time
sys.path.insert(0, "tests/fuzz")
runs = {"-ptx": 0, "-c": 0, "other": 0}
real = subprocess.run
def counting(argv, *a, **k):
    words = argv if isinstance(argv, list) else str(argv).split()
    kind = "-ptx" if "-ptx" in words else "-c" if "-c" in words else "other"
    runs[kind] += 1
    return real(argv, *a, **k)
subprocess.run = counting
import test_cuda_reduce_nvcc as T
from gpusem.fuzz.cuda_reduce import oracles
from gpusem.fuzz.cuda_reduce.reducer import reduce_cuda
test = oracles.KeepPtx(T.T1_PTX)
guards = [oracles.KeepsMain(), oracles.KeepsMainCheck(), oracles.NoConstantPointers(),
          oracles.BuildsAlone()]
t0 = time.monotonic()
r = reduce_cuda(T.bloated_t1(), test, budget_s=float(sys.argv[1]), guards=guards,
                max_rounds=1)
cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"tests": r.tests, "seconds": round(r.seconds, 1),
                  "stopped": r.stopped, "lines": [r.lines_before, r.lines_after],
                  "nvcc_runs": runs,
                  "children_cpu_s": round(cpu.ru_utime + cpu.ru_stime, 1)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", nargs="+", required=True)
    ap.add_argument("--repeat", type=int, default=1)
    # the test's budget is 300 s; on a loaded machine a tree may stop there, short of
    # the end of the round, so its counts are not the whole reduction's
    ap.add_argument("--budget", type=float, default=300.0)
    args = ap.parse_args()
    for k in range(args.repeat):
        for tree in args.trees:
            row = {"tree": tree, "commit": tree_commit(tree), "run": k} | child_json(tree, CHILD, str(args.budget))
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
