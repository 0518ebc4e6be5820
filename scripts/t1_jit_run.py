"""Run the T1 kernel from PTX or cubin files through the CUDA driver (CuPy), N times each.

  python3 scripts/t1_jit_run.py N FILE...   (FILE: .ptx is JIT-compiled by the driver,
                                            .cubin loaded as is)
The kernel is results/toolchain/T1/t1_min.cu's `k(x0, st, ot)`, launched as its main()
launches it: one thread, x0 = st = [42, 42]; the thread stores st[0] = 0 and reads it
back, so ot[0] must be 1 (a stale read through the non-coherent path gives 43).
Prints one JSON line per file: how many of N launches gave ot[0] = 1.
"""

import json
import sys

import cupy as cp


def run(path: str, n: int) -> dict:
    module = cp.cuda.function.Module()
    try:
        module.load(open(path, "rb").read())
    except Exception as exc:  # noqa: BLE001 - a driver that refuses the PTX is data
        return {"file": path, "loaded": False, "error": str(exc)[:300]}
    kernel = module.get_function("k")
    outs = []
    for _ in range(n):
        x0 = cp.asarray([42, 42], dtype=cp.int32)
        st = cp.asarray([42, 42], dtype=cp.int32)
        ot = cp.full(1, -1, dtype=cp.int32)
        kernel((1,), (1,), (x0, st, ot))
        cp.cuda.Device().synchronize()
        outs.append(int(ot.get()[0]))
    right = sum(o == 1 for o in outs)
    return {"file": path, "loaded": True, "runs": n, "right": right,
            "wrong_outputs": sorted({o for o in outs if o != 1})}


if __name__ == "__main__":
    n = int(sys.argv[1])
    for f in sys.argv[2:]:
        print(json.dumps(run(f, n)), flush=True)
