#!/usr/bin/env python3
"""Where the AMIR machine's time goes with the iteration memo (issue 27 item 2), on the
ragged Hopper GEMM of scripts/bench_amir_machine.py: CPU seconds of the whole run
(`check_amir`, memo on) split into the memo's phases, each timed around its call in
interpreter/amir/memo.py (none changes what the machine does):

  replay      applying a stored iteration (of which: the records made again in
              outside variables, `add_to_fresh_window`; λ on outside records)
  record      stepping an iteration the table lacks, watching it, storing it
  start       the scan of the state when a loop's chain starts (once per loop
              execution, and after an iteration that could not be replayed)
  write back  materialising a virtual state (a miss, the loop's end, or the next
              loop's start when it does not take a chain handed on)
  walk        the dry walk (cached by atom values) and the outside windows
  stepped     iterations stepped without a table entry (new atom values, fall-backs)
  outside the memoised loops: the rest of the run (statements stepped as always)

and the memo's counts (iterations replayed, stepped, recorded; entry images).

    python scripts/profile_amir_memo.py --sizes 1024 2048 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpusem.calculus.gpuir.parser import parse_module
from gpusem.interpreter.amir import memo as memo_mod
from gpusem.interpreter.amir.from_gpuir import convert
from gpusem.interpreter.amir.machine import MEMO_MIN_ITERATIONS, Machine
from gpusem.typing_rules.gpuir.frontend import check_proc, header_defines

KERNEL = ROOT / "examples" / "gpuir" / "bench" / "gemm_hopper_ragged.gpuir"
PHASES = {"_replay": "replay", "_record": "record", "_start": "start",
          "_physical": "write back", "_resolve": "walk", "_outside_ok": "walk",
          "run": "memoised loops", "settle": "memoised loops"}


def timed(cpu: dict[str, float], label: str, fn: Any) -> Any:
    def wrapper(*args: Any, **kw: Any) -> Any:
        t0 = time.process_time()
        try:
            return fn(*args, **kw)
        finally:
            cpu[label] += time.process_time() - t0
    return wrapper


def profile(n: int) -> dict[str, Any]:
    text = KERNEL.read_text()
    proc = parse_module(text, str(KERNEL)).procs[-1]
    env = {**header_defines(text), "N": n}
    prog = convert(proc, env, analysis=check_proc(proc, env))
    plain = Machine(prog, env, memo_min=MEMO_MIN_ITERATIONS)
    t0 = time.process_time()
    plain.run()
    untimed = time.process_time() - t0
    cpu: dict[str, float] = defaultdict(float)
    saved = {}
    for name, label in PHASES.items():
        saved[name] = getattr(memo_mod.LoopMemo, name)
        setattr(memo_mod.LoopMemo, name, timed(cpu, label, saved[name]))
    extra = {"add_to_fresh_window": "replay: outside records",
             "_apply": "replay: lambda on outside records"}
    for name, label in extra.items():
        saved[name] = getattr(memo_mod, name)
        setattr(memo_mod, name, timed(cpu, label, saved[name]))
    walk = memo_mod.Walk.__call__
    memo_mod.Walk.__call__ = timed(cpu, "walk", walk)  # type: ignore[method-assign]
    step = memo_mod.LoopMemo._step
    try:
        m = Machine(prog, env, memo_min=MEMO_MIN_ITERATIONS)
        memo_mod.LoopMemo._step = timed(cpu, "stepped", step)  # type: ignore
        t0 = time.process_time()
        v = m.run()
        total = time.process_time() - t0
    finally:
        for name in PHASES:
            setattr(memo_mod.LoopMemo, name, saved[name])
        for name in extra:
            setattr(memo_mod, name, saved[name])
        memo_mod.Walk.__call__ = walk  # type: ignore[method-assign]
        memo_mod.LoopMemo._step = step  # type: ignore[method-assign]
    # record's own stepping is inside record: charge "stepped" outside it only
    phases = dict(cpu)
    phases["outside the memoised loops"] = total - phases.pop("memoised loops", 0.0)
    return {
        "N": n, "verdict": "accepted" if v.violation is None else "rejected",
        "cpu_untimed": untimed, "cpu_timed": total,
        "phases": {k: phases[k] for k in sorted(phases, key=lambda k: -phases[k])},
        "memo": {"replayed": sum(x.hits for x in m.memos),
                 "stepped": sum(x.stepped for x in m.memos),
                 "recorded": sum(x.misses for x in m.memos),
                 "images": len({id(i) for x in m.memos for i in x.by_id}),
                 "chains_taken": sum(x.taken for x in m.memos)},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    rows = []
    for n in args.sizes:
        row = profile(n)
        rows.append(row)
        mm = row["memo"]
        print(f"N={n}: {row['cpu_untimed']:.2f} s CPU ({row['cpu_timed']:.2f} s "
              f"timed); replayed {mm['replayed']}, stepped {mm['stepped']} "
              f"({mm['recorded']} recorded), {mm['images']} images, "
              f"{mm['chains_taken']} chains taken")
        for k, c in row["phases"].items():
            print(f"    {k:<36} {c:7.3f} s {c / row['cpu_timed']:6.1%}")
    if args.json:
        out = {"command": "python scripts/profile_amir_memo.py " + " ".join(
                   sys.argv[1:] if argv is None else argv),
               "kernel": str(KERNEL.relative_to(ROOT)),
               "machine": {"cpu_count": os.cpu_count(), "load": list(os.getloadavg())},
               "results": rows}
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
