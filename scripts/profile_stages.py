"""Where the time goes per program of the `compile` property (issue 19).

Runs the stages of a campaign's rounds by hand (the rounds a campaign with the same
seed checks, drawn as its prefetch draws them) and times each stage separately (wall
seconds; the backend's worker and compiler processes are waited for, so their time is
inside `build` and `launch`):

  generate        hypothesis draws the round (generate-only, as the campaign's prefetch)
  typecheck       Γ ⊢ p: not a campaign stage (the generators make well-typed programs)
                  and not in the totals; measured to show what checking would cost
  reference       the interpreter's outcome, the campaign's fast path
                  (`interpreter/bundl/reference.py`: big-step + the z3 proof where needed)
  full reference  the reference pipeline's, split (`before` total, not the campaign's):
    rr              the small-step run under round-robin
    race            the z3 race analysis (general programs; kernel-shaped ones are
                    race-free by construction)
    schedules       the other three schedules (greedy, greedy-reverse, random:1)
  compile         Bundl -> CUDA (the pipeline's passes and the emitter)
  jobs            the launch jobs: initial globals, one job per harness seed
  build           the backend's build of the round (g++ on cpu, NVRTC on cuda)
  launch          the backend's launches (harness fibres on cpu; on cuda the worker
                  round trips, the shared-memory scribble, the kernel, the copies),
    kernel          of which the kernels themselves (the backend's own timing)
  compare         outputs against the interpreter's memory

  python scripts/profile_stages.py --backend cpu --rounds 3 --json out.json
  python scripts/profile_stages.py --tree /path/to/main --tree . --rounds 3 --json out.json
    (issue 31.3: each tree's src/ in a process of its own, run in turns, round by
    round interleaved so that a shared machine's load falls on both alike; one table
    of CPU ms per program per stage, before/after in one command; a tree that is not
    a git checkout names its commit in a file COMMIT at its top)
  python scripts/profile_stages.py --backend nvrtc --tree /tmp/old --tree /tmp/new
  python scripts/profile_stages.py --generation engine --generation direct --rounds 3
  python scripts/profile_stages.py --campaign --tree /tmp/campover_base --tree . --rounds 3
    (issue 31.3: the stages as a Campaign runs them, in one process, and what it does
    beyond them: the confirmations' and the audit's full references and the
    campaign's own machinery; `scripts/campaign_stages.py`; cpu or cuda)
    (the generation modes of `fuzz/hunt.generate_round`, issue 31.3: each mode a
    variant, profiled in turns as two trees are; with --tree, every tree in every
    mode. One --generation: that mode alone; none: the campaigns' default)

`--backend nvrtc` is the cuda path with no GPU (regress31): the target and its jobs as
on cuda, the backend the cuda backend itself, in process, its worker's `Device` a
stand-in (`scripts/nvrtc_standin.py`) whose `build` is the tree's own and whose NVRTC
calls go to the newest libnvrtc wheel (one NVRTC for both trees); nothing is launched
(every launch answers "unsupported", so every compiled program's verdict is
kernel-failed: read the stages, not the verdicts). It adds `nvrtc`: the calls, kernels,
CPU ms per call and per kernel, a header-only call's ms (the fixed cost), the units'
bytes; and, on every backend, `kernels` (each compiled program's CUDA text: bytes,
lines) and `families` (programs by generator and by what their CUDA uses).

The stages run under the garbage collector's settings the tree's campaigns run under
(`fuzz/gc_tuning.campaign_gc`, CPython's defaults on a tree without it); a collection
is timed in the stage whose allocation set it off.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import campaign_stages
from tree_runs import tree_commit, tree_env

CAMPAIGN = ("generate", "reference", "compile", "jobs", "build", "launch", "compare")
FULL = ("rr", "race", "schedules")  # the reference pipeline's reference, split
EXTRA = ("typecheck", "kernel")  # reported, in no total (kernel is inside launch)


class Clock:
    """Wall and CPU seconds per stage. CPU: this process, the children it reaped (g++)
    and its live children (the harness worker; the CUDA worker, which runs NVRTC),
    read from /proc: what a stage costs the machine, which other load on a shared
    machine barely changes (wall time it does)."""

    def __init__(self) -> None:
        self.wall, self.cpu = Counter[str](), Counter[str]()

    @contextmanager
    def __call__(self, stage: str, live: bool = False) -> Iterator[None]:
        """`live`: the stage makes the live children work (build, launch); reading
        theirs costs a walk of /proc, which the in-process stages are spared."""
        w0, c0 = time.perf_counter(), tree_cpu(live)
        try:
            yield
        finally:
            self.wall[stage] += time.perf_counter() - w0
            self.cpu[stage] += tree_cpu(live) - c0


def children_cpu() -> dict[int, tuple[str, float]]:
    """{pid: (command:pid, CPU seconds)} of this process's live children (a worker not
    yet reaped), from /proc."""
    tick, me, out = os.sysconf("SC_CLK_TCK"), os.getpid(), {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                head, tail = f.read().rsplit(")", 1)
        except OSError:
            continue
        fields = tail.split()
        if int(fields[1]) == me:  # the parent pid; then utime, stime (fields 14, 15)
            out[int(entry)] = (f"{head.split('(', 1)[1]}:{entry}",
                               (int(fields[11]) + int(fields[12])) / tick)
    return out


def live_children_cpu() -> float:
    """CPU seconds of this process's live children, from /proc."""
    return sum(cpu for _, cpu in children_cpu().values())


