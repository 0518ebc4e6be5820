"""CPU-seconds of one lambda-cu cpu build, both ways in one command (driver.py):
`standalone` (one g++ call on the text with every header inlined: the build before
prelude.py) and `prebuilt` (the program alone against the precompiled header, linked
with the runtime object), each example of examples/lambdacu at the tests' block size,
in turns (the order swapped every other turn) in a fresh cache. The prelude's one-off
cost (one PCH per block size and the runtime object) is reported apart. Each pair of
executables must print the same thing, or the script exits 1.

    PYTHONPATH=src python scripts/measure_lambdacu_build.py [--turns 2] [--block 4]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--block", type=int, default=4)
    args = ap.parse_args()
    os.environ["GPUSEM_CACHE_DIR"] = tempfile.mkdtemp(prefix="lcbuild-")
    # imported after the cache folder is set: gpusem reads it once
    from gpusem.calculus.lambdacu.parser import parse_program
    from gpusem.compiler.backends.cache import cache_dir
    from gpusem.compiler.lambdacu_cuda import driver, prelude
    from gpusem.compiler.lambdacu_cuda.emit import compile_program

    flags = driver.cpu_build_flags()
    home = cache_dir("lambdacu") / f"prelude_{prelude.folder_key(driver.CXX, flags)}"
    t0 = _children_cpu()
    assert prelude.ensure(home, driver.CXX, flags, args.block, 300.0) is not None
    once = _children_cpu() - t0
    rows, bad = {}, 0
    for path in sorted((ROOT / "examples" / "lambdacu").glob("*.lcu")):
        src = compile_program(parse_program(path.read_text(), str(path)),
                              block=args.block).source
        times: dict[str, list[float]] = {"standalone": [], "prebuilt": []}
        outs = {}
        for turn in range(args.turns):
            ways = ["standalone", "prebuilt"][:: 1 if turn % 2 == 0 else -1]
            for way in ways:
                exe = Path(tempfile.mkdtemp(dir=cache_dir("lambdacu"))) / "prog"
                t = _children_cpu()
                if way == "standalone":
                    made = driver._build_one(driver.standalone(src), driver.CXX, flags,
                                             exe, 300.0, "prog.cpp")
                    ok = not isinstance(made, str)
                else:
                    ok = driver._build_prebuilt(src, flags, exe, 300.0)
                times[way].append(_children_cpu() - t)
                assert ok, f"{path.name}: the {way} build failed"
                outs[way] = subprocess.run([str(exe), "0"], capture_output=True, check=False,
                                           text=True, timeout=120).stdout
        same = outs["standalone"] == outs["prebuilt"]
        bad += not same
        med = {w: statistics.median(v) for w, v in times.items()}
        rows[path.stem] = {**{w: round(v, 3) for w, v in med.items()},
                           "ratio": round(med["prebuilt"] / med["standalone"], 3),
                           "same_output": same}
        print(path.stem, rows[path.stem], flush=True)
    total = {w: sum(r[w] for r in rows.values()) for w in ("standalone", "prebuilt")}
    print(json.dumps({"block": args.block, "turns": args.turns,
                      "prelude_once_cpu_s": round(once, 3),
                      "per_build_cpu_s": {w: round(v / len(rows), 3)
                                          for w, v in total.items()},
                      "ratio": round(total["prebuilt"] / total["standalone"], 3)},
                     indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
