"""How fast one core of this host runs while the others are busy (issue 31.2).

On the H200 x2 (32 vCPUs, "1 thread per core" as the VM reports it) a campaign's CPU
per program rose 22-32% from one GPU (16 processes and their CUDA workers, about half
the vCPUs busy) to two (all of them busy), with the same code, the same programs and
no steal to speak of (results/scale/h200x2_2026-11-30p). Either gpusem does more work
per program when more processes run, or each vCPU does less work per second when all
of them are busy (hardware threads of one physical core, a shared clock or cache):
this script tells them apart with no gpusem in the measured loop.

  counts   K processes, each pinned to its own vCPU (0..K-1), each running the same
           fixed workload for --seconds: the work each one gets done per second,
           for K = 1, cores/2 and cores (and --counts), relative to K = 1;
  halves   cores/2 processes on the first half of the vCPUs, then on every other
           vCPU (0, 2, 4, ...): where the second is slower, vCPUs i and i+1 share
           something the first half's do not, and the other way round;
  pairs    (--pairs) two processes, on vCPU 0 and on vCPU j, for every j: the j whose
           pairing slows vCPU 0 down most is its hardware sibling, if it has one.

Workloads (--workload, repeatable): `python`, an integer loop (the interpreter's own
dispatch, as generation and the reference are); `memory`, random reads over a 64 MB
list (cache and memory bandwidth); `gpusem`, Bundl programs drawn and compiled to CUDA
C++ in a loop (generation + the compiler: the campaign's own Python work).

  python scripts/host_core_scaling.py --seconds 3 --json host.json
  python scripts/host_core_scaling.py --workload gpusem --pairs --json host.json
  taskset -c 16-31 python scripts/host_core_scaling.py --hog --workload memory --seconds 90
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import random
import shlex
import statistics
import sys
import time

from tree_runs import write_result


def _python_step(state: dict) -> int:
    x = 0
    for i in range(20_000):
        x = (x * 31 + i) & 0xFFFFFFFF
    return 1


def _memory_step(state: dict) -> int:
    data = state.setdefault("data", list(range(8_000_000)))  # ~64 MB of pointers
    rnd = state.setdefault("rnd", random.Random(1))
    n = len(data)
    s = 0
    for _ in range(20_000):
        s += data[rnd.randrange(n)]
    return 1


def _gpusem_step(state: dict) -> int:
    """One Bundl program drawn (the campaign's strategy, seeds in sequence) and
    compiled to CUDA C++: the campaign's own Python work, generation first."""
    if "draw" not in state:
        from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
        from gpusem.fuzz.bundl.generated import as_generated
        from gpusem.fuzz.bundl.target import BundlTarget
        from gpusem.fuzz.hunt import generate_round

        strategy = BundlTarget("cpu").strategy("compile")
        state["draw_one"] = lambda seed: as_generated(
            generate_round(strategy, seed, 1)[0].program).program
        state["compile"] = lambda p: compile_program(p, CompileOptions())
        state["draw"] = 0
    program = state["draw_one"](12345 + state["draw"])
    state["draw"] += 1
    with contextlib.suppress(Exception):  # a program the compiler refuses: drawn all the same
        state["compile"](program)
    return 1


STEPS = {"python": _python_step, "memory": _memory_step, "gpusem": _gpusem_step}


def _worker(cpu: int, workload: str, ready, seconds: float, out) -> None:
    try:
        os.sched_setaffinity(0, {cpu})
        step, state = STEPS[workload], {}
        step(state)  # set up (the list, the imports) before the clock starts
        ready.wait(timeout=300)  # every process set up: all of them start at once
        begin = time.time()
        done, end = 0, begin + seconds
        while (now := time.time()) < end:
            done += step(state)
        out.put((cpu, done / (now - begin)))
    except Exception as err:  # noqa: BLE001 - the parent says what failed, not a timeout
        out.put((cpu, f"{type(err).__name__}: {err}"))


def run_set(cpus: list[int], workload: str, seconds: float) -> dict[int, float]:
    """Steps a second of each process, one pinned to each of `cpus`, all at once."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    ready = ctx.Barrier(len(cpus))
    procs = [ctx.Process(target=_worker, args=(c, workload, ready, seconds, out))
             for c in cpus]
    for p in procs:
        p.start()
    rates = dict(out.get(timeout=seconds + 420) for _ in procs)
    for p in procs:
        p.join()
    failed = {c: r for c, r in rates.items() if isinstance(r, str)}
    if failed:
        raise SystemExit(f"workload {workload} failed: {failed}")
    return rates


def measure(workload: str, seconds: float, counts: list[int], pairs: bool,
            turns: int = 1) -> dict:
    """Each count's rate relative to one process alone. With `turns` > 1 every turn
    measures the alone rate again and then each count, the order reversed every other
    turn, and each count's figure is the median over the turns of its rate against
    that turn's alone rate: a host whose speed drifts over seconds (neighbours, clocks)
    moves both sides of one turn's ratio together."""
    cpus = sorted(os.sched_getaffinity(0))
    n = len(cpus)
    run_set(cpus[:1], workload, seconds)  # untimed: the host warms (clocks, caches)
    ks = sorted({1, max(1, n // 2), n, *[c for c in counts if 0 < c <= n]})
    alones, per_k = [], {k: [] for k in ks}
    for turn in range(turns):
        alone = run_set(cpus[:1], workload, seconds)[cpus[0]]
        alones.append(alone)
        for k in ks if turn % 2 == 0 else ks[::-1]:
            rates = list(run_set(cpus[:k], workload, seconds).values())
            per_k[k].append((statistics.median(rates) / alone, min(rates) / alone))
    alone = statistics.median(alones)
    result: dict = {"workload": workload, "alone_steps_per_s": round(alone, 2),
                    "turns": turns, "counts": {}, "halves": {}}
    if turns > 1:
        result["alone_per_turn"] = [round(a, 2) for a in alones]
    for k in ks:
        result["counts"][str(k)] = {
            "median_relative": round(statistics.median(m for m, _ in per_k[k]), 3),
            "min_relative": round(min(lo for _, lo in per_k[k]), 3)}
        if turns > 1:
            result["counts"][str(k)]["per_turn"] = [round(m, 3) for m, _ in per_k[k]]
    if n >= 4:
        for name, chosen in (("first_half", cpus[:n // 2]), ("every_other", cpus[::2])):
            rates = list(run_set(chosen, workload, seconds).values())
            result["halves"][name] = {"cpus": f"{chosen[0]}..{chosen[-1]}",
                                      "median_relative":
                                          round(statistics.median(rates) / alone, 3)}
    if pairs:
        slowed = {}
        for j in cpus[1:]:
            slowed[str(j)] = round(run_set([cpus[0], j], workload, seconds)[cpus[0]]
                                   / alone, 3)
        result["pairs_cpu0_relative"] = slowed
        result["cpu0_sibling_guess"] = min(slowed, key=slowed.get) if slowed else None
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", action="append", choices=sorted(STEPS))
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--counts", type=int, action="append", default=[])
    ap.add_argument("--pairs", action="store_true")
    ap.add_argument("--turns", type=int, default=1,
                    help="measure alone and every count this many times, in turns")
    ap.add_argument("--hog", action="store_true",
                    help="no measurement: one process on each vCPU of this process's "
                         "affinity runs the (first) workload for --seconds; a neighbour "
                         "that shares nothing with a campaign beside it but the host")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.hog:
        cpus = sorted(os.sched_getaffinity(0))
        rates = run_set(cpus, (args.workload or ["memory"])[0], args.seconds)
        write_result({"hog": (args.workload or ["memory"])[0], "cpus": cpus,
                      "steps_per_s": rates}, args.json)
        return 0
    result = {"cores": len(os.sched_getaffinity(0)),
              "workloads": [measure(w, args.seconds, args.counts, args.pairs,
                                      args.turns)
                            for w in (args.workload or ["python", "memory"])],
              "device": os.environ.get("GPUSEM_DEVICE", ""),
              "command": shlex.join([os.path.basename(sys.executable), *sys.argv])}
    write_result(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
