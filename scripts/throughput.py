"""Programs checked per minute, end to end, for a fuzz property (issues 5 and 19).

Runs one campaign of `--seconds` exactly as `gpusem fuzz` does (the same client and
engine: `--engine local` with `--jobs` processes, or `--engine dask` with `--jobs`
workers per GPU, `--gpus` GPUs, or `--jobs` workers in all for the cpu backend) and
writes one JSON object:

  {programs_per_min, windows: {seconds, per_min: [...], min, median, max},
   overall_per_min, programs, seconds, gpus, engine, jobs, workers, backend, property,
   target, seed, round_size, invalid, findings, failed, cpu_utilisation, cores,
   steady_cpu_states, cpu_topology, loadavg, reference, device, command}

`programs_per_min` is the median over the windows of `--window` seconds that follow
`--warmup` seconds of start-up (processes, CUDA contexts, the first builds), each
read off the campaign's running count; `overall_per_min` divides all programs by the
whole wall time (start-up, the last pieces and the merge included): what a person
waiting sees. `cpu_utilisation` is the busy share of all the host's cores over the
run (/proc/stat): whether the cores or the GPUs are the limit. `cpu_ms_per_program`
is the CPU time of this process and all it started, per program: what other load on
a shared machine barely moves; it counts the start-up too (32 interpreters and CUDA
contexts on a 16-job cuda run). `steady_cpu_ms_per_program` is the host's busy core time
over the steady windows (the first window's start to the last one's end, /proc/stat read
at every progress tick) per program checked in them: the campaign's cost a program once
it runs (issue 31.3), on a host with nothing else running. `steady_cpu_states` splits
the host's core time over the same span by /proc/stat state (user, system, idle,
steal, ...): idle cores beside waiting processes, or a hypervisor's steal, look alike
in `cpu_utilisation`. `loadavg` is taken at the start.

  python scripts/throughput.py --backend cpu --jobs 2 --seconds 120 --json out.json
  python scripts/throughput.py --engine dask --backend cuda --gpus 2 --jobs 16 ...
  python scripts/throughput.py --tree /tmp/campover_base --tree . --turns 2 ...
    (issue 31.3: each tree's src/ in a process of its own, the trees in turns, the
    same arguments otherwise; one JSON with each tree's runs, its median
    programs_per_min and its steady_cpu_ms_per_program over all its steady windows)
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from tree_runs import tree_commit, tree_env


def measure(target: str, prop: str, backend: str, jobs: int, seconds: float,
            seed: int, round_size: int, engine_name: str = "local",
            gpus: str | None = None, window: float = 30.0, warmup: float = 20.0,
            scheduler: str | None = None, keep_bundles: str | None = None,
            generation: str | None = None) -> dict:
    from gpusem.fuzz.client import run_campaign
    from gpusem.fuzz.engines.registry import load_engine

    load, busy0, cpu0 = os.getloadavg(), _host_busy(), _cpu_seconds()
    samples: list[tuple[float, int]] = []
    busy_at: list[tuple[float, float]] = []  # (time, the host's busy core seconds)
    stat_at: list[tuple[float, list[float]]] = []  # (time, /proc/stat's cpu line)
    own_at: list[tuple[float, float]] = []  # (time, this process's own CPU seconds)
    procs_at: list[tuple[float, dict[int, tuple[str, float]]]] = []  # process table
    with tempfile.TemporaryDirectory(prefix="gpusem-throughput-") as out:
        base = {"target_name": target, "backend": backend, "prop": prop,
                "budget_s": seconds, "seed": seed, "shard": (0, 1), "out_dir": out,
                "round_size": round_size, "max_programs": None}
        if generation is not None:  # else the campaigns' default (and a tree from
            base["generation"] = generation  # before the modes takes no such key)
        engine, shards = load_engine(engine_name, backend, jobs, scheduler, gpus)
        workers = _workers(engine, engine_name, jobs, shards)
        t0 = time.monotonic()

        def tick(s) -> None:
            now = time.monotonic() - t0
            samples.append((now, s.programs))
            if (b := _host_busy()) is not None:
                busy_at.append((now, b[0] / CLOCK_TICKS))
            if (fields := _host_stat()) is not None:
                stat_at.append((now, fields))
            own = os.times()
            own_at.append((now, own.user + own.system))
            procs_at.append((now, process_table()))

        summary = run_campaign(base, engine, shards, on_tick=tick)
        wall = time.monotonic() - t0
        if summary.findings and keep_bundles:  # a finding of a timed run is kept
            shutil.copytree(out, keep_bundles, dirs_exist_ok=True)
    busy, cpu = _host_busy(), _cpu_seconds() - cpu0
    rates = window_rates(samples, warmup, window)
    utilisation = None
    if busy0 is not None and busy is not None and busy[1] > busy0[1]:
        utilisation = round((busy[0] - busy0[0]) / (busy[1] - busy0[1]), 3)
    return {"programs_per_min": round(statistics.median(rates), 1) if rates else None,
            "windows": {"seconds": window, "warmup_s": warmup,
                        "per_min": [round(r, 1) for r in rates],
                        "min": round(min(rates), 1) if rates else None,
                        "median": round(statistics.median(rates), 1) if rates else None,
                        "max": round(max(rates), 1) if rates else None},
            "overall_per_min": round(60 * summary.programs / wall, 1),
            "programs": summary.programs, "seconds": round(wall, 2),
            "gpus": _gpu_count(engine, backend), "engine": engine_name, "jobs": jobs,
            "workers": workers, "backend": backend, "property": prop,
            "target": target, "seed": seed, "round_size": round_size,
            "generation": generation or _default_generation(),
            "invalid": summary.invalid, "findings": len(summary.findings),
            # whose bug each one is, as the campaign attributed it (a timed run keeps
            # no bundle unless --keep-bundles): a count alone explains nothing
            "finding_classes": [{"signature": f.signature[:160], "kind": f.kind,
                                 "attribution": f.attribution, "cause": f.cause,
                                 "size": f.size, "duplicates": f.duplicates}
                                for f in summary.findings],
            "failed": summary.failed, "cpu_utilisation": utilisation,
            "cpu_ms_per_program": round(1000 * cpu / max(1, summary.programs), 1),
            "steady_cpu_ms_per_program": steady_cpu_ms(samples, busy_at, warmup,
                                                       window, len(rates)),
            "steady_cpu_states": steady_states(stat_at, warmup, window, len(rates)),
            # the client's (this process's) own CPU seconds a second over the steady
            # windows: near 1.0, the one process every result passes through is the limit
            "steady_client_busy": steady_rate(own_at, warmup, window, len(rates)),
            "steady_process_cpu": steady_process_cpu(procs_at, warmup, window,
                                                     len(rates)),
            "cores": os.cpu_count(), "cpu_topology": cpu_topology(),
            "loadavg": [round(x, 2) for x in load],
            "reference": os.environ.get("GPUSEM_REFERENCE", "fast"),
            "cuda_sync": (os.environ.get("GPUSEM_CUDA_SYNC", "blocking")
                          if backend == "cuda" else None),
            "device": os.environ.get("GPUSEM_DEVICE", ""),
            "command": shlex.join([os.path.basename(sys.executable), *sys.argv])}


def _default_generation() -> str:
    try:
        from gpusem.fuzz.direct import DEFAULT_GENERATION
    except ImportError:  # a tree from before the modes: hypothesis's engine
        return "engine"
    return DEFAULT_GENERATION


def window_rates(samples: list[tuple[float, int]], warmup: float,
                 window: float) -> list[float]:
    """Programs per minute in each whole window [warmup + k·w, warmup + (k+1)·w)
    inside the sampled span, the running count interpolated at the window edges."""
    if len(samples) < 2:
        return []
    last = max(t for t, _ in samples)
    rates, start = [], warmup
    while start + window <= last:
        rates.append(60.0 * (_at(samples, start + window) - _at(samples, start)) / window)
        start += window
    return rates


def steady_cpu_ms(samples: list[tuple[float, int]], busy_at: list[tuple[float, float]],
                  warmup: float, window: float, windows: int) -> float | None:
    """The host's busy CPU milliseconds per program over the steady windows
    [warmup, warmup + windows * window], both read off the ticks nearest the edges
    (the busy time interpolated as the counts are in `window_rates`)."""
    if windows == 0 or len(busy_at) < 2:
        return None
    end = warmup + windows * window
    programs = _at(samples, end) - _at(samples, warmup)
    busy_s = _at(busy_at, end) - _at(busy_at, warmup)
    return round(1000 * busy_s / programs, 2) if programs > 0 else None


def steady_rate(points: list[tuple[float, float]], warmup: float, window: float,
                windows: int) -> float | None:
    """A sampled quantity's growth a second over the steady windows."""
    if windows == 0 or len(points) < 2:
        return None
    end = warmup + windows * window
    return round((_at(points, end) - _at(points, warmup)) / (end - warmup), 3)


