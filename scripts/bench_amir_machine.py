#!/usr/bin/env python3
"""The AMIR machine's speed on an asymmetric kernel (issue 27 item 2): today's machine
(the reference machine of a git revision), this tree's machine, and Exo-GPU's checker
on the same kernel, in one command, as one ratio table.

The kernel is examples/gpuir/bench/gemm_hopper_ragged.gpuir: the paper's Hopper GEMM
with a ragged last row of tiles (C has N + 128 rows), whose tasks are not translations
of each other, so no task symmetry can be used (the fast machine declines it). Each
gpusem side runs in a fresh process with PYTHONPATH set to its own source tree; what is
timed is `check_amir` (the machine alone: the front end and the conversion are done
before), one warm-up run, then the best of the timed repeats, in CPU seconds of the
process (the dev machine is shared: CPU time is what load disturbs least) and wall
seconds. Both sides must give the same verdict (and violation: check, cell, threads,
span, message) and the same statistics; the script exits 1 if they differ.

Exo-GPU's side is the sporkbench kernel scripts/bench_synccheck_exo.py times
(make_Sm90a_gemm(Sm90aGemmConfig(128, 256, ...), 2, 1)) at L=1, M=N+128, N=N,
cluster_K=N, K_split=1 (the same ragged shape), timed the same way in a fresh process
of Exo's Python; it needs --exo-python and --sporkbench (neither is part of this
repository), and is reported as not run, with why, without them. With --exo-kernel
endgame it is instead Exo-GPU endgame's own copy of that GEMM (tk_gemm_util's
handwrite_gemm, same tile config, same ragged sizes), which needs no sporkbench: an
endgame --exo-python and a camspork JIT folder (--camspork-jit or $CAMSPORK_JIT_DIR).

With --outcomes P both machines also run every machine-reaching example and
conformance program, every AMIR program and P generated probe kernels of
tests/amir/test_fast_machine.py (and the kernel at N = 256, 512): their outcomes
(verdict, violation report, statistics, or error) must be equal.

    python scripts/bench_amir_machine.py --before main --sizes 1024 2048 \\
        --outcomes 60 --exo-python /work/exo/venv-pldi26/bin/python \\
        --sporkbench /work/exo/sporkbench-pldi26 --json results/amir/machine_speed.json
    python scripts/bench_amir_machine.py --before 15095f0 --sizes 1024 2048 \\
        --exo-kernel endgame --exo-python /work/exo/venv-endgame/bin/python \\
        --camspork-jit ~/.cache/gpusem/camspork-jit --json OUT

(15095f0: main before the iteration memo, the "today" of results/amir/machine_memo*;
main itself holds the memo since.)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "examples" / "gpuir" / "bench" / "gemm_hopper_ragged.gpuir"

# Run under one source tree: the machine on the converted kernel, timed.
CHILD = textwrap.dedent(r"""
    import json, sys, time
    from pathlib import Path
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.interpreter.amir.from_gpuir import convert
    from gpusem.interpreter.amir.machine import check_amir
    from gpusem.typing_rules.gpuir.frontend import check_proc, header_defines
    path, n, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    text = Path(path).read_text()
    proc = parse_module(text, path).procs[-1]
    env = {**header_defines(text), "N": n}
    prog = convert(proc, env, analysis=check_proc(proc, env))
    check_amir(prog, env)                                   # warm-up
    cpu, wall = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        v = check_amir(prog, env)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    w, st = v.violation, v.stats
    memo = None
    try:                                    # a tree with the iteration memo: its work
        from gpusem.interpreter.amir.machine import MEMO_MIN_ITERATIONS, Machine
    except ImportError:
        pass
    else:
        m = Machine(prog, env, memo_min=MEMO_MIN_ITERATIONS)
        m.run()
        memo = {"replayed": sum(x.hits for x in m.memos),
                "stepped": sum(x.stepped for x in m.memos),
                "recorded": sum(x.misses for x in m.memos),
                "images": len({id(i) for x in m.memos for i in x.by_id}),
                "chains_taken": sum(getattr(x, "taken", 0) for x in m.memos)}
    print(json.dumps({
        "cpu": min(cpu), "wall": min(wall), "cpu_all": cpu, "wall_all": wall,
        "verdict": "accepted" if w is None else "rejected",
        "violation": None if w is None else [w.check, w.variable, str(w.index),
                                              str(w.threads), str(w.other_threads),
                                              str(w.span), str(w.other_span),
                                              w.message],
        "stats": [st.statements, st.recorded_accesses, st.records, st.lifts,
                  sorted(st.exercised)], "memo": memo}))
