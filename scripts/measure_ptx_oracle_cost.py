"""The NVRTC work of the static PTX oracle's two slowest tests, on source trees, in
turns, in one command: `check_cuda` of every example that compiles
(tests/compiler/test_ptx_check.py::test_every_example_that_compiles_passes) and the
padded-T1 shrink of tests/fuzz/test_ptx_property.py::test_shrinking_keeps_the_check_failing.
Per stage: NVRTC calls (`ptx_oracle.compile_ptx`), this process's CPU seconds (NVRTC
runs in-process: on a shared machine, wall time is the load's) and what the test
asserts on (findings; the shrink's statements and stats). No GPU.

    python scripts/measure_ptx_oracle_cost.py --trees BASE_TREE . [--repeat 2]

A tree is a checkout or a `git archive` of one (its src/ and tests/ are used).
"""

from __future__ import annotations

import argparse
import json

from tree_runs import child_json, tree_commit

CHILD = r"""
import json, sys, time
sys.path.insert(0, "."); sys.path.insert(0, "tests/fuzz")
from gpusem.compiler.backends import ptx_oracle
calls = [0]
real = ptx_oracle.compile_ptx
def counting(*a, **k):
    calls[0] += 1
    return real(*a, **k)
ptx_oracle.compile_ptx = counting
from gpusem import api
from gpusem.calculus.errors import GpusemError
from tests.compiler.test_ptx_check import _examples
import test_ptx_property as T
from gpusem.fuzz.bundl.target import BundlTarget
out = {}
t, failed, n = time.process_time(), 0, 0
for path in _examples():
    try:
        source = api.cuda_source(path)
    except GpusemError:
        continue
    n += 1
    failed += ptx_oracle.check_cuda(source).exit_code
out["examples"] = {"checked": n, "failing": failed, "nvrtc_calls": calls[0],
                   "cpu_s": round(time.process_time() - t, 1)}
calls[0], t = 0, time.process_time()
padded = T._t1("  junk[0] = 1;\n  junk[1] = junk[0] + 2;\n  junk[2] = 3;\n")
target = BundlTarget()
res = target.check(padded, "ptx")
small = target.minimise(padded, res, "ptx", budget_s=600)
stats = target.shrink_stats[res.signature]
out["shrink"] = {"size": [res.size, small.size], "tried": stats["tried"],
                 "built": stats["built"], "capped": stats["capped"],
                 "nvrtc_calls": calls[0], "cpu_s": round(time.process_time() - t, 1)}
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", nargs="+", required=True)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    for k in range(args.repeat):
        for tree in args.trees:
            row = {"tree": tree, "commit": tree_commit(tree), "run": k} | child_json(tree, CHILD)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
