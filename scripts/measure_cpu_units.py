"""The cpu backend's fixed g++ costs of one batch (cpu.py's MIN_UNIT_BYTES and
FAST_LINKERS): a batch of the compile property's kernels (drawn as a campaign draws
them, `fuzz/bundl/sample.draw`) compiled as one translation unit and as two, an empty
unit (the fixed cost: the precompiled header, the harness's deferred template
instantiations), and the library linked by g++'s default linker and by each of
FAST_LINKERS; CPU seconds of g++ and its children, the median of `--turns` turns (the
variants of a turn back to back, so a shared machine's load falls on all alike).

    python scripts/measure_cpu_units.py --kernels 6 --kernels 24 --kernels 100 --turns 3

One JSON object: per batch size the kernels' bytes and the CPU-s of each variant.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import tempfile
from pathlib import Path


def children_cpu() -> float:
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_utime + c.ru_stime


def timed(cmd: list[str]) -> float:
    before = children_cpu()
    subprocess.run(cmd, check=True, capture_output=True)
    return children_cpu() - before


def kernels(n: int, seed: int) -> list:
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl.compile_property import HARNESS_SEEDS, _jobs
    from gpusem.fuzz.bundl.sample import draw
    from gpusem.fuzz.bundl.target import BundlTarget

    specs = []
    for g in draw(BundlTarget().strategy("compile"), n, seed):
        try:
            kernel = compile_program(g.program, CompileOptions())
        except Exception:  # noqa: BLE001, S112 - a program the compiler refuses: not built
            continue
        specs.append(_jobs(g.program, kernel, HARNESS_SEEDS, "cpu")[0].spec)
    return specs


def measure(n: int, seed: int, turns: int) -> dict:
    from gpusem.compiler.backends import cpu, cpu_source

    specs = kernels(n, seed)
    backend = cpu.CpuBackend(cache_dir=tempfile.mkdtemp())
    flags = [*cpu.cxxflags(), *backend._includes()]
    runtime = backend._runtime_object()
    work = Path(tempfile.mkdtemp())
    indexed = list(enumerate(specs))
    units = {"empty": [[]], "one unit": [indexed],
             "two units": [indexed[0::2], indexed[1::2]]}
    for name, parts in units.items():
        for k, part in enumerate(parts):
            src = work / f"{name.replace(' ', '_')}{k}.cpp"
            src.write_text(cpu_source.translation_unit(part, bool(runtime)))
    times: dict[str, list[float]] = {}
    for _ in range(turns):
        for name, parts in units.items():
            stem = name.replace(" ", "_")
            times.setdefault(name, []).append(sum(
                timed([cpu.CXX, *flags, "-c", str(work / f"{stem}{k}.cpp"),
                       "-o", str(work / f"{stem}{k}.o")]) for k in range(len(parts))))
        for flag in ("", *cpu.FAST_LINKERS):
            times.setdefault(f"link {flag or 'default'}", []).append(timed(
                [cpu.CXX, *([flag] if flag else []), "-shared", "-o",
                 str(work / "lib.so"), str(work / "one_unit0.o"),
                 *([runtime] if runtime else [])]))
    backend.close()
    return {"kernels": len(specs), "bytes": sum(len(s.source) for s in specs),
            "units_now": cpu._unit_count(specs, backend.parallel),
            "cpu_s": {k: round(statistics.median(v), 3) for k, v in times.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, action="append",
                    help="programs drawn per batch (repeatable; default 6, 24, 100)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--turns", type=int, default=3)
    args = ap.parse_args()
    print(json.dumps([measure(n, args.seed, args.turns)
                      for n in args.kernels or [6, 24, 100]], indent=1))


if __name__ == "__main__":
    main()