def _steady_span(points: list, warmup: float, window: float, windows: int):
    """The first and last samples (time, value) inside the steady windows' edges, or
    None where there are not two."""
    end = warmup + windows * window
    inside = [p for p in points if warmup <= p[0] <= end] if windows else []
    return (inside[0], inside[-1]) if len(inside) >= 2 else None


CPU_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def steady_states(stat_at: list[tuple[float, list[float]]], warmup: float,
                  window: float, windows: int) -> dict[str, float] | None:
    """The share of the host's core time in each /proc/stat state over the steady
    windows (the ticks nearest inside their edges). `steal` is time the hypervisor
    gave this VM's vCPUs to someone else, which `cpu_utilisation` counts as busy:
    with `idle`, it tells a host that ran out of cores from one whose processes
    waited (issue 31.2: the 2-GPU run's 74% busy)."""
    span = _steady_span(stat_at, warmup, window, windows)
    if span is None:
        return None
    (_, first), (_, last) = span
    deltas = [b - a for a, b in zip(first[:len(CPU_STATES)], last[:len(CPU_STATES)])]
    total = sum(deltas)
    if total <= 0:
        return None
    return {name: round(d / total, 4) for name, d in zip(CPU_STATES, deltas)}


def process_table(root: int | None = None) -> dict[int, tuple[str, float]]:
    """Every process under `root` (default: this one), itself included: pid -> (its
    role, its own CPU seconds so far). The role is its depth under `root` and what
    started it (`_role`), so the workers of one kind add up however many there are."""
    root = os.getpid() if root is None else root
    parent: dict[int, int] = {}
    stat: dict[int, tuple[str, float]] = {}
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        parent[int(name)] = int(fields[1])
        cpu = (float(fields[11]) + float(fields[12])) / CLOCK_TICKS  # utime + stime
        stat[int(name)] = (_role(comm, cmd), cpu)
    table = {}
    for pid, (role, cpu) in stat.items():
        depth, p = 0, pid
        while p != root and p in parent and depth < 8:
            p, depth = parent[p], depth + 1
        if p == root:
            table[pid] = (f"{depth}:{role}", cpu)
    return table