def tree_cpu(live: bool = True) -> float:
    """CPU seconds of this process, its reaped children and (`live`) its live ones."""
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    return total + live_children_cpu() if live else total


def profile(backend_name: str, rounds: int, round_size: int, seed: int) -> dict:
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl import compile_property as cp
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.typing_rules.bundl.stmt import check_program as typecheck

    _, fast_reference = _reference_api()
    device = None
    if backend_name == "nvrtc":  # the cuda path, NVRTC builds, nothing launched
        device = _nvrtc_instead_of_a_gpu(cp)
        backend_name = "cuda"
    target = BundlTarget(backend=backend_name)
    backend = cp.shared_backend(backend_name)
    clock = Clock()
    kinds, verdicts = Counter[str](), Counter[str]()
    programs, kernel_s = 0, 0.0
    sizes: list[tuple[int, int]] = []  # each compiled program's CUDA: bytes, lines
    families = Counter[str]()  # what compiled programs' CUDA uses (FEATURES)
    gc_context = _campaign_gc()  # as Campaign.run has it (on trees that have one)
    gc_context.__enter__()
    _warm_up(target, backend_name, seed)
    if device is not None:
        device.calls.clear()  # the warm-up round's
    wall0, cpu0 = time.perf_counter(), tree_cpu()
    try:
        for r in range(rounds):
            with clock("generate"):
                gens = _round_programs(target, seed, r, round_size)
            jobs, owners, kernels, outcomes = [], [], {}, {}
            for n, g in enumerate(gens):
                programs += 1
                kinds["kernel-shaped" if g.race_free_by_construction else "general"] += 1
                prog, prove = g.program, not g.race_free_by_construction
                with clock("typecheck"):
                    typecheck(prog)
                _timed_full_reference(prog, prove, clock)
                with clock("reference"):
                    outcome = fast_reference(prog, prove_race_free=prove)
                if (skip := cp._not_compared(outcome)) is not None:
                    verdicts[skip.kind] += 1
                    continue
                outcomes[n] = outcome
                with clock("compile"):
                    try:
                        kernel = compile_program(prog, CompileOptions(sync_motion=True))
                    except Exception as err:  # noqa: BLE001 - as the campaign counts it
                        verdicts[cp._compile_failure(err).kind] += 1
                        continue
                kernels[n] = kernel
                sizes.append((len(kernel.source), kernel.source.count("\n")))
                families.update(f for f, rx in FEATURES if rx.search(kernel.source))
                with clock("jobs"):
                    for job in cp._jobs(prog, kernel, cp.HARNESS_SEEDS, backend_name):
                        jobs.append(job)
                        owners.append(n)
            with clock("build", live=True):
                _build(backend, [j.spec for j in jobs])
            with clock("launch", live=True):
                results = backend.run(jobs) if jobs else []
            kernel_s += sum(res.elapsed for res in results)
            with clock("compare"):
                by_program: dict[int, list] = {}
                for n, res in zip(owners, results, strict=True):
                    by_program.setdefault(n, []).append(res)
                for n, rs in by_program.items():
                    v = cp.compare(gens[n].program, outcomes[n].globals,
                                   kernels[n].source, rs, cp.HARNESS_SEEDS)
                    verdicts[v.kind] += 1
    finally:
        target.close()
        gc_context.__exit__(None, None, None)
    wall, cpu = time.perf_counter() - wall0, tree_cpu() - cpu0
    clock.wall["kernel"] = kernel_s

    def per(table: Counter) -> dict[str, float]:
        return {s: round(1000 * table[s] / max(1, programs), 3)
                for s in (*CAMPAIGN, *FULL, *EXTRA) if s in table or s in CAMPAIGN}

    walls, cpus = per(clock.wall), per(clock.cpu)
    nvrtc = _nvrtc_summary(device, cp) if device is not None else None
    now, cpu_now = (sum(x[s] for s in CAMPAIGN) for x in (walls, cpus))
    before = now - walls["reference"] + sum(walls.get(s, 0.0) for s in FULL)
    cpu_before = cpu_now - cpus["reference"] + sum(cpus.get(s, 0.0) for s in FULL)
    return {"programs": programs, "rounds": rounds, "round_size": round_size,
            "seed": seed, "backend": "nvrtc" if device else backend_name,
            "property": "compile",
            "ms_per_program": walls, "cpu_ms_per_program": cpus,
            "share": {s: round(walls[s] / now, 4) for s in CAMPAIGN},
            "cpu_share": {s: round(cpus[s] / cpu_now, 4) for s in CAMPAIGN},
            "campaign_ms_per_program": round(now, 3),
            "full_reference_ms_per_program": round(before, 3),
            "campaign_cpu_ms_per_program": round(cpu_now, 3),
            "full_reference_cpu_ms_per_program": round(cpu_before, 3),
            "one_process_programs_per_min": round(60_000 / now, 1) if now else 0.0,
            "programs_by_kind": dict(kinds), "verdicts": dict(verdicts),
            "kernels": _sizes(sizes), "families": dict(families),
            **({"nvrtc": nvrtc} if nvrtc else {}),
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "cores": os.cpu_count(),
            "loadavg": [round(x, 2) for x in os.getloadavg()],
            "device": os.environ.get("GPUSEM_DEVICE", ""),
            "note": "per program, in one process: ms_per_program is wall time, "
                    "cpu_ms_per_program the CPU of this process and its children "
                    "(g++, the harness worker, the CUDA worker that runs NVRTC). "
                    "campaign: the stages as the campaign runs them (the fast "
                    "reference); full_reference: the same with the reference "
                    "pipeline's four small-step runs + z3 (rr, race, schedules) "
                    "instead; typecheck (not a campaign stage) and kernel (the "
                    "kernels' own time, inside launch) are in no total; wall_s/cpu_s "
                    "include the full reference, which the campaign does not run",
            "command": shlex.join([os.path.basename(sys.executable), *sys.argv])}


