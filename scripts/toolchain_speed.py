"""Where a Bundl `toolchain` campaign's CPU goes per program, on a machine with no GPU,
through the campaign's own code (issue 23: the 1,000,000 programs are bound by the H200
host's 16 cores); and, with `--tree`, two trees in one command (main against a branch),
with a digest of what each compared.

The rounds are a campaign's (`--seed`, round r drawn as `generate_round` draws it,
`begin_round(r)`, then the target's `prefetch`: `BundlTarget._toolchain` ->
`toolchain_property.check_round` -> `toolchain.Matrix`), on the cuda path (lazy: one
launch a GPU configuration, nvcc-G on every K-th round, the cpu harness only where a
GPU configuration is wrong). What needs the GPU is stood in for by
`HostMatrixBackend` (a `MatrixBackend` with no worker):

    build   the cuda worker's NVRTC (nvrtc, no-restrict) is NVRTC here, in process
            (`nvrtc_lib.compile_cubin`: the same options, the newest installed NVRTC);
            nvcc-O3, nvcc-G, ptxas-O0, ptx-jit are the tree's own host builds
    launch  each launch's outputs are the cpu harness's for the same source (so the
            verdicts are a clean campaign's); its cost is left out (`stand_in`), and
            launches are counted (`launches`: GPU launches made, `shared`: the
            launches a configuration took from another with the same SASS)

CPU seconds of this process and its reaped children (nvcc, ptxas, g++), per stage,
exclusive (a stage inside another is not counted twice):

    generate        hypothesis drawing the round
    reference       the reference outcome (`BundlTarget._reference`)
    compile         our Bundl -> CUDA compiler (`check_round`'s calls)
    build:<config>  the configuration's build of the round (NVRTC, nvcc, ptxas)
    digests         the kernel digests that decide which launches are shared
    verdict         each program's verdict (`toolchain_property._verdict`)
    cpu             the cpu harness, for programs a GPU configuration got wrong
    matrix          the rest of `Matrix.run` (variants, argument arrays, launch keys)
    check           the rest of the round (jobs, grouping, the target's bookkeeping)

and the per-invocation cost of each tool (`fixed`: a unit with no kernel, the harness
header only: NVRTC, nvcc -cubin, nvcc -cubin -G, ptxas -O0). The estimate on 16 cores
charges each launch `--launch-ms` of a core (4, as scripts/toolchain_cost.py) and
leaves out the driver's JIT of ptx-jit and the campaign's start: an upper bound, for
comparing two trees, not a rate.

`digest`: sha256 over every program's text, its verdict (status, signature, kind, the
configurations that checked it) and each round's shared launches: two trees with the
same digest drew the same programs and compared them the same way.

  python scripts/toolchain_speed.py --rounds 4 --json out.json
  python scripts/toolchain_speed.py --tree /tmp/tcspeed/main --tree . --rounds 4 \
      --turns 2 --json results/toolchain/toolchain_speed_cpu.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from toolchain_cost import cpu_seconds  # this folder's: own and children's CPU s
from tree_runs import tree_commit, tree_env

CORES = 16
STAGES = ("generate", "reference", "compile", "build:nvrtc", "build:nvcc-O3",
          "build:nvcc-G", "build:ptxas-O0", "build:ptx-jit", "build:no-restrict",
          "digests", "verdict", "cpu", "matrix", "check")


class Clock:
    """Exclusive CPU seconds per stage: a stage's time less its inner stages'."""

    def __init__(self) -> None:
        self.spent: Counter[str] = Counter()
        self._stack: list[list] = []  # [stage, start, inner seconds]

    def wrap(self, stage: Any, fn: Any) -> Any:
        """`fn` timed as `stage` (a name, or a function of the call's arguments)."""
        def timed(*args: Any, **kwargs: Any) -> Any:
            name = stage(*args) if callable(stage) else stage
            self._stack.append([name, cpu_seconds(), 0.0])
            try:
                return fn(*args, **kwargs)
            finally:
                name, start, inner = self._stack.pop()
                total = cpu_seconds() - start
                self.spent[name] += total - inner
                if self._stack:
                    self._stack[-1][2] += total
        return timed


def host_matrix_backend(stand_in: Any) -> Any:
    """A `MatrixBackend` that needs no GPU (see the module docstring)."""
    from gpusem.compiler.backends import cpu_source, nvrtc_lib
    from gpusem.compiler.backends.kernel import Result
    from gpusem.compiler.backends.toolchain import MatrixBackend, untagged
    from gpusem.compiler.backends.toolchain_build import entry_prefix

    found = nvrtc_lib.find_nvrtc()
    if not found:  # the cuda worker's NVRTC has no stand-in then
        raise SystemExit("toolchain_speed: no NVRTC installed (nvrtc_lib.search_dirs)")
    newest = found[0]

    def nvrtc(items: list) -> tuple[bytes | None, str]:
        unit = cpu_source.namespaced_unit(
            [(i, f"k{i}_src", src, "") for i, _, src in items], for_cpu=False)
        return nvrtc_lib.compile_cubin(newest, unit, "batch.cu")

    class HostMatrixBackend(MatrixBackend):
        def _call(self, op: str, payload: tuple, timeout: float) -> tuple[str, Any]:
            if op == "load":
                return "ok", None
            assert op == "build", op
            _, items = payload  # as Device.build: alone where the batch fails
            errors, rest = {}, list(items)
            binary, _ = nvrtc(rest)
            if binary is None:
                for item in rest:
                    alone, alone_log = nvrtc([item])
                    if alone is None:
                        errors[item[0]] = "build error: " + alone_log[:2000]
                rest = [it for it in rest if it[0] not in errors]
                binary = nvrtc(rest)[0] if rest else None
            lowered = {i: entry_prefix(i, name) for i, name, _ in rest}
            return "ok", (errors, binary, lowered)

        def _launch_many(self, jobs: list, keys: list, built: dict, prepared: list,
                         batch: list[int]) -> Any:
            self.stats["launch_batches"] += 1
            plain = [replace(jobs[i], spec=replace(jobs[i].spec, source=untagged(
                jobs[i].spec.source))) for i in batch]
            for i, res in zip(batch, stand_in(plain), strict=True):
                yield i, Result(res.kind, res.outputs, res.message, 0.0)

    return HostMatrixBackend


def profile(rounds: int, round_size: int, seed: int, first: int) -> dict:
    """Rounds first .. first + rounds - 1 of a campaign of `seed`, timed by stage."""
    from gpusem.calculus.bundl.printer import print_program
    from gpusem.compiler.backends import toolchain, toolchain_build
    from gpusem.compiler.backends.cpu import CpuBackend
    from gpusem.fuzz import hunt
    from gpusem.fuzz.bundl import target as target_mod
    from gpusem.fuzz.bundl import toolchain_property as tp
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.campaign import round_seed

    clock = Clock()
    cache = tempfile.mkdtemp(prefix="gpusem-speed-")
    harness = CpuBackend(cache_dir=cache)  # the launches' stand-in
    cpu_runner = CpuBackend(cache_dir=cache)  # the matrix's own `cpu` configuration
    stand_in = clock.wrap("stand_in", harness.run)
    cpu_runner.run = clock.wrap("cpu", cpu_runner.run)
    backend_cls = host_matrix_backend(stand_in)
    backend_cls.build_module = clock.wrap(
        lambda self, key, items: "build:" + toolchain.config_of(items[0][2]),
        backend_cls.build_module)
    toolchain_build.kernel_digests = clock.wrap("digests", toolchain_build.kernel_digests)
    tp.compile_program = clock.wrap("compile", tp.compile_program)
    tp._verdict = clock.wrap("verdict", tp._verdict)
    toolchain.Matrix.run = clock.wrap("matrix", toolchain.Matrix.run)
    target_mod.BundlTarget._reference = clock.wrap("reference",
                                                   target_mod.BundlTarget._reference)
    generate = clock.wrap("generate", hunt.generate_round)

    target = target_mod.BundlTarget("cuda")
    matrix = toolchain.Matrix("cuda", cpu_runner=cpu_runner)
    matrix._gpu = backend_cls()
    target._matrix = matrix
    strategy = target.strategy("toolchain")
    check = clock.wrap("check", target.prefetch)
    digest = hashlib.sha256()
    verdicts: Counter[str] = Counter()
    by_config: Counter[str] = Counter()
    programs = 0
    wall0 = time.perf_counter()
    try:
        for r in range(first, first + rounds):
            drawn = generate(strategy, round_seed(seed, r), round_size)
            target.begin_round(r)
            check([d.program for d in drawn], "toolchain")
            for d in drawn:
                g = as_generated(d.program)
                v = target._cache[("toolchain", g)]
                programs += 1
                verdicts[v.status if v.status != "invalid" else f"invalid:{v.kind}"] += 1
                by_config.update(v.configs)
                digest.update(json.dumps([print_program(g.program), v.status,
                                          v.signature, v.kind, list(v.configs)]
                                         ).encode())
            digest.update(json.dumps(sorted((c, sorted(j.items()))
                                            for c, j in matrix.shared.items())).encode())
    finally:
        target.close()
        harness.close()
        cpu_runner.close()
    wall = time.perf_counter() - wall0
    return {"programs": programs, "rounds": rounds, "first_round": first,
            "round_size": round_size, "seed": seed,
            "cpu_s": {k: round(v, 4) for k, v in clock.spent.items()},
            "launches": matrix.counts["launched"], "shared": matrix.counts["shared"],
            "verdicts": dict(verdicts), "by_configuration": dict(by_config),
            "digest": digest.hexdigest(), "wall_s": round(wall, 1),
            "g_every": toolchain.g_every()}


def fixed_costs() -> dict[str, float]:
    """CPU ms of one call of each tool on a unit with no kernel (the harness header)."""
    from gpusem.compiler.backends import cpu_source, nvrtc_lib
    from gpusem.compiler.backends import toolchain_build as tb

    unit = cpu_source.HEADER_INCLUDE
    nvcc, ptxas = tb.find_tool("nvcc"), tb.find_tool("ptxas")
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="gpusem-speed-") as tmp:
        cu, ptx, cubin = (os.path.join(tmp, n) for n in ("u.cu", "u.ptx", "u.cubin"))
        with open(cu, "w") as f:
            f.write(unit)
        calls = {
            "nvrtc": lambda: nvrtc_lib.compile_cubin(nvrtc_lib.find_nvrtc()[0], unit),
            "nvcc -ptx": lambda: subprocess.run(
                [nvcc, "-ptx", "-arch=compute_90a", *tb.COMMON, cu, "-o", ptx],
                check=True, capture_output=True),
            "nvcc -cubin (nvcc-O3)": lambda: subprocess.run(
                [nvcc, "-cubin", "-arch=sm_90a", "-Xptxas", "-O3", *tb.COMMON, cu,
                 "-o", cubin], check=True, capture_output=True),
            "nvcc -cubin -G": lambda: subprocess.run(
                [nvcc, "-cubin", "-arch=sm_90a", "-G", *tb.COMMON, cu, "-o", cubin],
                check=True, capture_output=True),
            "ptxas -O0": lambda: subprocess.run(
                [ptxas, "-arch=sm_90a", "-O0", ptx, "-o", cubin], check=True,
                capture_output=True),
        }
        for name, call in calls.items():
            call()  # warm: the page cache, NVRTC's library
            start = cpu_seconds()
            for _ in range(3):
                call()
            out[name] = round(1e3 * (cpu_seconds() - start) / 3, 1)
    return out