""")

# Run under one source tree: the outcome (verdict, violation report, statistics, or the
# error) of every machine-reaching GPU IR example and conformance program, every AMIR
# program, and generated probe kernels, as tests/amir/test_fast_machine.py defines
# them (its helpers come from this checkout's tests/; the machine from the tree).
OUTCOMES = textwrap.dedent(r"""
    import json, random, sys
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from tests.amir.test_fast_machine import GPUIR, AMIR, outcome, converted, probe
    from tests.amir.test_machine_conformance import header
    from gpusem.calculus.amir.parser import parse_file
    from gpusem.interpreter.amir.machine import check_amir
    out = {}
    for p in GPUIR:
        prog, env = converted(p.read_text(), str(p))
        out[p.stem] = repr(outcome(lambda: check_amir(prog, env)))
    for p in AMIR:
        prog, d = parse_file(str(p)), header(p)[3]
        env = {q: d.get(q, 2) for q in prog.params}
        out["amir:" + p.stem] = repr(outcome(lambda: check_amir(prog, env)))
    rng = random.Random(int(sys.argv[2]))
    for i in range(int(sys.argv[3])):
        src, steps = probe(rng)
        try:
            prog, env = converted(src, f"probe{i}")
        except Exception as err:                    # the front end's, both trees
            out[f"probe{i}"] = "front end: " + type(err).__name__
            continue
        out[f"probe{i}"] = repr(outcome(lambda: check_amir(prog, env,
                                                           max_steps=steps)))
    for n in (256, 512):
        prog, env = converted(Path(sys.argv[4]).read_text(), sys.argv[4], {"N": n})
        out[f"kernel{n}"] = repr(outcome(lambda: check_amir(prog, env)))
    print(json.dumps(out))
""")

# The end of both Exo children: `gemm` built and `sizes` set, sync_check timed (one
# warm-up, then the best of `repeats`), one JSON line out.
EXO_TIMING = textwrap.dedent("""\
    gemm.sync_check(**sizes)                                # warm-up
    cpu, wall = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        gemm.sync_check(**sizes)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    print(json.dumps({"cpu": min(cpu), "wall": min(wall), "cpu_all": cpu,
                      "wall_all": wall, "verdict": "accepted", "proc": gemm.name()}))
""")

# Run by Exo-GPU's Python: build the sporkbench kernel (its construction calls
# sync_check on other sizes: stubbed while building), then time sync_check.
EXO_CHILD = textwrap.dedent("""
    import json, sys, time
    m, n, repeats, spork = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                            sys.argv[4])
    from exo import Procedure
    import exo.platforms.cuda, exo.platforms.Sm80, exo.platforms.Sm90  # noqa: F401
    real = Procedure.sync_check
    Procedure.sync_check = lambda self, **kw: None
    sys.path.insert(0, spork + "/examples/Sm90a_gemm")
    from template.make_Sm90a_gemm import make_Sm90a_gemm
    from template.Sm90a_gemm_pre_config import Sm90aGemmConfig
    gemm = make_Sm90a_gemm(Sm90aGemmConfig(128, 256, tma_to_gmem=False,
                                           enable_split_k=False), 2, 1)
    Procedure.sync_check = real
    sizes = dict(L=1, M=m, N=n, cluster_K=n, K_split=1)
""") + EXO_TIMING


# Run by Exo-GPU endgame's Python: its own in-tree Hopper GEMM (the one its
# tests/cuda/test_Sm90a_gemm.py checks: handwrite_gemm of the sporkbench config
# 128 x 256, 2 x 1 CTAs, no split-K), built, then sync_check timed. endgame's camspork
# compiles itself just in time into CAMSPORK_JIT_DIR (the first check in a fresh
# folder builds it: the warm-up absorbs that).
EXO_ENDGAME_CHILD = textwrap.dedent("""
    import json, sys, time
    from dataclasses import replace
    m, n, repeats = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    import exo.platforms.cuda, exo.platforms.Sm80, exo.platforms.Sm90  # noqa: F401
    import exo.platforms.Sm90.tk_gemm_util as gu
    config = replace(gu.GemmConfig(A_type="f32", A_major="row", B_type="f32",
                                   B_major="col", C_type="f32", C_major="row"),
                     cta_M=128, cta_N=256, enable_split_k=False, ncta_M=2, ncta_N=1)
    gemm = gu.handwrite_gemm(config)
    sizes = dict(L=1, M=m, N=n, K_split=1, K_cluster=n)
