"""Reduce an NVRTC crash to a minimal, standalone reproducer (toolchain finding T4:
NVRTC 12.9-13.5 crash on a second `-fdevice-time-trace` program; results/toolchain/T4).

1. Build each round of the compile property's kernels of `--seed` as the cuda worker
   batches them (one unit, each kernel in its namespace, a name expression each), with
   the worker's options plus `--extra` (default `-fdevice-time-trace=FILE`), each test
   in a child process: a crash is a child killed by a signal, never this process. With
   `--then-trivial` the child then builds a second program (a one-line kernel in the
   same form) under the same options (its own trace file): a crash of the second call
   (T4's shape); `--first-must-build` counts a crash only where the first one built.
2. Take the first batch that crashes; delta-debug its kernels (ddmin), inline the
   runtime header into the unit (so it is reduced too), drop chunks of its lines
   (halves first, down to single lines) while it still crashes, then the second
   program's lines, then each option the crash does not need; until `--budget-s`.
3. Write the reduced units, a standalone C++ program that makes exactly those NVRTC
   calls (`repro_nvrtc.cpp`: `nvcc -o repro repro_nvrtc.cpp -lnvrtc`; the crash kills
   it) and a JSON of the steps; build and run the standalone program (three times)
   against every NVRTC found (`nvrtc_lib.find_nvrtc`) where nvcc is on PATH.

  python3 scripts/nvrtc_crash_reduce.py --seed 0 --rounds 1 --version 13.5 \
      --then-trivial --first-must-build --budget-s 900 --out /tmp/t4
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


TRIVIAL = 'extern "C" __global__ void k(int* a) { a[threadIdx.x] = 1; }\n'


def child(spec_path: str) -> int:
    """Compile the unit of `spec_path`, then (where the spec has one) the second unit
    under the same options with its own trace file, in this one process (exit 0 built,
    1 rejected; "FIRST_BUILT" printed when the first one builds)."""
    from gpusem.compiler.backends import nvrtc_lib

    with open(spec_path) as f:
        spec = json.load(f)
    lib = next(n for n in nvrtc_lib.find_nvrtc() if n.path == spec["library"])
    exprs = {int(k): v for k, v in spec["exprs"].items()}
    binary, _, _ = nvrtc_lib.compile_unit(lib, spec["unit"], exprs, spec["options"],
                                          nvrtc_cache=True)  # exactly these options
    if binary is not None:
        print("FIRST_BUILT", flush=True)
    if spec.get("second") is not None:
        options = [o.replace("trace.json", "trace2.json") for o in spec["options"]]
        again, _, _ = nvrtc_lib.compile_unit(lib, spec["second"], {}, options,
                                             nvrtc_cache=True)
        binary = binary if again is not None else None
    return 0 if binary is not None else 1


class Tester:
    """Runs a candidate in a child; counts the tries."""

    def __init__(self, library: str, folder: str, second: str | None,
                 first_must_build: bool) -> None:
        self.library, self.folder, self.tries = library, folder, 0
        self.second, self.first_must_build = second, first_must_build

    def outcome(self, unit: str, exprs: dict[int, str], options: list[str]) -> str:
        """'crash:SIG', 'built', 'rejected' or 'hang'."""
        self.tries += 1
        spec = os.path.join(self.folder, "spec.json")
        with open(spec, "w") as f:
            json.dump({"library": self.library, "unit": unit, "exprs": exprs,
                       "options": options, "second": self.second}, f)
        env = dict(os.environ, PYTHONFAULTHANDLER="")
        try:
            done = subprocess.run([sys.executable, HERE, "--child", spec], env=env,
                                  capture_output=True, timeout=120, check=False)
        except subprocess.TimeoutExpired:
            return "hang"
        if done.returncode < 0:
            if self.first_must_build and b"FIRST_BUILT" not in done.stdout:
                return "crash-after-a-rejected-first"
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
static const char* kExprs[] = {%(exprs)s};
static const char* kOptions[] = {%(options)s};

int main() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::printf("NVRTC %%d.%%d\n", major, minor);
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, kUnit, "batch.cu", 0, nullptr, nullptr)) return 3;
  for (const char* e : kExprs) nvrtcAddNameExpression(prog, e);
  nvrtcResult r = nvrtcCompileProgram(prog, %(n_options)d, kOptions);
  std::printf("nvrtcCompileProgram: %%s\n", nvrtcGetErrorString(r));
  std::fflush(stdout);
  nvrtcDestroyProgram(&prog);
%(second)s  return r == NVRTC_SUCCESS ? 0 : 1;
}
'''
# With --then-trivial: a second program, one line, compiled with the same options in
# the same process (its own trace file).
SECOND = r'''  {
    static const char* kTrivial = R"gpusem_unit(%(trivial)s)gpusem_unit";
    static const char* kOptions2[] = {%(options2)s};
    nvrtcProgram second;
    if (nvrtcCreateProgram(&second, kTrivial, "k.cu", 0, nullptr, nullptr)) return 3;
    std::printf("second program ... ");
    std::fflush(stdout);
    nvrtcResult r2 = nvrtcCompileProgram(second, %(n_options2)d, kOptions2);
    std::printf("%%s\n", nvrtcGetErrorString(r2));
    nvrtcDestroyProgram(&second);
    if (r2 != NVRTC_SUCCESS) return 1;
  }
'''


def c_strings(values: list[str]) -> str:
    return ", ".join(json.dumps(v) for v in values)


def flatten(unit: str) -> str:
    """`unit` with each #include "..." of the runtime's folder replaced by the file,
    recursively (once each, as #pragma once / include guards would)."""
    import re

    from gpusem.compiler.backends.cpu import HERE as folder

    seen: set[str] = set()

    def expand(text: str) -> str:
        out = []
        for line in text.splitlines(keepends=True):
            m = re.match(r'\s*#include "([^"]+)"', line)
            if m and os.path.exists(os.path.join(folder, m.group(1))):
                if m.group(1) not in seen:
                    seen.add(m.group(1))
                    with open(os.path.join(folder, m.group(1))) as f:
                        out.append(expand(f.read()) + "\n")
                continue
            if line.strip() == "#pragma once":
                continue
            out.append(line)
        return "".join(out)

    return expand(unit)


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
    ap.add_argument("--then-trivial", action="store_true",
                    help="each test compiles the candidate, then a one-line kernel "
                    "with the same options, in one process (a crash of the second call)")
    ap.add_argument("--first-must-build", action="store_true",
                    help="a crash counts only where the first program built")
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
    second = flatten(unit_of([("k", TRIVIAL)])[0]) if args.then_trivial else None
    tester = Tester(lib.path, work, second, args.first_must_build)
    log: dict = {"nvrtc": lib.label, "library": lib.path, "options": options,
                 "seed": args.seed, "then_trivial": args.then_trivial,
                 "first_must_build": args.first_must_build, "rounds": []}

    def crashes_kernels(kernels: list[tuple[str, str]]) -> bool:
        if not kernels:
            return False
        unit, exprs = unit_of(kernels)
        return tester.outcome(unit, exprs, options).startswith("crash:")

    batch = None
    for r, kernels in enumerate(nvrtc_probe.kernels(args.seed, args.rounds,
                                                    args.round_size)):
        unit, exprs = unit_of(kernels)
        got = tester.outcome(unit, exprs, options)
        log["rounds"].append({"round": r, "kernels": len(kernels), "outcome": got})
        print(f"round {r}: {len(kernels)} kernels: {got}", flush=True)
        if got.startswith("crash:"):
            batch = kernels
            log["crash"] = got
            break
    if batch is None:
        log["result"] = "no round crashed"
        print(json.dumps(log, indent=1))
        with open(os.path.join(args.out, "crash_reduce.json"), "w") as f:
            json.dump(log, f, indent=1)
        return 1
    kept = ddmin(batch, crashes_kernels)
    log["kernels_after_ddmin"] = len(kept)
    print(f"ddmin: {len(batch)} -> {len(kept)} kernels ({tester.tries} tries)", flush=True)

    # One text from here on: the runtime header inlined, so it is reduced too.
    unit, exprs = unit_of(kept)
    unit = flatten(unit)
    options = [o for o in options if not o.startswith("-I")]
    deadline = t0 + args.budget_s

    def crashes_unit(texts: list[tuple[str, str]]) -> bool:
        return tester.outcome(texts[0][1], exprs, options).startswith("crash:")

    log["flattened_crashes"] = crashes_unit([("u", unit)])
    if log["flattened_crashes"]:
        unit = reduce_lines([("u", unit)], crashes_unit, deadline)[0][1]
        if second is not None:  # then the second program, the first one fixed
            def second_crashes(texts: list[tuple[str, str]]) -> bool:
                tester.second = texts[0][1]
                return tester.outcome(unit, exprs, options).startswith("crash:")

            kept_second = reduce_lines([("s", second)], second_crashes, deadline)[0][1]
            tester.second = second = kept_second
    log["lines_cut_short"] = time.monotonic() > deadline
    needed = list(options)  # drop each option the crash does not need
    for opt in list(options):
        trial = [o for o in needed if o != opt]
        if tester.outcome(unit, exprs, trial).startswith("crash:"):
            needed = trial
    log["options_needed"] = needed
    log["final_outcomes"] = [tester.outcome(unit, exprs, needed) for _ in range(3)]
    log["lines_after"] = {"first": unit.count("\n"),
                          "second": None if second is None else second.count("\n")}
    log["tries"] = tester.tries
    with open(os.path.join(args.out, "unit.cu"), "w") as f:
        f.write(unit)
    if second is not None:
        with open(os.path.join(args.out, "second.cu"), "w") as f:
            f.write(second)
    portable = [o if not o.startswith("-fdevice-time-trace") else
                "-fdevice-time-trace=trace.json" for o in needed]
    standalone = STANDALONE % {
        "unit": unit, "exprs": c_strings(list(exprs.values())),
        "options": c_strings(portable), "n_options": len(portable),
        "second": "" if second is None else SECOND % {
            "options2": c_strings([o.replace("trace.json", "trace2.json")
                                   for o in portable]),
            "n_options2": len(portable), "trivial": second}}
    path = os.path.join(args.out, "repro_nvrtc.cpp")
    with open(path, "w") as f:
        f.write(standalone)
    log["standalone"] = {n.label: standalone_outcome(path, n, work) for n in found}
    log["seconds"] = round(time.monotonic() - t0, 1)
    log["command"] = shlex.join([os.path.basename(sys.executable), *sys.argv])
    with open(os.path.join(args.out, "crash_reduce.json"), "w") as f:
        json.dump(log, f, indent=1)
    print(json.dumps(log, indent=1))
    return 0


def standalone_outcome(path: str, nvrtc, work: str) -> dict:
    """Build the standalone program against `nvrtc`'s library with nvcc; run it."""
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return {"build": "no nvcc"}
    libdir = os.path.dirname(nvrtc.path)
    include = os.path.join(os.path.dirname(libdir), "include")
    if not os.path.exists(os.path.join(include, "nvrtc.h")):  # e.g. the cu12 wheel's
        include = os.path.join(os.path.dirname(os.path.dirname(nvcc)), "include")
    exe = os.path.join(work, f"repro_{nvrtc.version[0]}_{nvrtc.version[1]}")
    cmd = [nvcc, "-o", exe, path, f"-I{include}", f"-L{libdir}",
           f"-Xlinker=-l:{os.path.basename(nvrtc.path)}", f"-Xlinker=-rpath={libdir}"]
    build = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if build.returncode != 0:
        return {"build": build.returncode, "log": build.stderr[-800:]}
    runs = []
    for _ in range(3):
        run = subprocess.run([exe], capture_output=True, text=True, cwd=work,
                             timeout=120, check=False)
        runs.append({"returncode": run.returncode, "stdout": run.stdout[-300:]})
    return {"build": 0, "runs": runs}


if __name__ == "__main__":
    sys.exit(main())