def _role(comm: str, cmd: str) -> str:
    """A short name for what a process is, from its command line."""
    for key, role in (("forkserver", "forkserver"), ("spawn_main", "spawned"),
                      ("resource_tracker", "resource_tracker"), ("cicc", "cicc"),
                      ("ptxas", "ptxas"), ("g++", "g++"), ("cc1plus", "cc1plus"),
                      ("throughput.py", "client")):
        if key in cmd or key == comm:
            return role
    return comm


def steady_process_cpu(procs_at: list[tuple[float, dict[int, tuple[str, float]]]],
                       warmup: float, window: float, windows: int) -> dict | None:
    """The CPU cores each role of process used over the steady windows (the tables
    nearest inside their edges; a process begun inside counts from its start, one
    ended inside is missed: `ended`), and how many of each were running at the end."""
    span = _steady_span(procs_at, warmup, window, windows)
    if span is None:
        return None
    (t0, first), (t1, last) = span
    if t1 <= t0:
        return None
    cores: dict[str, float] = {}
    count: dict[str, int] = {}
    for pid, (role, cpu) in last.items():
        before = first.get(pid)
        used = cpu - before[1] if before and before[0] == role else cpu
        cores[role] = cores.get(role, 0.0) + used / (t1 - t0)
        count[role] = count.get(role, 0) + 1
    ended = sum(1 for pid in first if pid not in last)
    return {"seconds": round(t1 - t0, 2), "ended": ended,
            "roles": {r: {"cores": round(c, 3), "processes": count[r]}
                      for r, c in sorted(cores.items(), key=lambda kv: -kv[1])}}