""") + EXO_TIMING
EXO_KERNELS = {
    "sporkbench": "sporkbench@pldi26 make_Sm90a_gemm(Sm90aGemmConfig(128, 256, False, "
                  "False), 2, 1), L=1, M=N+128, N=cluster_K=N, K_split=1",
    "endgame": "Exo-GPU endgame's exo.platforms.Sm90.tk_gemm_util.handwrite_gemm("
               "GemmConfig(f32, A row, B col, C row, cta_M=128, cta_N=256, ncta_M=2, "
               "ncta_N=1, enable_split_k=False)), L=1, M=N+128, N=K_cluster=N, "
               "K_split=1",
}


def tree_of(rev: str, into: Path) -> tuple[Path, str]:
    """src/ of git revision `rev`, extracted under `into`; and its full hash."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev],
                            capture_output=True, text=True, check=True).stdout.strip()
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"],
                          capture_output=True, check=True).stdout
    tar = into / "src.tar"
    tar.write_bytes(blob)
    with tarfile.open(tar) as t:
        t.extractall(into, filter="data")
    return into / "src", commit


def run_child(argv: list[str], env: dict[str, str],
              cwd: str | None = None) -> dict[str, object]:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False,
                          timeout=3600, cwd=cwd)
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
        return {"error": tail[0] if tail else f"exit {done.returncode}"}
    row: dict[str, object] = json.loads(lines[-1])
    return row


