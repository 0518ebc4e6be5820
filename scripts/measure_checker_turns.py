#!/usr/bin/env python3
"""Two source trees of gpusem on one workload of the AMIR sync checker or the Cypress
reading, in turns (order reversed every other turn), each side in a fresh process:
the workload's CPU seconds (imports excluded) and a digest of everything it
computed (verdicts, violations, statistics, arrays), which must be equal.

Workloads (the hot paths of tests/amir, tests/compiler/test_gpuir_seqpar.py and
tests/cypress):
  synccheck    every examples/gpuir program at its header's sizes, through
               synccheck (the fast machine), verdict and statistics digested
  symbolic27   tests/amir/test_symbolic_sizes.py's seed-27 property: 32 generated
               programs, symbolic_synccheck (sizes 0..6 and the proof) each
  cypress-seq  the Cypress reading (interpreter/cypress/seq.py) of the fused
               u64-v64-wgs1-p4 GEMM at N = 256 (scripts/cypress_gemm_gpu.py)

    git archive main src | tar -x -C /tmp/before
    PYTHONPATH=src python scripts/measure_checker_turns.py --before /tmp/before/src \\
        --workload synccheck --turns 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tree_runs import tree_env

ROOT = Path(__file__).resolve().parents[1]


def _synccheck() -> list[str]:
    from gpusem.interpreter.amir.synccheck import synccheck

    out = []
    for path in sorted((ROOT / "examples" / "gpuir").glob("*.gpuir")):
        text = path.read_text()
        defines = {}
        for line in text.splitlines()[:5]:      # the header's "# defines: N=256"
            if line.startswith("# defines:"):
                for word in line.split()[2:]:
                    k, _, v = word.partition("=")
                    defines[k] = int(v)
        try:
            r = synccheck(text, str(path), defines or {"N": 256})
            st = r.verdict.stats   # its rule set sorted: a set's order is the hash's
            out.append(f"{path.name} {r.verdict.violation!r} {st.statements} "
                       f"{st.recorded_accesses} {st.records} {st.lifts} "
                       f"{sorted(st.exercised)}")
        except Exception as e:  # noqa: BLE001 (the error is the outcome)
            out.append(f"{path.name} {type(e).__name__}: {e}")
    return out


def _symbolic27() -> list[str]:
    sys.path.insert(0, str(ROOT / "tests" / "amir"))
    import test_symbolic_sizes as t  # the test's own generator

    from gpusem.interpreter.amir.symbolic_sizes import symbolic_synccheck

    out = []
    for i in range(32):
        r = symbolic_synccheck(t._sized(27, i), f"gen{i}.gpuir", ["T"], {}, up_to=6,
                               sizes=7)
        out.append(f"{i} {r.verdict} {r.counterexample} {r.tried}")
    return out


def _cypress_seq() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from gpusem.interpreter.cypress.seq import seq
    from tests.script_module import load_script

    mod = load_script("cypress_gemm_gpu")
    m = mod.named("u64-v64-wgs1-p4-fused-nogrouped-noacopy")
    program, arrays, scalars, _ = mod.lower(mod.render(256, m), m.form, m.dma_warps)
    got, r = seq(program, arrays, scalars)
    return [hashlib.sha256(got["C"].tobytes()).hexdigest(), str(r.launches)]


WORKLOADS = {"synccheck": _synccheck, "symbolic27": _symbolic27,
             "cypress-seq": _cypress_seq}


def _child(workload: str) -> None:
    fn = WORKLOADS[workload]
    start = time.process_time()
    lines = fn()
    cpu = time.process_time() - start
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    print(json.dumps({"cpu_s": cpu, "digest": digest}))


def _run(src: str, workload: str) -> dict:
    env = tree_env(str(Path(src).parent))  # its src/ first, then what the path held
    done = subprocess.run([sys.executable, __file__, "--child", workload], env=env,
                          capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="the baseline's src folder")
    ap.add_argument("--after", default=str(ROOT / "src"))
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="synccheck")
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child)
        return 0
    sides = {"before": args.before, "after": args.after}
    cpu: dict[str, list[float]] = {"before": [], "after": []}
    digests: dict[str, set[str]] = {"before": set(), "after": set()}
    for turn in range(args.turns):
        order = ["before", "after"] if turn % 2 == 0 else ["after", "before"]
        for side in order:
            got = _run(sides[side], args.workload)
            cpu[side].append(got["cpu_s"])
            digests[side].add(got["digest"])
            print(f"turn {turn} {side}: {got['cpu_s']:.2f} CPU-s ({got['digest']})")
    same = digests["before"] == digests["after"] and len(digests["after"]) == 1
    b, a = statistics.median(cpu["before"]), statistics.median(cpu["after"])
    print(f"{args.workload}: before {b:.2f} CPU-s, after {a:.2f} CPU-s (medians), "
          f"ratio {a / b:.3f}; outcomes {'equal' if same else 'DIFFER'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