def _campaign_gc():
    """The garbage collector's settings a campaign of this tree runs under
    (`fuzz/gc_tuning.py`, issue 31.3); CPython's defaults on a tree without it."""
    try:
        from gpusem.fuzz.gc_tuning import campaign_gc
    except ImportError:  # a tree before it: its campaign ran with the defaults
        from contextlib import nullcontext

        return nullcontext()
    return campaign_gc()


def _warm_up(target, backend_name: str, seed: int) -> None:
    """One small round of another seed, untimed: imports, hypothesis, the backend's
    worker (a CUDA context), g++'s precompiled header."""
    from gpusem.fuzz.bundl import compile_property as cp

    reference = _reference_api()[0].reference
    gens = _round_programs(target, seed + 1, 0, 10)
    cp.check_batch([g.program for g in gens], backend_name, cp.HARNESS_SEEDS, True,
                   [reference(g.program) for g in gens])


# the generation mode a single run draws its rounds in (--generation; None: the
# tree's default, and no argument, for a tree from before the modes)
GENERATION: list[str | None] = [None]


def _round_programs(target, seed: int, r: int, round_size: int) -> list:
    """The programs of round r, drawn as the campaign draws them."""
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    mode = {} if GENERATION[0] is None else {"generation": GENERATION[0]}
    drawn = generate_round(target.strategy("compile"), round_seed(seed, r), round_size,
                           **mode)
    return [as_generated(d.program) for d in drawn]


