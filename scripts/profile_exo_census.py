"""Where a verdict census program's time goes (issue 26 item 3), per stage, on one
branch: generation (hypothesis drawing the rounds), gpusem's side (parse, the AMIR
checker under `--rules paper` and `fixed`, emitting the Exo proc), Exo's side (the
worker's start: process, `import exo.platforms.cuda`, the checker warm-up with its
C++ library or JIT; then per program: load, sync_check, compile as the worker times
them; the IPC round trip around them; `explain` on a disagreeing hazard).

  GPUSEM_EXO_PYTHON=PY python scripts/profile_exo_census.py --rounds 0-1 --out FILE

(`--rounds 0-4`: the first 500 programs a census of that seed checks.) The dev
machine is shared, so every stage is counted in CPU seconds as well as wall seconds:
this process's `process_time` for gpusem's stages, the worker's user + system time
from /proc for Exo's (the worker's own split of a check into load / sync_check /
compile is in wall seconds). One JSON: per stage the totals, per program and share
of the whole; the 5 slowest programs per stage; the verdict pair of every program (a
census of the same seed and rounds tallies the same pairs). Exo's start is measured
again in a fresh worker once any JIT build is cached.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict

TICK = os.sysconf("SC_CLK_TCK")


def cpu_of(pid: int) -> float:
    """A process's CPU seconds so far (user + system), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Profile:
    """Seconds per stage, wall and CPU, and the slowest programs of each."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.slow: dict[str, list] = defaultdict(list)

    def add(self, stage: str, k: int, wall: float, cpu: float) -> None:
        self.wall[stage] += wall
        self.cpu[stage] += cpu
        self.slow[stage].append((round(cpu, 3), round(wall, 3), k))

    def timed(self, stage: str, k: int, fn, *args):
        w, c = time.perf_counter(), time.process_time()
        out = fn(*args)
        self.add(stage, k, time.perf_counter() - w, time.process_time() - c)
        return out

    def table(self, n: int) -> dict:
        cpu = sum(self.cpu.values())
        return {s: {"cpu_s": round(self.cpu[s], 3), "wall_s": round(self.wall[s], 3),
                    "cpu_per_program_s": round(self.cpu[s] / n, 4),
                    "wall_per_program_s": round(self.wall[s] / n, 4),
                    "cpu_share": round(self.cpu[s] / cpu, 4) if cpu else None}
                for s in sorted(self.cpu, key=lambda s: -self.cpu[s])}


def start_worker(driver) -> tuple[float, float]:
    """Wall and CPU seconds (the worker's) of starting `driver`'s worker."""
    w = time.perf_counter()
    driver.install  # noqa: B018 - starts the worker
    assert driver.proc is not None
    return time.perf_counter() - w, cpu_of(driver.proc.pid)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=100, help="per round")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", default="0", help="a round or a range: 0-4")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)

    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.compiler.gpuir_exo.driver import ExoDriver
    from gpusem.compiler.gpuir_exo.emit import Unexpressible, emit_proc
    from gpusem.fuzz.exo.census_tally import round_programs
    from gpusem.fuzz.exo.checking import FILE
    from gpusem.fuzz.exo.verdicts import RULES, compare, gpusem_verdict

    lo, _, hi = a.rounds.partition("-")
    rounds = list(range(int(lo), int(hi or lo) + 1))
    prof = Profile()
    programs = [p for r in rounds
                for p in prof.timed("generate", r, round_programs, a.seed, r,
                                    a.programs)]
    verdicts: list[str] = []
    driver = ExoDriver()
    first = start_worker(driver)
    install = driver.install
    exo_wall: dict[str, float] = defaultdict(float)
    restarts = 0
    try:
        for k, program in enumerate(programs):
            source, defines = program.source(), program.defines()
            module = prof.timed("gpusem_parse", k, parse_module, source, FILE)
            proc = module.procs[-1]
            gv = {r: prof.timed(f"gpusem_check_{r}", k, gpusem_verdict, proc,
                                defines, source, r) for r in RULES}
            try:
                es = prof.timed("emit", k, emit_proc, proc, defines, install.dialect)
            except Unexpressible:
                verdicts.append("unexpressible")
                continue
            pid = driver.proc.pid if driver.proc is not None else 0
            before = cpu_of(pid) if pid else 0.0
            w, c = time.perf_counter(), time.process_time()
            ans = driver.check(es.text, es.proc, es.sizes)
            wall, cpu = time.perf_counter() - w, time.process_time() - c
            now = driver.proc.pid if driver.proc is not None else 0
            raw = ans.raw or {}
            for stage, s in (raw.get("seconds") or {}).items():
                exo_wall[stage] += s
            if now and now != pid:  # recycled: the new worker's start and this check
                restarts += 1
                prof.add("exo_restart_and_check", k, wall, cpu_of(now))
            else:  # (a worker that died: its CPU is gone with it)
                prof.add("exo_check", k, wall, cpu_of(pid) - before if now else 0.0)
            prof.add("ipc_driver_side", k, 0.0, cpu)
            if not compare(ans.verdict, gv).agree and ans.verdict.kind == "hazard":
                pid = driver.proc.pid if driver.proc is not None else 0
                before = cpu_of(pid) if pid else 0.0
                w = time.perf_counter()
                driver.explain(es.text, es.proc, es.sizes)
                alive = driver.proc is not None and driver.proc.pid == pid
                prof.add("exo_explain", k, time.perf_counter() - w,
                         cpu_of(pid) - before if alive else 0.0)
            verdicts.append(f"exo={ans.verdict.kind}|paper={gv['paper'].kind}|"
                            f"fixed={gv['fixed'].kind}")
    finally:
        driver.close()
    with ExoDriver() as d:  # again, any JIT build now cached: what a new worker pays
        again = start_worker(d)
    n = len(programs)
    cpu = sum(prof.cpu.values())
    out = {
        "branch": install.branch, "dialect": install.dialect, "programs": n,
        "seed": a.seed, "rounds": a.rounds,
        "worker_start": {"first_wall_s": round(first[0], 3),
                         "first_cpu_s": round(first[1], 3),
                         "again_wall_s": round(again[0], 3),
                         "again_cpu_s": round(again[1], 3),
                         "restarts": restarts},
        "cpu_per_program_s": round(cpu / n, 4),
        "wall_per_program_s": round(sum(prof.wall.values()) / n, 4),
        "stages": prof.table(n),
        "exo_check_split_wall_s": {s: round(v / n, 4) for s, v in exo_wall.items()},
        "slowest_cpu_wall_program": {s: sorted(v, reverse=True)[:5]
                                     for s, v in prof.slow.items()},
        "verdicts": verdicts,
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"{install.branch}: {n} programs, {out['cpu_per_program_s']} CPU s a program"
          f" ({out['wall_per_program_s']} wall); worker start {out['worker_start']}; "
          + ", ".join(f"{s} {v['cpu_per_program_s']}"
                      for s, v in out["stages"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