def summary(runs: list[dict], launch_ms: float) -> dict:
    programs = sum(r["programs"] for r in runs)
    spent: Counter[str] = Counter()
    for r in runs:
        spent.update(r["cpu_s"])
    ms = {s: round(1e3 * spent[s] / programs, 2) for s in STAGES}
    host = sum(ms.values())
    launches = sum(r["launches"] for r in runs) / programs
    with_launches = host + launch_ms * launches
    return {"programs": programs, "cpu_ms_per_program": ms,
            "host_cpu_ms_per_program": round(host, 2),
            "stand_in_ms_per_program_not_counted": round(
                1e3 * spent["stand_in"] / programs, 2),
            "gpu_launches_per_program": round(launches, 3),
            "shared_launches_per_program": round(
                sum(r["shared"] for r in runs) / programs, 3),
            "cpu_and_launches_ms_per_program": round(with_launches, 2),
            f"estimated_per_min_on_{CORES}_cores": round(CORES * 60_000 / with_launches),
            "verdicts": dict(sum((Counter(r["verdicts"]) for r in runs), Counter())),
            "by_configuration": dict(sum((Counter(r["by_configuration"]) for r in runs),
                                         Counter())),
            "digests": [r["digest"] for r in runs]}


def _run_tree(tree: str, args: argparse.Namespace, first: int) -> dict:
    """This script on `tree`'s src/, in a fresh process: one turn of rounds."""
    env = tree_env(tree)
    cmd = [sys.executable, os.path.abspath(__file__), "--one-turn", "--rounds",
           str(args.rounds), "--round-size", str(args.round_size), "--seed",
           str(args.seed), "--first-round", str(first)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {done.stderr[-3000:]}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="rounds per turn")
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--first-round", type=int, default=0)
    ap.add_argument("--turns", type=int, default=1,
                    help="turns per tree (turn t: the next --rounds rounds)")
    ap.add_argument("--tree", action="append", default=[],
                    help="a source tree (its src/), repeatable; run in turns")
    ap.add_argument("--launch-ms", type=float, default=4.0)
    ap.add_argument("--json")
    ap.add_argument("--one-turn", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one_turn:
        print(json.dumps(profile(args.rounds, args.round_size, args.seed,
                                 args.first_round)))
        return 0
    trees = args.tree or [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    runs: dict[str, list[dict]] = {t: [] for t in trees}
    for turn in range(args.turns):  # the trees in turns: a shared machine's load
        for tree in trees:         # falls on both alike
            runs[tree].append(_run_tree(tree, args, args.first_round
                                        + turn * args.rounds))
    out = {
        "command": shlex.join(["python", *sys.argv]),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, no GPU",
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "fixed_cpu_ms_per_call": fixed_costs(),
        "launch_ms": args.launch_ms,
        "trees": [{"tree": t, "commit": tree_commit(t), "runs": rs}
                  | summary(rs, args.launch_ms) for t, rs in runs.items()],
    }
    digests = {tuple(t["digests"]) for t in out["trees"]}
    out["same_programs_and_verdicts"] = len(digests) == 1
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0 if out["same_programs_and_verdicts"] else 1


if __name__ == "__main__":
    sys.exit(main())
