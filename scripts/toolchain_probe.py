"""The toolchain matrix and attribution measured on a GPU machine (issue 23, items 2
and 5); `bash scripts/gpu.sh toolchain` runs it. Writes one JSON object:

  tools        nvcc / ptxas / cuobjdump found (path, version), CuPy's NVRTC version,
               whether a static PTX check is installed
  t1           the T1 kernel (tests/backends/kernels/t1_nc_alias.cu): each
               configuration's observations, the attribution (verdict, rule,
               evidence), its cost in seconds
  t1_bundl     the compile property on t1_nc_alias.bundl (our compiler's T1-shaped
               kernel): the verdict, and a finding's attribution
  fault        a seeded fault of our compiler (floor-division) on the cuda backend:
               the compile finding's attribution and its cost
  cost         N generated programs through the `toolchain` property in rounds of
               25: seconds per program for the whole matrix, per configuration, and
               the verdicts

Usage: python3 scripts/toolchain_probe.py OUT.json [--programs N] [--backend cuda]
(`--backend cpu` runs the same logic without a GPU: only the cpu configuration.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' fixtures (T1 kernel, the HALVES program)


def tools() -> dict:
    from gpusem.compiler.backends.toolchain import installed_checker
    from gpusem.compiler.backends.toolchain_build import find_tool, tool_version

    out = {name: {"path": find_tool(name), "version": tool_version(name)}
           for name in ("nvcc", "ptxas", "cuobjdump")}
    try:
        from cupy_backends.cuda.libs import nvrtc

        out["nvrtc"] = ".".join(map(str, nvrtc.getVersion()))
    except Exception as err:  # noqa: BLE001 - no CuPy: the cpu run
        out["nvrtc"] = f"unavailable: {type(err).__name__}"
    out["static_check"] = installed_checker() is not None
    return out


def t1(backend: str) -> dict:
    from gpusem.compiler.backends.toolchain import Matrix, installed_checker
    from gpusem.fuzz.attribution import attribute
    from tests.backends.test_toolchain_gpu import t1_case

    matrix = Matrix(backend)
    try:
        start = time.perf_counter()
        found = attribute(t1_case(), matrix, installed_checker())
        found["wall_s"] = round(time.perf_counter() - start, 3)
        found["second_call_s"] = _again(lambda: attribute(t1_case(), matrix,
                                                          installed_checker()))
    finally:
        matrix.close()
    return found


def _again(fn) -> float:
    start = time.perf_counter()
    fn()
    return round(time.perf_counter() - start, 3)


def t1_bundl(backend: str) -> dict:
    """The compile property on tests/backends/kernels/t1_nc_alias.bundl (our compiler
    makes a T1-shaped kernel of it): the verdict, and the attribution of a finding."""
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.fuzz.bundl.generated import Generated
    from gpusem.fuzz.bundl.target import BundlTarget

    path = ROOT / "tests" / "backends" / "kernels" / "t1_nc_alias.bundl"
    target = BundlTarget(backend)
    try:
        res = target.check(Generated(parse_program(path.read_text(), str(path)),
                                     False), "compile")
        out: dict = {"status": res.status, "signature": res.signature,
                     "detail": res.detail}
        if res.status == "finding":
            start = time.perf_counter()
            out["attribution"] = target.attribute(res, "compile")
            out["wall_s"] = round(time.perf_counter() - start, 3)
    finally:
        target.close()
    return out


def fault(backend: str) -> dict:
    from gpusem.calculus.bundl.parser import parse_program
    from gpusem.fuzz.bundl.generated import Generated
    from gpusem.fuzz.bundl.target import BundlTarget
    from tests.fuzz.test_attribution_wiring import HALVES

    os.environ["GPUSEM_FAULT"] = "floor-division"
    target = BundlTarget(backend)
    try:
        res = target.check(Generated(parse_program(HALVES, "h.bundl"), False),
                           "compile")
        start = time.perf_counter()
        found = target.attribute(res, "compile") or {}
        found["wall_s"] = round(time.perf_counter() - start, 3)
        found["finding"] = res.signature
    finally:
        target.close()
        del os.environ["GPUSEM_FAULT"]
    return found


def cost(backend: str, n: int) -> dict:
    from gpusem.fuzz.bundl import toolchain_property
    from gpusem.fuzz.bundl.sample import draw
    from gpusem.fuzz.bundl.target import BundlTarget

    builds: list[float] = []  # the cpu backend's build-only host configurations
    real = toolchain_property.build_only

    def timed(specs, configs):
        start = time.perf_counter()
        try:
            return real(specs, configs)
        finally:
            builds.append(time.perf_counter() - start)

    toolchain_property.build_only = timed  # type: ignore[assignment]
    target = BundlTarget(backend)
    programs = draw(target.strategy("toolchain"), n, seed=5)
    verdicts: Counter[str] = Counter()
    start = time.perf_counter()
    try:
        for i in range(0, len(programs), 25):
            batch = programs[i:i + 25]
            target.prefetch(batch, "toolchain")  # the round's matrix, run together
            for program in batch:
                res = target.check(program, "toolchain")
                verdicts[res.signature or res.status] += 1
        per_config = dict(target.matrix().seconds)
    finally:
        target.close()
    wall = time.perf_counter() - start
    return {"programs": len(programs), "wall_s": round(wall, 2),
            "per_program_s": round(wall / max(1, len(programs)), 4),
            "per_config_s": {c: round(s, 2) for c, s in per_config.items()},
            "build_only_s": round(sum(builds), 2), "build_only_calls": len(builds),
            "verdicts": dict(verdicts)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--programs", type=int, default=100)
    ap.add_argument("--backend", default="cuda")
    args = ap.parse_args()
    result: dict = {"backend": args.backend, "tools": tools(),
                    "command": " ".join(["python3", *sys.argv]),
                    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for name, run in (("t1", lambda: t1(args.backend)),
                      ("t1_bundl", lambda: t1_bundl(args.backend)),
                      ("fault", lambda: fault(args.backend)),
                      ("cost", lambda: cost(args.backend, args.programs))):
        try:
            result[name] = run()
        except Exception as err:  # noqa: BLE001 - record it, measure the rest
            import traceback

            result[name] = {"error": traceback.format_exc()[-2000:]}
            print(f"{name}: {type(err).__name__}: {err}", file=sys.stderr)
        Path(args.out).write_text(json.dumps(result, indent=1, default=str) + "\n")
        print(name, json.dumps(result[name], default=str)[:400], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