def round_launch_jobs(target, seed: int, r: int, round_size: int) -> list[list]:
    """Round r's launch jobs, a list per program the campaign compares and compiles
    (its fast reference compared, `compile_program` done; HARNESS_SEEDS jobs each, as
    `check_batch` makes them): what launch_profile.py and profile_cuda_host.py time."""
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl import compile_property as cp

    fast_reference = _reference_api()[1]
    out = []
    for g in _round_programs(target, seed, r, round_size):
        ref = fast_reference(g.program, prove_race_free=not g.race_free_by_construction)
        if cp._not_compared(ref) is not None:
            continue
        try:
            kernel = compile_program(g.program, CompileOptions(sync_motion=True))
        except Exception:  # noqa: BLE001, S112 - not compiled: not launched
            continue
        out.append(cp._jobs(g.program, kernel, cp.HARNESS_SEEDS, "cuda"))
    return out


def _reference_api():
    """(the module with reference, unproven_race_freedom and SCHEDULES, fast_reference)
    where the tree has them: interpreter/bundl/reference.py, or before it (884a54f)
    fuzz/bundl/compile_property.py and fuzz/bundl/fast_reference.py."""
    try:
        from gpusem.interpreter.bundl import reference as ref
    except ImportError:
        from gpusem.fuzz.bundl.fast_reference import fast_reference

        from gpusem.fuzz.bundl import compile_property as ref

        return ref, fast_reference
    return ref, ref.fast_reference


def _timed_full_reference(prog, prove_race_free: bool, clock: Clock) -> None:
    """reference.reference, stage by stage (the same calls in the same order)."""
    from gpusem.interpreter.bundl.schedulers import run_program

    cp, _ = _reference_api()

    with clock("rr"):
        outcome = run_program(prog, schedule="rr", max_steps=2_000_000)
    if outcome.kind != "terminated":
        return
    if prove_race_free:
        with clock("race"):
            unproven = cp.unproven_race_freedom(prog)
        if unproven is not None:
            return
    with clock("schedules"):
        for schedule in cp.SCHEDULES[1:]:
            other = run_program(prog, schedule=schedule, max_steps=2_000_000)
            if other.kind != "terminated" or other.globals != outcome.globals:
                break


# What a program's CUDA uses, for `families` (a program counts once per feature).
FEATURES = tuple((name, re.compile(rx)) for name, rx in (
    ("loop", r"\b(?:while|for) \("), ("__syncthreads", r"__syncthreads\(\)"),
    ("mbarrier", r"\bgs_mbar_"), ("named barrier", r"\bgs_bar_"),
    ("cp.async", r"\bgs_cp_async"), ("float32", r"\bgs_f(?:add|sub|mul|div|fma)\("),
    ("function", r"__device__"), ("shared staging", r"\bgs_smem_off\b"),
    ("global scratch", r"\bgs_gscratch_"), ("shuffle", r"__shfl|gs_shfl"),
    ("atomic", r"\batomic|gs_atomic"), ("64-bit", r"long long|gs_[iu]64\b"),
))


def _sizes(sizes: list[tuple[int, int]]) -> dict:
    """Compiled programs' CUDA text: count, mean and total bytes and lines."""
    n = max(1, len(sizes))
    return {"programs": len(sizes), "bytes_total": sum(b for b, _ in sizes),
            "lines_total": sum(ln for _, ln in sizes),
            "mean_bytes": round(sum(b for b, _ in sizes) / n, 1),
            "mean_lines": round(sum(ln for _, ln in sizes) / n, 1)}


