"""The GPU IR sequential reading (interpreter/gpuir/sequential.py) of a fused Fig. 5
GEMM at N = 256 (the reading the cypress cpu-harness tests compare every kernel
with), with its control expressions evaluated through ctrl.compile_c's closures
(the evaluator's own path) and through ctrl.eval_c's tree walk (the baseline), in
one process, alternating, CPU seconds; the two readings must be equal bit for bit.

    PYTHONPATH=src python scripts/bench_seq_reading.py [--rounds 3] [--n 256]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpusem.calculus.gpuir.ctrl import eval_c
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_cuda.run import make_inputs
from gpusem.interpreter.gpuir import sequential

from tests.script_module import load_script


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--mapping", default="u64-v64-wgs1-p4-fused-blocked-prefetch-dma4")
    args = ap.parse_args()
    mod = load_script("cypress_gemm_gpu")
    m = mod.named(args.mapping)
    text = mod.lower(mod.render(args.n, m), m.form, m.dma_warps)[3]
    proc = parse_module(text, "fig5_gemm.gpuir").procs[-1]
    sizes = {"M": args.n, "N": args.n, "K": args.n}
    inputs = make_inputs(proc, sizes)
    compiled = sequential._Evaluator.ev

    def tree_walk(self, c):  # the baseline: eval_c on every evaluation
        return eval_c(c, self.env)

    times: dict[str, list[float]] = {"compiled": [], "eval_c": []}
    out: dict[str, dict[str, np.ndarray]] = {}
    for _ in range(args.rounds):
        for name, ev in (("eval_c", tree_walk), ("compiled", compiled)):
            sequential._Evaluator.ev = ev  # type: ignore[method-assign]
            t = time.process_time()
            out[name] = sequential.run_sequential(proc, sizes, inputs)
            times[name].append(time.process_time() - t)
    sequential._Evaluator.ev = compiled  # type: ignore[method-assign]
    same = all(np.array_equal(out["compiled"][k].view(np.uint8),
                              out["eval_c"][k].view(np.uint8)) for k in out["eval_c"])
    best = {k: min(v) for k, v in times.items()}
    print(f"{args.mapping} N={args.n}: eval_c {best['eval_c']:.2f} s, compiled "
          f"{best['compiled']:.2f} s CPU (best of {args.rounds}): "
          f"{best['eval_c'] / best['compiled']:.2f}x; same bits: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
