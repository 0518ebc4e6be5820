#!/usr/bin/env python3
"""Where the reference AMIR machine's time goes on one kernel, and how much a
k-iteration summary could save (issue 27 item 2: the 10x goal on an asymmetric kernel).

Runs `check_amir`'s machine (interpreter/amir/machine.py) once on the converted kernel
with three kinds of instrumentation, none of which changes what the machine does:

  rules     CPU seconds per statement kind (the compiled closures of Record*, Check*,
            Clear*, Arrive, Await, Fence, ... each timed around its call; a fused run
            of one access's judgments is charged to the access run), and per loop: the
            main k loop (`--loop`, the first loop with that variable whose lower bound
            is `--lo`) against everything else;
  period    at the start of every iteration of that loop, a canonical image of the
            task-local state: each allocated variable's cells relabelled by record-set
            first appearance, each record set as its records' (statement, threads mask,
            kind, timeline, visibility blocks, arrive counts relative to the barrier
            cell's count now), barrier counts relative to the first cell's. The first
            iteration whose image equals an earlier one's (and the distance: the
            period) says from which k a summary could jump; the outside variables
            (parameters, and what the procedure allocates at its top level: A, B, C
            as the conversion allocates them) are left out of the
            image, since their windows move with k (their records are read-only
            kinds in this kernel: RecordRead, CheckMutates);
  ceiling   from those: the iterations a per-entry fixpoint jump must still run
            (those before the first repeat, then the remainder mod the period: at
            the repeat the state is the one a period earlier, so whole periods can
            be skipped), hence the best speed-up a k-summary gives over the whole run,
            time outside the loop included; and the ceiling of a memo across entries
            (each iteration whose image some earlier iteration of any entry had is
            free, the others cost the mean iteration).

The image is a diagnostic, not a proof: equal images are necessary for a jump to be
exact, not shown sufficient here.

    python scripts/profile_amir_machine.py --sizes 1024 2048 --json out.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpusem.calculus.amir import ast as A
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.interpreter.amir.from_gpuir import convert
from gpusem.interpreter.amir.machine import Machine, Run
from gpusem.typing_rules.gpuir.frontend import check_proc, header_defines

KERNEL = ROOT / "examples" / "gpuir" / "bench" / "gemm_hopper_ragged.gpuir"
_LEAVES = (A.RecordRead, A.RecordMutate, A.ClearReads, A.ClearMutates, A.CheckReads,
           A.CheckMutates, A.Fence, A.Arrive, A.Await, A.CheckBarrier, A.Alloc,
           A.Free, A.IncTaskID)


class Profiled(Machine):
    """The reference machine with timers around its compiled statements."""

    def __init__(self, prog: A.AProc, env: dict[str, int], loop_var: str, lo: int,
                 images: bool, saturate: int = 8):
        self.saturate = saturate
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.loop_var, self.loop_lo, self.images = loop_var, lo, images
        self.k_cpu = 0.0
        self.k_iters = 0
        self.k_entries = 0
        self.k_sigs: list[list[bytes]] = []          # per entry: image per iteration
        super().__init__(prog, env)

    def _timed(self, label: str, run: Run) -> Run:
        cpu, calls, clock = self.cpu, self.calls, time.process_time

        def timed() -> None:
            t0 = clock()
            try:
                run()
            finally:
                cpu[label] += clock() - t0
                calls[label] += 1
        return timed

    def compile_body(self, body: tuple[A.AStmt, ...],
                     bound: frozenset[str]) -> list[Run]:
        out = super().compile_body(body, bound)
        # compile_body fuses runs of one access: label each closure by its first
        # statement (the fused judgments are listed in order in `body`)
        labels: list[str] = []
        i = 0
        while i < len(body):
            s = body[i]
            j = i + 1
            if isinstance(s, _LEAVES[:6]):
                access = getattr(s, "access", None)
                while j < len(body) and isinstance(body[j], _LEAVES[:6]) \
                        and getattr(body[j], "access", None) == access:
                    j += 1
                names = sorted({type(x).__name__ for x in body[i:j]})
                labels.append("+".join(names))
            else:
                labels.append(type(s).__name__)
            i = j
        assert len(labels) == len(out)
        return [run if lab in ("Loop", "Guard") else self._timed(lab, run)
                for lab, run in zip(labels, out)]

    def _rule_loop(self, s: A.Loop, bound: frozenset[str]) -> Run:
        base = super()._rule_loop(s, bound)
        if s.var != self.loop_var or getattr(s.lo, "value", None) != self.loop_lo:
            return base
        body = self.compile_body(s.body, bound | {s.var})
        from gpusem.interpreter.amir.ctrl import compile_c
        lo, hi = compile_c(s.lo, bound, s.origin), compile_c(s.hi, bound, s.origin)
        env, width = self.env, max(1, len(s.body))

        def main_loop() -> None:
            t0 = time.process_time()
            m, n = lo(env), hi(env)
            self.stats.statements += width * max(0, n - m)
            sigs: list[bytes] = []
            saved = env.get(s.var)
            for y in range(m, n):
                env[s.var] = y
                if self.images:
                    t1 = time.process_time()
                    sigs.append(self.image())
                    t0 += time.process_time() - t1     # not charged to the loop
                for st in body:
                    st()
            if saved is None:
                env.pop(s.var, None)
            else:
                env[s.var] = saved
            self.k_cpu += time.process_time() - t0
            self.k_iters += max(0, n - m)
            self.k_entries += 1
            if self.images:
                self.k_sigs.append(sigs)
        return main_loop

    # ------------------------------------------------------------- the image

    def image(self) -> bytes:
        """The canonical image of the task-local state (see the module docstring)."""
        parts: list[Any] = []
        counts = {v.key: v.arr for v in self.vars.values() if v.arr is not None}
        canon: dict[int, Any] = {}
        sat = self.saturate
        params = set(self.prog.params) | {x.name for x in self.prog.body
                                          if isinstance(x, A.Alloc)}

        def rec_image(r: Any) -> Any:
            p = []
            for (key, cell), c in sorted(r.p.items(), key=repr):
                arr = counts.get(key)
                rel = None if arr is None else max(c - int(arr[cell]), -sat)
                p.append((key[0], cell, rel))
            blocks = sorted(((ts[0] != -1, ts[1]), lv) for ts, lv in r.blocks.items())
            return (r.stmt, r.who[0] != -1, r.who[1], r.kind, r.q, r.own,
                    tuple(blocks), tuple(p))

        def set_image(sid: int) -> Any:
            got = canon.get(sid)
            if got is None:
                members = self.sets.sets[sid] or ()
                got = canon[sid] = tuple(sorted((rec_image(r) for r in members),
                                                key=repr))
            return got

        for name in sorted(self.vars):
            v = self.vars[name]
            if not v.allocated or name in params:
                continue                                  # outside: left out
            for attr in ("rd", "mu"):
                arr = getattr(v, attr)
                uniq, first, inv = np.unique(arr, return_index=True,
                                             return_inverse=True)
                order = np.argsort(first)
                rank = np.empty_like(order)
                rank[order] = np.arange(len(order))
                parts.append((name, attr, tuple(set_image(int(uniq[i])) for i in order),
                              rank[inv].astype(np.int32).tobytes()))
            if v.arr is not None and v.awt is not None and v.arr.size:
                base = int(v.arr.flat[0])
                parts.append((name, (v.arr - base).tobytes(),
                              (v.awt - base).tobytes()))
        return hashlib.sha256(repr(parts).encode()).digest()


def converted(n: int) -> tuple[A.AProc, dict[str, int]]:
    text = KERNEL.read_text()
    proc = parse_module(text, str(KERNEL)).procs[-1]
    env = {**header_defines(text), "N": n}
    return convert(proc, env, analysis=check_proc(proc, env)), env


def period_of(sigs: list[bytes]) -> tuple[int | None, int | None]:
    """(first iteration index whose image was seen before, distance to it)."""
    seen: dict[bytes, int] = {}
    for i, s in enumerate(sigs):
        if s in seen:
            return i, i - seen[s]
        seen[s] = i
    return None, None


def profile(n: int, loop: str, lo: int, sat: int) -> dict[str, Any]:
    prog, env = converted(n)
    plain = Machine(prog, env)
    c0 = time.process_time()
    verdict = plain.run()
    total = time.process_time() - c0
    timed = Profiled(prog, env, loop, lo, images=False)
    c0 = time.process_time()
    timed.run()
    timed_total = time.process_time() - c0
    imaged = Profiled(prog, env, loop, lo, images=True, saturate=sat)
    imaged.run()
    periods = [period_of(s) for s in imaged.k_sigs]
    starts = [p for p, _ in periods]
    dists = [d for _, d in periods]
    iters = [len(s) for s in imaged.k_sigs]
    must_run = 0
    for (start, dist), count in zip(periods, iters):
        if start is None or dist is None:
            must_run += count
        else:
            must_run += start + (count - start) % dist  # jump at the repeat
    everywhere: set[bytes] = set()        # images met in any entry before
    new_images = 0
    for sigs in imaged.k_sigs:
        for sig in sigs:
            new_images += sig not in everywhere
            everywhere.add(sig)
    k_share = timed.k_cpu / timed_total if timed_total else 0.0
    per_iter = timed.k_cpu / max(1, timed.k_iters)
    # the k loop's time shrinks to the iterations still run; the rest stays
    ceiling_cpu = timed_total - timed.k_cpu + per_iter * must_run
    memo_cpu = timed_total - timed.k_cpu + per_iter * new_images
    rules = sorted(((lab, timed.cpu[lab], timed.calls[lab]) for lab in timed.cpu),
                   key=lambda x: -x[1])
    return {
        "N": n,
        "verdict": "accepted" if verdict.violation is None else "rejected",
        "cpu_plain": total,
        "cpu_instrumented": timed_total,
        "statements": verdict.stats.statements,
        "saturate": sat,
        "loop": {"var": loop, "lo": lo, "entries": timed.k_entries,
                 "iterations": timed.k_iters, "cpu": timed.k_cpu,
                 "share_of_run": k_share, "cpu_per_iteration": per_iter},
        "rules": [{"rule": lab, "cpu": c, "calls": k,
                   "share": c / timed_total if timed_total else 0.0}
                  for lab, c, k in rules],
        "period": {
            "first_repeat": sorted({s for s in starts if s is not None}),
            "distance": sorted({d for d in dists if d is not None}),
            "entries_without_repeat": sum(1 for s in starts if s is None),
            "iterations_run_with_jump": must_run,
            "ceiling_cpu": ceiling_cpu,
            "ceiling_speedup": timed_total / ceiling_cpu if ceiling_cpu else None,
            "new_images": new_images,
            "memo_ceiling_cpu": memo_cpu,
            "memo_ceiling_speedup": timed_total / memo_cpu if memo_cpu else None,
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024])
    ap.add_argument("--loop", default="k", help="the main loop's variable")
    ap.add_argument("--lo", type=int, default=1, help="its lower bound")
    ap.add_argument("--saturate", type=int, default=8,
                    help="relative arrive counts below -S are one (the image)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    rows = []
    for n in args.sizes:
        row = profile(n, args.loop, args.lo, args.saturate)
        rows.append(row)
        lp, pd = row["loop"], row["period"]
        print(f"N={n}: {row['cpu_plain']:.2f} s CPU plain, "
              f"{row['cpu_instrumented']:.2f} s instrumented; loop {args.loop}: "
              f"{lp['iterations']} iterations in {lp['entries']} entries, "
              f"{lp['share_of_run']:.0%} of the run, "
              f"{lp['cpu_per_iteration'] * 1e3:.2f} ms each")
        for r in row["rules"][:8]:
            print(f"    {r['rule']:<40} {r['cpu']:7.3f} s {r['share']:5.1%} "
                  f"{r['calls']:>8} calls")
        print(f"  image repeats from iteration {pd['first_repeat']} at distance "
              f"{pd['distance']} ({pd['entries_without_repeat']} entries never); a "
              f"jump runs {pd['iterations_run_with_jump']} of {lp['iterations']}: "
              f"ceiling {pd['ceiling_speedup']:.2f}x; {pd['new_images']} images new "
              f"across entries: a memo's ceiling {pd['memo_ceiling_speedup']:.2f}x")
    if args.json:
        out = {"command": "python scripts/profile_amir_machine.py " + " ".join(
                   sys.argv[1:] if argv is None else argv),
               "kernel": str(KERNEL.relative_to(ROOT)),
               "machine": {"cpu_count": os.cpu_count(), "load": list(os.getloadavg())},
               "results": rows}
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