def _nvrtc_instead_of_a_gpu(cp):
    """The cuda backend in process with the NVRTC stand-in device, made the process's
    shared "cuda" backend (what check_batch and this profile use); the device."""
    import nvrtc_standin

    from gpusem.compiler.backends import cpu_source, cuda_worker
    from gpusem.compiler.backends.cuda import CudaBackend

    backend = CudaBackend(in_process=True)
    backend._device = device = nvrtc_standin.standin_device(cuda_worker, cpu_source)
    shared = cp.shared_backend
    cp.shared_backend = lambda name: backend if name == "cuda" else shared(name)
    return device


def _nvrtc_summary(device, cp) -> dict:
    """The timed rounds' NVRTC calls, and a header-only call's cost (the fixed one)."""
    import nvrtc_standin

    from gpusem.compiler.backends import cpu_source

    calls = device.calls
    fixed = nvrtc_standin.header_only_ms(device, cpu_source)
    kernels = sum(c["kernels"] for c in calls)
    cpu = sum(c["cpu_ms"] for c in calls)
    wall = sum(c["wall_ms"] for c in calls)
    return {"version": nvrtc_standin.version(), "calls": len(calls),
            "kernels": kernels, "failed_calls": sum(not c["ok"] for c in calls),
            "cpu_ms": round(cpu, 1), "wall_ms": round(wall, 1),
            "cpu_ms_per_call": round(cpu / max(1, len(calls)), 2),
            "cpu_ms_per_kernel": round(cpu / max(1, kernels), 3),
            "header_only_call": fixed,
            "cpu_ms_per_kernel_beyond_fixed":
                round((cpu - fixed["cpu_ms"] * len(calls)) / max(1, kernels), 3),
            "unit_bytes_per_call": round(sum(c["unit_bytes"] for c in calls)
                                         / max(1, len(calls))),
            # calls by the options beyond NVRTC_OPTIONS (cuda_worker.BUILD_SPEEDUPS)
            "extra_options": dict(Counter(" ".join(c.get("extra", ())) or "none"
                                          for c in calls))}


def _build(backend, specs) -> None:
    """The backend's build step alone (the run that follows finds it cached)."""
    if not specs:
        return
    if hasattr(backend, "build"):
        backend.build(specs)  # cpu: g++ into one shared library
    else:
        backend._ensure_built(specs)  # cuda: NVRTC into one module, then loaded


