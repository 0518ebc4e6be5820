"""Issue 31.2: where a Dask campaign's start and end go, phase by phase, for each
worker count (`--jobs`, repeatable), on source trees in turns (`--tree`).

Each run is a process of its own (`--one`), a campaign as `scripts/throughput.py`
runs it (`run_campaign` on the dask engine, the cpu backend by default), with the
engine watched from outside (its methods wrapped, nothing of it changed). The times,
seconds from the run's process start (this parent's clock when it launched it):

  imported        the client's gpusem modules imported
  cluster_up      `DaskEngine.connect` back: scheduler and every worker registered
  worker_up       each worker's registration on the scheduler (its add-worker event)
  preflight_done  the campaign's preflight answered on every worker
  first_sent      the first piece submitted
  first_begun     each worker's first piece begun there (its STARTED event)
  first_back      each worker's first piece's result in the client
  first_result    the first piece's result (the time to the first checked programs)
  steady          every fuzzing worker has handed back a piece
  last_result     the last piece's result
  report          `run_campaign` back (the engine closed)
  exit            the process gone (this parent's clock)

and `programs`, the run's `seconds` and its overall rate. A run's worker processes'
imports are counted too (`worker_modules`: modules loaded, z3/numpy/rich among them,
when the client asks at the end). The budget runs from the engine's `started_at`
(as `gpusem fuzz` sets it), so the start is inside the budget, as in a real campaign.

  python scripts/dask_timeline.py --jobs 2 --jobs 4 --seconds 20 --turns 2 \\
      --tree . --json results/scale/dask_start_cpu_dev_2026-11-29/after.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

from tree_runs import tree_env

PHASES = ("imported", "cluster_up", "preflight_done", "first_sent", "first_result",
          "steady", "last_result", "report", "exit")


def one(backend: str, jobs: int, seconds: float, seed: int, round_size: int,
        t_launch: float) -> dict:
    """One campaign in this process; times as time.time() (the parent subtracts)."""
    marks: dict[str, float] = {}
    backs: list[tuple[float, str, int]] = []  # (time, worker host:pid, programs)
    from gpusem.fuzz.client import run_campaign
    from gpusem.fuzz.engines import dask as dk
    from gpusem.fuzz.engines.registry import load_engine

    marks["imported"] = time.time()
    engine, shards = load_engine("dask", backend, jobs, None, None)
    engine.started_at = t_launch  # the budget from the process start, as the CLI
    seen: dict = {}
    connect, preflight, close, record = (dk.DaskEngine.connect, dk.DaskEngine._preflight,
                                         dk.DaskEngine.close, dk.record)

    def connect_w(self):
        first = self.client is None
        client = connect(self)
        if first:
            marks["cluster_up"] = time.time()
            submit = client.submit

            def submit_w(*a, **k):
                marks.setdefault("first_sent", time.time())
                return submit(*a, **k)

            client.submit = submit_w
        return client

    def preflight_w(self, client, tasks):
        preflight(self, client, tasks)
        marks["preflight_done"] = time.time()

    def record_w(out_dir, result, written):
        backs.append((time.time(), result.worker, result.summary.programs))
        return record(out_dir, result, written)

    def close_w(self):
        if self.client is not None and "events" not in seen:
            seen["events"] = _events(self.client)
            seen["modules"] = _modules(self.client)
        close(self)

    dk.DaskEngine.connect, dk.DaskEngine._preflight = connect_w, preflight_w
    dk.DaskEngine.close, dk.record = close_w, record_w
    with tempfile.TemporaryDirectory(prefix="gpusem-timeline-") as out:
        base = {"target_name": "bundl", "backend": backend, "prop": "compile",
                "budget_s": seconds, "seed": seed, "shard": (0, 1), "out_dir": out,
                "round_size": round_size, "max_programs": None}
        summary = run_campaign(base, engine, shards)
    marks["report"] = time.time()
    events = seen.get("events", {})
    worker_up = sorted(t for t, m in events.get("all", [])
                       if m.get("action") == "add-worker")
    begun: dict[str, float] = {}
    for t, m in events.get(dk.STARTED, []):
        begun.setdefault(str(m.get("worker")), float(m.get("at", t)))
    first_back: dict[str, float] = {}
    for t, w, _ in backs:
        first_back.setdefault(w, t)
    if backs:
        marks["first_result"] = backs[0][0]
        marks["last_result"] = backs[-1][0]
    fuzzing = max(1, (engine.workers_started or jobs + 1) - 1)  # all but the shrink
    if len(first_back) >= fuzzing:  # worker (cuda: --jobs a GPU, on every GPU)
        marks["steady"] = sorted(first_back.values())[fuzzing - 1]
    return {"marks": marks, "worker_up": worker_up,
            "first_begun": sorted(begun.values()),
            "first_back": sorted(first_back.values()),
            "programs": summary.programs, "seconds": round(summary.seconds, 2),
            "findings": len(summary.findings), "failed": summary.failed,
            "workers": engine.workers_started, "worker_modules": seen.get("modules")}


def _events(client) -> dict:
    try:
        got = client.get_events()
    except Exception:  # noqa: BLE001 - a lost scheduler: no events
        return {}
    return {k: [(t, m) for t, m in v if isinstance(m, dict)] for k, v in got.items()}


def _loaded() -> dict:
    heavy = ("z3", "numpy", "rich", "hypothesis", "lark", "cupy", "gpusem.fuzz.campaign")
    return {"modules": len(sys.modules),
            "heavy": sorted(m for m in heavy if m in sys.modules)}


def _modules(client) -> list:
    try:
        return sorted(client.run(_loaded).values(), key=lambda d: d["modules"])
    except Exception:  # noqa: BLE001 - measured where it can be
        return []


def run(tree: str, backend: str, jobs: int, seconds: float, seed: int,
        round_size: int) -> dict:
    env = tree_env(tree)
    t0 = time.time()
    cmd = [sys.executable, os.path.abspath(__file__), "--one", "--backend", backend,
           "--jobs", str(jobs), "--seconds", str(seconds), "--seed", str(seed),
           "--round-size", str(round_size), "--launch", repr(t0)]
    load = os.getloadavg()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False,
                          cwd=os.path.dirname(os.path.abspath(__file__)))
    t_exit = time.time()
    if done.returncode != 0:
        raise SystemExit(f"run failed ({done.returncode}): {done.stderr[-2000:]}")
    got = json.loads(done.stdout.splitlines()[-1])
    rel = {k: round(v - t0, 2) for k, v in got["marks"].items()}
    rel["exit"] = round(t_exit - t0, 2)
    lists = {k: [round(v - t0, 2) for v in got[k]]
             for k in ("worker_up", "first_begun", "first_back")}
    wall = t_exit - t0
    return {"tree": tree, "jobs": jobs, "marks": {k: rel.get(k) for k in PHASES},
            **lists, "programs": got["programs"], "report_seconds": got["seconds"],
            "wall_s": round(wall, 2),
            "overall_per_min": round(60 * got["programs"] / wall, 1),
            "findings": got["findings"], "failed": got["failed"],
            "workers": got["workers"], "worker_modules": got["worker_modules"],
            "loadavg_before": [round(x, 2) for x in load]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", default=[])
    ap.add_argument("--jobs", type=int, action="append", default=[])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--turns", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--launch", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.backend, args.jobs[0], args.seconds, args.seed,
                             args.round_size, args.launch or time.time())))
        return 0
    trees, jobs = args.tree or ["."], args.jobs or [2]
    runs = []
    for _ in range(args.turns):
        for j in jobs:
            for tree in trees:
                r = run(tree, args.backend, j, args.seconds, args.seed,
                        args.round_size)
                m = r["marks"]
                print(f"{tree} jobs {j}: " + " ".join(
                    f"{k} {m[k]}" for k in PHASES) + f" | {r['programs']} programs, "
                    f"{r['overall_per_min']}/min", flush=True)
                runs.append(r)
    summary = []
    for j in jobs:
        for tree in trees:
            rs = [r for r in runs if r["jobs"] == j and r["tree"] == tree]
            med = {k: _median([r["marks"][k] for r in rs]) for k in PHASES}
            summary.append({"tree": tree, "jobs": j, "runs": len(rs),
                            "median_marks": med,
                            "median_overall_per_min": _median(
                                [r["overall_per_min"] for r in rs])})
    out = {"backend": args.backend, "seconds": args.seconds, "seed": args.seed,
           "turns": args.turns, "cores": os.cpu_count(), "summary": summary,
           "runs": runs, "command": shlex.join(["python", *sys.argv])}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    for s in summary:
        print(json.dumps(s))
    return 0


def _median(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 2) if xs else None


if __name__ == "__main__":
    sys.exit(main())