def cpu_topology() -> dict:
    """What the VM says of its cores: hardware threads per core (cpu0's siblings),
    NUMA nodes, the model: whether two busy processes can share one physical core
    is visible only as far as this goes."""
    topo: dict = {}
    try:
        with open("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list") as f:
            topo["cpu0_thread_siblings"] = f.read().strip()
    except OSError:
        pass
    try:
        topo["numa_nodes"] = len([d for d in os.listdir("/sys/devices/system/node")
                                  if d.startswith("node") and d[4:].isdigit()])
    except OSError:
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    topo["model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return topo


def _at(points, t: float) -> float:
    """A sampled, non-decreasing quantity at time t, interpolated linearly."""
    points = sorted(points)
    times = [p for p, _ in points]
    i = bisect.bisect_left(times, t)
    if i <= 0:
        return points[0][1]
    if i >= len(points):
        return points[-1][1]
    (ta, va), (tb, vb) = points[i - 1], points[i]
    return va + (vb - va) * (t - ta) / (tb - ta) if tb > ta else vb


def _workers(engine, name: str, jobs: int, shards: int) -> int:
    if name == "local":
        return shards
    return int(getattr(engine, "workers_started", 0) or jobs)


def _gpu_count(engine, backend: str) -> int:
    if backend != "cuda":
        return 0
    gpus = getattr(engine, "gpus", None)
    if gpus is not None:  # dask: the GPUs its workers were pinned to
        from gpusem.fuzz.engines.dask_cluster import gpu_ids

        return len(gpu_ids(gpus))
    return 1  # the local engine's processes share the one GPU CUDA gives them


def _cpu_seconds() -> float:
    """CPU time of this process and of every process it reaped (jobs, workers, g++,
    harness and CUDA workers): all of them, once the engine has closed."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _host_stat() -> list[float] | None:
    """The jiffies of /proc/stat's first (all cores) line, in CPU_STATES' order."""
    try:
        with open("/proc/stat") as f:
            return [float(x) for x in f.readline().split()[1:1 + len(CPU_STATES)]]
    except (OSError, ValueError):
        return None


def _host_busy() -> tuple[float, float] | None:
    """(busy jiffies, all jiffies) of the whole host, from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [float(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    total = sum(fields[:8])
    return total - idle, total


def compare_trees(trees: list[str], turns: int, argv: list[str]) -> dict:
    """This script with `argv` on each tree in a fresh process, the trees in turns
    (`turns` runs each): a shared or warming machine's drift falls on both alike."""
    runs: dict[str, list[dict]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory(prefix="gpusem-throughput-trees-") as tmp:
        for turn in range(turns):
            for n, tree in enumerate(trees):
                out = os.path.join(tmp, f"{turn}-{n}.json")
                done = subprocess.run([sys.executable, os.path.abspath(__file__),
                                       *argv, "--json", out], env=tree_env(tree),
                                      check=False, stdout=subprocess.DEVNULL)
                try:
                    with open(out) as f:
                        runs[tree].append(json.load(f))
                except (OSError, ValueError):  # a run that died: the others stand
                    runs[tree].append({"error": f"exit status {done.returncode}",
                                       "programs_per_min": None, "findings": None,
                                       "steady_cpu_ms_per_program": None,
                                       "failed": ["no result"]})
    summary = []
    for tree, rs in runs.items():
        rates = [r["programs_per_min"] for r in rs if r["programs_per_min"]]
        steady = [r["steady_cpu_ms_per_program"] for r in rs
                  if r["steady_cpu_ms_per_program"]]
        summary.append({
            "tree": tree, "commit": tree_commit(tree),
            "programs_per_min": round(statistics.median(rates), 1) if rates else None,
            "steady_cpu_ms_per_program":
                round(statistics.mean(steady), 2) if steady else None,
            "findings": [r["findings"] for r in rs], "failed": [r["failed"] for r in rs],
            "runs": rs})
    return {"trees": summary, "turns": turns,
            "command": shlex.join([os.path.basename(sys.executable), *sys.argv])}


def _tree_args(argv: list[str]) -> tuple[list[str], int, list[str], str | None]:
    """(--tree values, --turns, the other arguments, --json) of a comparison."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--tree", action="append", default=[])
    ap.add_argument("--turns", type=int, default=1)
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep-bundles", default=None)
    known, rest = ap.parse_known_args(argv)
    return known.tree, known.turns, rest, known.json


def main(argv: list[str] | None = None) -> int:
    trees, turns, rest, out = _tree_args(sys.argv[1:] if argv is None else argv)
    if trees:  # before/after in one command (issue 31.3)
        result = compare_trees(trees, turns, rest)
        for t in result["trees"]:
            print(f"{t['tree']}: {t['programs_per_min']} programs/min, "
                  f"{t['steady_cpu_ms_per_program']} steady CPU ms a program")
        if out:
            with open(out, "w") as f:
                f.write(json.dumps(result, indent=1) + "\n")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="bundl")
    ap.add_argument("--property", dest="prop", default="compile")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--engine", default="local")
    ap.add_argument("--scheduler", default=None)
    ap.add_argument("--gpus", default=None, help="dask + cuda: all, a count, or ids")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--window", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--round-size", type=int, default=100)  # as gpusem fuzz
    ap.add_argument("--generation", default=None, choices=("engine", "direct"),
                    help="how rounds are drawn (default: the campaigns' default)")
    ap.add_argument("--json", help="write the result here (also printed)")
    ap.add_argument("--tree", action="append", default=[], help="a source tree to "
                    "run on (its src/), repeatable: the trees in turns")
    ap.add_argument("--turns", type=int, default=1, help="with --tree: runs per tree")
    ap.add_argument("--keep-bundles", default=None, help="copy the campaign folder "
                    "(its bundles) here when the run found anything; default: beside "
                    "--json, as NAME_bundles/")
    args = ap.parse_args(argv)
    keep = args.keep_bundles or (args.json and args.json.removesuffix(".json") + "_bundles")
    result = measure(args.target, args.prop, args.backend, args.jobs, args.seconds,
                     args.seed, args.round_size, args.engine, args.gpus, args.window,
                     args.warmup, args.scheduler, keep or None, args.generation)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