def _run_tree(tree: str, args: argparse.Namespace, rounds: int, seed: int,
              generation: str | None = None) -> dict:
    """This script on `tree`'s code (its src/ first on the path), in a fresh process,
    drawing its rounds in `generation` mode (None: the tree's default)."""
    env = tree_env(tree)
    cmd = [sys.executable, os.path.abspath(__file__), "--backend", args.backend,
           "--rounds", str(rounds), "--round-size", str(args.round_size),
           "--seed", str(seed)]
    if generation is not None:
        cmd += ["--generation", generation]
    if args.campaign:
        cmd.append("--campaign")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def compare_trees(args: argparse.Namespace) -> dict:
    """Each tree profiled `args.turns` times (the trees in turns, each turn a fresh
    process of `args.rounds` rounds from seed + turn), summed per stage; with more
    than one --generation, each tree in each mode (a variant: "TREE MODE")."""
    modes = args.generation if len(args.generation) > 1 else [
        args.generation[0] if args.generation else None]
    variants = {(f"{t} {m}" if m else t): (t, m) for t in args.tree or ["."]
                for m in modes}
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    for turn in range(args.turns):
        for v, (tree, mode) in variants.items():
            runs[v].append(_run_tree(tree, args, args.rounds, args.seed + turn, mode))
    trees = []
    for label, rs in runs.items():
        tree, mode = variants[label]
        programs = sum(r["programs"] for r in rs)
        cpu = {s: round(sum(r["cpu_ms_per_program"].get(s, 0.0) * r["programs"]
                            for r in rs) / programs, 3)
               for s in (*CAMPAIGN, *FULL, "typecheck")}
        wall = {s: round(sum(r["ms_per_program"].get(s, 0.0) * r["programs"]
                             for r in rs) / programs, 3) for s in CAMPAIGN}
        in_process = ("generate", "reference", "compile", "jobs", "compare")
        trees.append({
            "tree": label, "commit": tree_commit(tree), "programs": programs,
            **({"generation": mode} if mode else {}),
            "programs_by_kind": _share(sum((Counter(r["programs_by_kind"]) for r in rs),
                                           Counter()), programs),
            "families": _share(sum((Counter(r.get("families", {})) for r in rs),
                                   Counter()), programs),
            "kernels": _sizes_of(rs),
            **({"nvrtc": _nvrtc_of(rs)} if rs[0].get("nvrtc") else {}),
            "cpu_ms_per_program": cpu, "ms_per_program": wall,
            "campaign_cpu_ms_per_program": round(sum(cpu[s] for s in CAMPAIGN), 3),
            "in_process_cpu_ms_per_program":
                round(sum(cpu[s] for s in in_process), 3),
            "verdicts": dict(sum((Counter(r["verdicts"]) for r in rs), Counter())),
            "runs": rs})
    return {"backend": args.backend, "rounds": args.rounds, "turns": args.turns,
            "round_size": args.round_size, "seed": args.seed, "property": "compile",
            "trees": trees, "cores": os.cpu_count(),
            "device": os.environ.get("GPUSEM_DEVICE", ""),
            "note": "CPU ms per program per stage (this process and its children, "
                    "as in one tree's run); in_process: generate + reference + "
                    "compile + jobs + compare (what a worker's Python does; build "
                    "and launch are g++ and the harness on cpu, NVRTC and the GPU "
                    "on cuda)",
            "command": shlex.join([os.path.basename(sys.executable), *sys.argv])}


def _compare_campaign_trees(args: argparse.Namespace) -> dict:
    """`--campaign` on each tree, the trees in turns (turn t: seed + t)."""
    runs: dict[str, list[dict]] = {t: [] for t in args.tree}
    for turn in range(args.turns):
        for tree in args.tree:
            runs[tree].append(_run_tree(tree, args, args.rounds, args.seed + turn))
    result = campaign_stages.compare_campaigns(
        runs, {t: tree_commit(t) for t in args.tree})
    return {**result, "backend": args.backend, "rounds": args.rounds,
            "turns": args.turns, "round_size": args.round_size, "seed": args.seed,
            "property": "compile", "cores": os.cpu_count(),
            "device": os.environ.get("GPUSEM_DEVICE", ""),
            "note": "CPU ms per program (this process, its reaped children, and the "
                    "live ones during build and launch) by stage as a Campaign runs "
                    "them (scripts/campaign_stages.py); beyond them: confirm + audit "
                    "+ campaign",
            "command": shlex.join([os.path.basename(sys.executable), *sys.argv])}


def _share(counts: Counter, programs: int) -> dict:
    """{name: [programs, share of all programs]}, most first."""
    return {k: [n, round(n / max(1, programs), 4)] for k, n in counts.most_common()}


def _sizes_of(runs: list[dict]) -> dict:
    programs = sum(r["kernels"]["programs"] for r in runs)
    total_b = sum(r["kernels"]["bytes_total"] for r in runs)
    total_l = sum(r["kernels"]["lines_total"] for r in runs)
    return {"programs": programs, "mean_bytes": round(total_b / max(1, programs), 1),
            "mean_lines": round(total_l / max(1, programs), 1)}


