"""Run verdict censuses of one or more Exo-GPU branches at once, into census folders
(census_folder.py), on `jobs` processes that share the machine (issue 26 item 3).

Every (branch, round) not yet in its folder is one task; the tasks are queued round
by round, the branches interleaved, and each job takes the next one when it is free:
a branch whose checker is cheaper finishes its rounds sooner and the cores go to the
other, so both censuses grow at the pace the CPUs allow, with no split of the cores
fixed in advance. A job keeps one Exo driver per branch for its whole life (Exo's
import and the checker's warm-up once per job and branch, not per round; the driver
still replaces its worker every `recycle_after` checks). No round starts after
`seconds`; each finished round is written to its folder at once, so a run stopped
from outside (a device call's limit) loses only its rounds in flight, and the next
run of the same folders resumes where it stopped.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import sys
import time
import traceback
from pathlib import Path

from gpusem.fuzz.exo.census_folder import CensusFolder, gpusem_fingerprint
from gpusem.fuzz.exo.census_tally import ROUND


def _job(tasks, results, seed: int, per_round: int, deadline: float) -> None:
    """One job: (label, python, round) tasks until a None; one result per task."""
    from gpusem.calculus.errors import GpusemError
    from gpusem.compiler.gpuir_exo.driver import ExoDriver
    from gpusem.fuzz.exo.census_tally import census_round

    os.nice(5)
    drivers: dict[str, ExoDriver] = {}
    failed: dict[str, str] = {}
    try:
        while (task := tasks.get()) is not None:
            label, python, r = task
            if label in failed or time.time() >= deadline:
                results.put((label, r, None, failed.get(label, "")))
                continue
            try:
                if label not in drivers:
                    drivers[label] = ExoDriver(python)
                results.put((label, r, census_round(drivers[label], seed, r, per_round),
                             ""))
            except GpusemError as err:  # no Exo here: this branch stops
                failed[label] = err.one_line()
                results.put((label, r, None, failed[label]))
            except Exception:  # noqa: BLE001 - reported, the round stays undone
                results.put((label, r, None, traceback.format_exc(limit=6)))
    finally:
        for d in drivers.values():
            d.close()


def run_census(branches: dict[str, str | None], folders: dict[str, Path], seed: int,
               rounds: list[int], jobs: int, seconds: float = 1e9,
               per_round: int = ROUND, log=sys.stderr) -> dict[str, dict]:
    """Check the `rounds` each branch's folder lacks (`branches`: label -> Exo
    Python, None for GPUSEM_EXO_PYTHON) on `jobs` processes; each folder's census
    (also in its census.json). Errors of a branch (no Exo, a worker that cannot
    start) are printed and leave its rounds undone."""
    t0 = time.time()
    deadline = t0 + seconds
    census = {b: CensusFolder(folders[b], seed, per_round) for b in branches}
    done = {b: census[b].done() for b in branches}
    tasks_list = [(b, branches[b], r) for r in rounds for b in branches
                  if r not in done[b]]
    added: dict[str, list[int]] = {b: [] for b in branches}
    errors: dict[str, str] = {}
    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    n = max(1, min(jobs, len(tasks_list)))
    procs = [ctx.Process(target=_job, args=(tasks, results, seed, per_round, deadline),
                         daemon=True) for _ in range(n if tasks_list else 0)]
    for t in tasks_list:
        tasks.put(t)
    for _ in procs:
        tasks.put(None)
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        for p in procs:
            p.start()
        for _ in tasks_list:
            label, r, tally, err = _next(results, procs)
            if tally is not None:
                census[label].add_round(r, tally)
                added[label].append(r)
                print(f"census {label}: round {r} ({tally['programs']} programs; "
                      f"{len(added[label])} rounds this run) at "
                      f"{time.time() - t0:.0f} s", file=log, flush=True)
            elif err and label not in errors:
                errors[label] = err
                print(f"census {label}: round {r} not checked: {err}", file=log,
                      flush=True)
        stopped = ""
    except KeyboardInterrupt:  # SIGTERM (a time limit) or ^C: keep what is done
        stopped = "stopped from outside"
    except RuntimeError as err:
        stopped = str(err)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if stopped:
        print(f"census: {stopped}; the finished rounds are kept", file=log, flush=True)
    for p in procs:
        p.join(timeout=0.5 if stopped else 30)
        if p.is_alive():
            p.terminate()
    out = {}
    for b in branches:
        census[b].add_run({"rounds_added": len(added[b]),
                           "seconds": round(time.time() - t0, 1), "jobs": n,
                           "branches": sorted(branches), "host": os.uname().nodename,
                           "cpus": os.cpu_count(), "stopped": stopped,
                           "gpusem_sources": gpusem_fingerprint(),
                           "error": errors.get(b, "")[:400]})
        out[b] = census[b].census()
    return out


def _stop(signum, frame) -> None:
    raise KeyboardInterrupt


def _next(results, procs) -> tuple:
    """The next result; an error if every job has died without answering."""
    while True:
        try:
            return results.get(timeout=5)
        except queue.Empty:
            if not any(p.is_alive() for p in procs):
                raise RuntimeError("every census job died") from None
