"""Reduce an NVRTC crash to a minimal, standalone reproducer (stop 36's NVRTC 13.0
segfault with `-fdevice-time-trace` on a round's batch; results/scale/h200_2026-11-30m).

1. Build each round of the compile property's kernels of `--seed` as the cuda worker
   batches them (one unit, each kernel in its namespace, a name expression each), with
   the worker's options plus `--extra` (default `-fdevice-time-trace=FILE`), each call
   in a child process: a crash is a child killed by a signal, never this process.
2. Take the first batch that crashes; delta-debug its kernels (ddmin: the fewest kernels
   whose batch still crashes), then each kept kernel's lines (a line-removal pass to a
   fixpoint, braces kept balanced by NVRTC's own acceptance: a candidate that no longer
   compiles is not a crash and is dropped), then the options (each worker option left
   out where the crash stays).
3. Write the reduced unit, a standalone C++ program that makes exactly that NVRTC call
   (`repro_nvrtc.cpp`: `nvcc -o repro repro_nvrtc.cpp -lnvrtc`; the crash kills it),
   and a JSON of the steps; build and run the standalone program where nvcc is found,
   and the same unit under every other NVRTC found (`nvrtc_lib.find_nvrtc`).

  python3 scripts/nvrtc_crash_reduce.py --seed 0 --rounds 4 --out /tmp/crash
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

HERE = os.path.abspath(__file__)


def child(spec_path: str) -> int:
    """Compile the unit of `spec_path` once (exit 0 built, 1 rejected)."""
    from gpusem.compiler.backends import nvrtc_lib

    with open(spec_path) as f:
        spec = json.load(f)
    lib = next(n for n in nvrtc_lib.find_nvrtc() if n.path == spec["library"])
    exprs = {int(k): v for k, v in spec["exprs"].items()}
    binary, _, _ = nvrtc_lib.compile_unit(lib, spec["unit"], exprs, spec["options"],
                                          nvrtc_cache=True)  # exactly these options
    return 0 if binary is not None else 1


class Tester:
    """Runs a candidate in a child; counts the tries."""

    def __init__(self, library: str, folder: str) -> None:
        self.library, self.folder, self.tries = library, folder, 0

    def outcome(self, unit: str, exprs: dict[int, str], options: list[str]) -> str:
        """'crash:SIG', 'built', 'rejected' or 'hang'."""
        self.tries += 1
        spec = os.path.join(self.folder, "spec.json")
        with open(spec, "w") as f:
            json.dump({"library": self.library, "unit": unit, "exprs": exprs,
                       "options": options}, f)
        env = dict(os.environ, PYTHONFAULTHANDLER="")
        try:
            done = subprocess.run([sys.executable, HERE, "--child", spec], env=env,
                                  capture_output=True, timeout=120, check=False)
        except subprocess.TimeoutExpired:
            return "hang"
        if done.returncode < 0:
            return f"crash:{signal.Signals(-done.returncode).name}"
        return "built" if done.returncode == 0 else "rejected"


def unit_of(kernels: list[tuple[str, str]]) -> tuple[str, dict[int, str]]:
    from gpusem.compiler.backends import cpu_source

    unit = cpu_source.namespaced_unit(
        [(i, f"k{i}_src", src, "") for i, (_, src) in enumerate(kernels)], for_cpu=False)
    return unit, {i: f"gs_k{i}::{name}" for i, (name, _) in enumerate(kernels)}


def ddmin(items: list, crashes) -> list:
    """Zeller's ddmin over `items`: a 1-minimal sublist for which `crashes` holds."""
    n = 2
    while len(items) >= 2:
        chunk = max(1, len(items) // n)
        subsets = [items[i:i + chunk] for i in range(0, len(items), chunk)]
        for i, subset in enumerate(subsets):
            if crashes(subset):
                items, n = subset, 2
                break
            rest = [x for j, s in enumerate(subsets) if j != i for x in s]
            if n > 2 and crashes(rest):
                items, n = rest, max(n - 1, 2)
                break
        else:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
    return items


def reduce_lines(kernels: list[tuple[str, str]], crashes, deadline: float
                 ) -> list[tuple[str, str]]:
    """Drop chunks of each kernel's lines, halves first down to single lines, while
    the batch still crashes, until nothing goes or `deadline` (time.monotonic)."""
    kernels = list(kernels)
    changed = True
    while changed and time.monotonic() < deadline:
        changed = False
        for k, (name, src) in enumerate(kernels):
            lines = src.splitlines(keepends=True)
            size = max(1, len(lines) // 2)
            while size >= 1 and time.monotonic() < deadline:
                i = 0
                while i < len(lines) and time.monotonic() < deadline:
                    cand = lines[:i] + lines[i + size:]
                    trial = kernels[:k] + [(name, "".join(cand))] + kernels[k + 1:]
                    if crashes(trial):
                        lines, kernels, changed = cand, trial, True
                    else:
                        i += size
                size //= 2
    return kernels


STANDALONE = r'''// NVRTC crash reproducer made by gpusem (scripts/nvrtc_crash_reduce.py).
// Build: nvcc -o repro repro_nvrtc.cpp -lnvrtc   Run: ./repro   (the crash: a signal)
#include <nvrtc.h>
#include <cstdio>

static const char* kUnit = R"gpusem_unit(%(unit)s)gpusem_unit";
// The unit's #include "gpusem_rt.cuh" and what it includes, as NVRTC's in-memory headers
%(headers)s
static const char* kHeaders[] = {%(header_vars)s};
static const char* kHeaderNames[] = {%(header_names)s};
static const char* kExprs[] = {%(exprs)s};
static const char* kOptions[] = {%(options)s};

int main() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::printf("NVRTC %%d.%%d\n", major, minor);
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, kUnit, "batch.cu", %(n_headers)d, kHeaders, kHeaderNames))
    return 3;
  for (const char* e : kExprs) nvrtcAddNameExpression(prog, e);
  nvrtcResult r = nvrtcCompileProgram(prog, %(n_options)d, kOptions);
  std::printf("nvrtcCompileProgram: %%s\n", nvrtcGetErrorString(r));
  nvrtcDestroyProgram(&prog);
  return r == NVRTC_SUCCESS ? 0 : 1;
}
'''


def c_strings(values: list[str]) -> str:
    return ", ".join(json.dumps(v) for v in values)


def runtime_headers() -> dict[str, str]:
    """The headers the unit's #include "gpusem_rt.cuh" reaches, by name."""
    import re

    from gpusem.compiler.backends.cpu import HERE as folder

    found: dict[str, str] = {}
    todo = ["gpusem_rt.cuh"]
    while todo:
        name = todo.pop()
        if name in found or not os.path.exists(os.path.join(folder, name)):
            continue
        with open(os.path.join(folder, name)) as f:
            found[name] = f.read()
        todo += re.findall(r'#include "([^"]+)"', found[name])
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return child(argv[1])
    import nvrtc_probe
    from gpusem.compiler.backends import nvrtc_lib
    from gpusem.compiler.backends.cuda_worker import BUILD_SPEEDUPS, NVRTC_OPTIONS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--library", default="", help="a libnvrtc path (default: the "
                    "newest NVRTC found whose version is --version)")
    ap.add_argument("--version", default="13.0")
    ap.add_argument("--extra", default="-fdevice-time-trace={trace}")
    ap.add_argument("--no-cache", action="store_true",
                    help="also pass --no-cache (the worker's call since stop 37)")
    ap.add_argument("--budget-s", type=float, default=360.0,
                    help="stop reducing lines after this many seconds from the start")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.monotonic()
    found = nvrtc_lib.find_nvrtc()
    want = tuple(int(x) for x in args.version.split("."))
    lib = (next(n for n in found if n.path == args.library) if args.library
           else next(n for n in found if n.version == want))
    work = tempfile.mkdtemp(prefix="gpusem-crash-")
    trace = os.path.join(work, "trace.json")
    extra = [x.format(trace=trace) for x in shlex.split(args.extra)]
    options = [*NVRTC_OPTIONS, *BUILD_SPEEDUPS, *extra]
    if args.no_cache:
        options.append("--no-cache")
    tester = Tester(lib.path, work)
    log: dict = {"nvrtc": lib.label, "library": lib.path, "options": options,
                 "seed": args.seed, "rounds": []}

    def crashes_with(opts: list[str]):
        def crashes(kernels: list[tuple[str, str]]) -> bool:
            if not kernels:
                return False
            unit, exprs = unit_of(kernels)
            return tester.outcome(unit, exprs, opts).startswith("crash")
        return crashes

    batch = None
    for r, kernels in enumerate(nvrtc_probe.kernels(args.seed, args.rounds,
                                                    args.round_size)):
        unit, exprs = unit_of(kernels)
        got = tester.outcome(unit, exprs, options)
        log["rounds"].append({"round": r, "kernels": len(kernels), "outcome": got})
        print(f"round {r}: {len(kernels)} kernels: {got}", flush=True)
        if got.startswith("crash"):
            batch = kernels
            log["crash"] = got
            break
    if batch is None:
        log["result"] = "no round crashed"
        print(json.dumps(log, indent=1))
        with open(os.path.join(args.out, "crash_reduce.json"), "w") as f:
            json.dump(log, f, indent=1)
        return 1
    crashes = crashes_with(options)
    kept = ddmin(batch, crashes)
    log["kernels_after_ddmin"] = len(kept)
    print(f"ddmin: {len(batch)} -> {len(kept)} kernels ({tester.tries} tries)", flush=True)
    if len(kept) == 1:  # does one kernel alone crash, or only with others?
        log["one_kernel_alone_crashes"] = True
    kept = reduce_lines(kept, crashes, t0 + args.budget_s)
    log["lines_cut_short"] = time.monotonic() > t0 + args.budget_s
    unit, exprs = unit_of(kept)
    log["final_outcomes"] = [tester.outcome(unit, exprs, options) for _ in range(3)]
    log["lines_after"] = unit.count("\n")
    needed = list(options)  # drop each option the crash does not need
    for opt in list(options):
        trial = [o for o in needed if o != opt]
        if tester.outcome(unit, exprs, trial).startswith("crash"):
            needed = trial
    log["options_needed"] = needed
    log["tries"] = tester.tries
    log["others"] = {n.label: tester.outcome(unit, exprs, [
        o.replace("sm_90a", n.arch.replace("compute_", "sm_")) for o in needed])
        for n in found if n.path != lib.path}
    with open(os.path.join(args.out, "unit.cu"), "w") as f:
        f.write(unit)
    portable = [o if not o.startswith("-fdevice-time-trace") else
                "-fdevice-time-trace=trace.json" for o in needed
                if not o.startswith("-I")]
    headers = runtime_headers()
    names = sorted(headers)
    standalone = STANDALONE % {
        "unit": unit, "exprs": c_strings(list(exprs.values())),
        "options": c_strings(portable), "n_options": len(portable),
        "headers": "\n".join(f'static const char* kHeader{i} = R"gpusem_h({headers[n]})'
                             f'gpusem_h";' for i, n in enumerate(names)),
        "header_vars": ", ".join(f"kHeader{i}" for i in range(len(names))),
        "header_names": c_strings(names), "n_headers": len(names)}
    path = os.path.join(args.out, "repro_nvrtc.cpp")
    with open(path, "w") as f:
        f.write(standalone)
    nvcc = shutil.which("nvcc")
    if nvcc:
        exe = os.path.join(work, "repro")
        libdir = os.path.dirname(lib.path)  # the very library that crashed
        cmd = [nvcc, "-o", exe, path,
               f"-I{os.path.join(os.path.dirname(libdir), 'include')}", f"-L{libdir}",
               f"-Xlinker=-l:{os.path.basename(lib.path)}", f"-Xlinker=-rpath={libdir}"]
        build = subprocess.run(cmd, capture_output=True, text=True, check=False)
        log["standalone_build"] = build.returncode
        log["standalone_build_command"] = shlex.join(cmd)
        if build.returncode == 0:
            run = subprocess.run([exe], capture_output=True, text=True, cwd=work,
                                 timeout=120, check=False)
            log["standalone_run"] = {"returncode": run.returncode,
                                     "stdout": run.stdout[-500:]}
        else:
            log["standalone_build_log"] = build.stderr[-1500:]
    log["seconds"] = round(time.monotonic() - t0, 1)
    log["command"] = shlex.join([os.path.basename(sys.executable), *sys.argv])
    with open(os.path.join(args.out, "crash_reduce.json"), "w") as f:
        json.dump(log, f, indent=1)
    print(json.dumps(log, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