def _nvrtc_of(runs: list[dict]) -> dict:
    """The runs' NVRTC figures summed (per call and kernel over all their calls)."""
    ns = [r["nvrtc"] for r in runs]
    calls, kernels = sum(n["calls"] for n in ns), sum(n["kernels"] for n in ns)
    cpu = sum(n["cpu_ms"] for n in ns)
    fixed = sorted(n["header_only_call"]["cpu_ms"] for n in ns)[len(ns) // 2]
    return {"version": ns[0]["version"], "calls": calls, "kernels": kernels,
            "failed_calls": sum(n["failed_calls"] for n in ns),
            "cpu_ms_per_call": round(cpu / max(1, calls), 2),
            "cpu_ms_per_kernel": round(cpu / max(1, kernels), 3),
            "header_only_call_cpu_ms": fixed,
            "cpu_ms_per_kernel_beyond_fixed":
                round((cpu - fixed * calls) / max(1, kernels), 3),
            "unit_bytes_per_call": round(sum(n["unit_bytes_per_call"] * n["calls"]
                                             for n in ns) / max(1, calls)),
            "extra_options": dict(sum((Counter(n.get("extra_options", {}))
                                       for n in ns), Counter()))}


def table(result: dict) -> str:
    trees = result["trees"]
    head = f"{'CPU ms / program':18}" + "".join(f"{t['tree'][-22:]:>24}" for t in trees)
    out = [head]
    for s in (*CAMPAIGN, "typecheck"):
        out.append(f"{s:18}" + "".join(f"{t['cpu_ms_per_program'][s]:>24.2f}"
                                       for t in trees))
    for key, label in (("campaign_cpu_ms_per_program", "campaign total"),
                       ("in_process_cpu_ms_per_program", "in process")):
        out.append(f"{label:18}" + "".join(f"{t[key]:>24.2f}" for t in trees))
    out.append(f"{'programs':18}" + "".join(f"{t['programs']:>24}" for t in trees))
    for key in ("mean_bytes", "mean_lines"):
        out.append(f"{'CUDA ' + key:18}" + "".join(f"{t['kernels'][key]:>24}"
                                                    for t in trees))
    if "nvrtc" in trees[0]:
        for key in ("calls", "kernels", "cpu_ms_per_call", "cpu_ms_per_kernel",
                    "header_only_call_cpu_ms", "cpu_ms_per_kernel_beyond_fixed",
                    "unit_bytes_per_call"):
            out.append(f"{'nvrtc ' + key[:12]:18}" + "".join(
                f"{t['nvrtc'][key]:>24}" for t in trees))
    names = dict.fromkeys(k for t in trees for k in (*t["programs_by_kind"],
                                                      *t["families"]))
    for name in names:
        cells = [(t["programs_by_kind"] | t["families"]).get(name, [0, 0.0])
                 for t in trees]
        out.append(f"{name[:18]:18}" + "".join(f"{100 * c[1]:>23.1f}%" for c in cells))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the result here (also printed)")
    ap.add_argument("--tree", action="append", default=[],
                    help="a source tree to profile (its src/), repeatable")
    ap.add_argument("--turns", type=int, default=2,
                    help="with --tree: runs per tree, the trees in turns")
    ap.add_argument("--generation", action="append", default=[],
                    choices=("engine", "direct"), help="how rounds are drawn "
                    "(repeatable: the modes compared in turns, as trees are)")
    ap.add_argument("--campaign", action="store_true", help="the stages as a "
                    "Campaign runs them, and what it does beyond them (cpu, cuda)")
    args = ap.parse_args(argv)
    if args.campaign and args.tree:
        result = _compare_campaign_trees(args)
        print(campaign_stages.campaign_table(result))
        if args.json:
            with open(args.json, "w") as f:
                f.write(json.dumps(result, indent=1) + "\n")
        return 0
    if args.tree or len(args.generation) > 1:
        result = compare_trees(args)
        print(table(result))
        if args.json:
            with open(args.json, "w") as f:
                f.write(json.dumps(result, indent=1) + "\n")
        return 0
    # A fresh build cache: a round's kernels are built, not found from an earlier run.
    with tempfile.TemporaryDirectory(prefix="gpusem-profile-") as cache:
        os.environ["GPUSEM_CACHE_DIR"] = cache
        GENERATION[0] = args.generation[0] if args.generation else None
        result = (campaign_stages.profile_campaign(args.backend, args.rounds,
                                                   args.round_size, args.seed,
                                                   live_children_cpu)
                  if args.campaign else
                  profile(args.backend, args.rounds, args.round_size, args.seed))
        if GENERATION[0] is not None:
            result["generation"] = GENERATION[0]
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