def gpusem_side(tree: Path, kernel: Path, n: int, repeats: int) -> dict[str, object]:
    env = {"PYTHONPATH": str(tree), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return run_child([sys.executable, "-c", CHILD, str(kernel), str(n), str(repeats)],
                     env)


def outcomes(tree: Path, kernel: Path, seed: int, probes: int) -> dict[str, str]:
    env = {"PYTHONPATH": str(tree), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "PYTHONHASHSEED": "0"}                # reprs of frozensets: one order
    done = subprocess.run([sys.executable, "-c", OUTCOMES, str(ROOT), str(seed),
                           str(probes), str(kernel)], capture_output=True, text=True,
                          env=env, check=True, timeout=3600)
    got: dict[str, str] = json.loads(done.stdout.splitlines()[-1])
    return got


def exo_side(python: str | None, spork: str | None, n: int,
             repeats: int, which: str = "sporkbench",
             jit: str | None = None) -> dict[str, object]:
    if not python or not Path(python).exists():
        return {"not_run": f"no Exo-GPU Python (--exo-python {python})"}
    if which == "endgame":
        env = dict(os.environ)
        if jit:
            env["CAMSPORK_JIT_DIR"] = jit
        with tempfile.TemporaryDirectory() as tmp:
            driver = Path(tmp) / "exo_child.py"
            driver.write_text(EXO_ENDGAME_CHILD)
            # its camspork JIT runs ninja, which leaves .ninja_log in the cwd
            return run_child([python, str(driver), str(n + 128), str(n),
                              str(repeats)], env, cwd=tmp)
    if not spork or not (Path(spork) / "examples" / "Sm90a_gemm").is_dir():
        return {"not_run": f"no sporkbench checkout with examples/Sm90a_gemm "
                           f"(--sporkbench {spork})"}
    with tempfile.TemporaryDirectory() as tmp:
        driver = Path(tmp) / "exo_child.py"
        driver.write_text(EXO_CHILD)
        return run_child([python, str(driver), str(n + 128), str(n), str(repeats),
                          spork], dict(os.environ))


def ratio(a: dict[str, object], b: dict[str, object], key: str) -> float | None:
    if key in a and key in b and float(b[key]) > 0:  # type: ignore[arg-type]
        return round(float(a[key]) / float(b[key]), 2)  # type: ignore[arg-type]
    return None


def secs(side: dict[str, object]) -> str:
    if "cpu" in side:
        return f"{float(side['cpu']):8.2f}"  # type: ignore[arg-type]
    return f"{'-':>8}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="main",
                    help="git revision of today's machine (default: main)")
    ap.add_argument("--kernel", default=str(KERNEL))
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--exo-python", default=None)
    ap.add_argument("--sporkbench", default=None)
    ap.add_argument("--exo-kernel", choices=sorted(EXO_KERNELS), default="sporkbench",
                    help="Exo's side: sporkbench's make_Sm90a_gemm (needs "
                         "--sporkbench) or endgame's in-tree handwrite_gemm (an "
                         "endgame --exo-python; no sporkbench)")
    ap.add_argument("--camspork-jit", metavar="DIR",
                    default=os.environ.get("CAMSPORK_JIT_DIR"),
                    help="endgame's camspork JIT folder (default: $CAMSPORK_JIT_DIR)")
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--outcomes", type=int, metavar="PROBES", default=0,
                    help="also compare both machines' outcomes on every example, "
                         "conformance and AMIR program and PROBES generated kernels")
    ap.add_argument("--seed", type=int, default=7, help="of the generated kernels")
    args = ap.parse_args(argv)
    kernel = Path(args.kernel).resolve()
    rows, differ = [], False
    with tempfile.TemporaryDirectory() as tmp:
        before, commit = tree_of(args.before, Path(tmp))
        print(f"today's machine: {args.before} = {commit[:12]}; this tree: "
              f"{ROOT / 'src'}; CPU seconds, best of {args.repeats} after a warm-up")
        print(f"{'N':>5} {'today':>8} {'new':>8} {'exo':>8} {'today/new':>10} "
              f"{'exo/new':>8} {'exo/today':>10}  verdict")
        for n in args.sizes:
            old = gpusem_side(before, kernel, n, args.repeats)
            new = gpusem_side(ROOT / "src", kernel, n, args.repeats)
            exo = exo_side(args.exo_python, args.sporkbench, n, args.repeats,
                           args.exo_kernel, args.camspork_jit)
            same = all(k in old and k in new and old[k] == new[k]
                       for k in ("verdict", "violation", "stats"))
            differ |= not same
            row = {"N": n, "today": old, "new": new, "exo": exo,
                   "same_verdict_and_stats": same,
                   "today_over_new": ratio(old, new, "cpu"),
                   "exo_over_new": ratio(exo, new, "cpu"),
                   "exo_over_today": ratio(exo, old, "cpu")}
            rows.append(row)
            cell = [row["today_over_new"], row["exo_over_new"], row["exo_over_today"]]
            print(f"{n:>5} {secs(old)} {secs(new)} {secs(exo)} "
                  f"{cell[0] or '-'!s:>10} {cell[1] or '-'!s:>8} "
                  f"{cell[2] or '-'!s:>10}  "
                  f"{new.get('verdict', new.get('error'))}"
                  f"{'' if same else ' (DIFFERENT from today)'}", flush=True)
            memo = new.get("memo")
            if isinstance(memo, dict):
                print(f"      new: iteration memo replayed {memo['replayed']}, "
                      f"stepped {memo['stepped']} ({memo['recorded']} recorded, "
                      f"{memo['images']} entry images; "
                      f"{memo.get('chains_taken', 0)} loops started from a chain "
                      f"handed on)")
            for side in ("today", "new", "exo"):
                why = row[side].get("error") or row[side].get("not_run")  # type: ignore[union-attr]
                if why:
                    print(f"      {side}: {why}")
        compared: dict[str, object] = {}
        if args.outcomes:
            a = outcomes(before, kernel, args.seed, args.outcomes)
            b = outcomes(ROOT / "src", kernel, args.seed, args.outcomes)
            diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
            differ |= bool(diff)
            compared = {"programs": len(a), "seed": args.seed, "probes": args.outcomes,
                        "differ": diff}
            print(f"outcomes: {len(a)} programs (examples, conformance, AMIR, "
                  f"{args.outcomes} generated, the kernel at N = 256, 512): "
                  f"{len(diff)} differ {diff[:5]}")
    if args.json:
        data = {"command": "python scripts/bench_amir_machine.py " + " ".join(
                    sys.argv[1:] if argv is None else argv),
                "before": {"rev": args.before, "commit": commit},
                "kernel": str(kernel.relative_to(ROOT)) if kernel.is_relative_to(ROOT)
                else str(kernel),
                "exo_kernel": EXO_KERNELS[args.exo_kernel],
                "timing": "CPU seconds of the machine's process (check_amir; Exo: "
                          "sync_check), best of the repeats after one warm-up; "
                          "ratios of CPU seconds",
                "machine": {"cpu_count": os.cpu_count(),
                            "python": platform.python_version(),
                            "load": os.getloadavg()},
                "results": rows, "outcomes": compared}
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
