"""Which stages one generated program's verdict passes through (issue 25, item 3).

Draws ONE program of the Bundl `compile` property as a campaign draws it (the
property's strategy, round 0 of `--seed`, the first program of the general generator
with at least 10 statements: not race-free by construction, so its reference needs the
race proof), then asks the
Bundl target (cpu backend) for its verdict under `sys.setprofile` and records every
Python call into a gpusem function: the callee's module and the nearest gpusem frame
that called it. Each module maps to its stage (calculus 0, typing_rules 1,
interpreter 2, compiler 3, fuzz 4, api/strategies 5, cli/pytest_plugin 6).

Reported:
  calls       Python calls into gpusem functions
  edges       distinct (caller module, callee module) pairs across modules
  modules     distinct gpusem modules called
  climbs      calls from a module of a lower stage into one of a higher stage (e.g.
              interpreter -> fuzz), with their distinct edges: 0 when every judgment
              is decided below the stage that asks for it
  reference   the judgment done in the fuzz stage on behalf of the Bundl target's
              request for a reference outcome (its `_reference`/`_full_reference`):
              calls into fuzz-stage functions made below that request by anything
              but the requesting module itself (its own bookkeeping: the audit,
              the coverage it remembers), and their modules; 0 when the reference outcome (the interpreter, the race
              proof) is decided wholly below the fuzz stage

    PYTHONPATH=src python scripts/verdict_call_path.py [--seed 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

STAGES = {"calculus": 0, "typing_rules": 1, "interpreter": 2, "compiler": 3,
          "fuzz": 4, "api": 5, "strategies": 5, "cli": 6, "pytest_plugin": 6}
STAGE_NAMES = ("calculus", "typing_rules", "interpreter", "compiler", "fuzz", "api",
               "cli")


def stage(module: str) -> int | None:
    """The stage of a gpusem module (None: not gpusem, or the package root)."""
    parts = module.split(".")
    if parts[0] != "gpusem" or len(parts) < 2:
        return None
    return STAGES.get(parts[1])


@dataclass
class CallPath:
    calls: int = 0
    modules: Counter[str] = field(default_factory=Counter)
    edges: Counter[tuple[str, str]] = field(default_factory=Counter)
    climbs: Counter[tuple[str, str]] = field(default_factory=Counter)
    # fuzz-stage functions called on behalf of a reference request, by module
    reference_fuzz: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls, "modules": len(self.modules), "edges": len(self.edges),
            "climbs": sum(self.climbs.values()),
            "climb_edges": {f"{a} -> {b}": n for (a, b), n in self.climbs.items()},
            "reference_fuzz_calls": sum(self.reference_fuzz.values()),
            "reference_fuzz_modules": dict(self.reference_fuzz),
            "stages": {STAGE_NAMES[n]: sum(c for m, c in self.modules.items()
                                           if stage(m) == n)
                       for n in sorted({stage(m) for m in self.modules} - {None})},
        }


def _caller(frame: FrameType) -> str | None:
    """The module of the nearest gpusem frame above `frame` (a callback passed through
    a library frame is still called by the gpusem code that called the library)."""
    up = frame.f_back
    while up is not None:
        name = up.f_globals.get("__name__", "")
        if stage(name) is not None:
            return str(name)
        up = up.f_back
    return None


def _is_request(frame: FrameType) -> bool:
    return frame.f_code.co_name in REFERENCE_REQUESTS and \
        stage(frame.f_globals.get("__name__", "")) == STAGES["fuzz"]


def _on_behalf_of_reference(frame: FrameType) -> bool:
    """Whether `frame` runs for a reference request without being called by the
    requesting module itself (its own bookkeeping is the fuzzer's business)."""
    caller = _caller(frame)
    up = frame.f_back
    while up is not None:
        if _is_request(up):
            return caller != up.f_globals.get("__name__")
        up = up.f_back
    return False


# the Bundl target's methods that obtain a program's reference outcome
REFERENCE_REQUESTS = ("_reference", "_full_reference")


def record(check: Any) -> CallPath:
    """Run `check()` under the profiler; the calls it makes into gpusem."""
    path = CallPath()

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        callee = str(frame.f_globals.get("__name__", ""))
        to = stage(callee)
        if to is None:
            return
        path.calls += 1
        path.modules[callee] += 1
        if to == STAGES["fuzz"] and not _is_request(frame) and \
                _on_behalf_of_reference(frame):
            path.reference_fuzz[callee] += 1
        caller = _caller(frame)
        if caller is None or caller == callee:
            return
        path.edges[(caller, callee)] += 1
        frm = stage(caller)
        assert frm is not None
        if to > frm:
            path.climbs[(caller, callee)] += 1

    sys.setprofile(profile)
    try:
        check()
    finally:
        sys.setprofile(None)
    return path


MIN_STATEMENTS = 10  # the round's first programs are often empty: nothing to measure


def one_program(seed: int) -> Any:
    """The first general-generator program (not race-free by construction) of at least
    MIN_STATEMENTS statements of round 0 of a `compile` campaign seeded `seed`."""
    from gpusem.calculus.bundl.walk import statement_count
    from gpusem.fuzz.bundl.sample import draw_round
    from gpusem.fuzz.bundl.target import BundlTarget

    for generated in draw_round(BundlTarget("cpu").strategy("compile"), seed, 0):
        if not generated.race_free_by_construction and \
                statement_count(generated.program) >= MIN_STATEMENTS:
            return generated
    raise SystemExit("no general-generator program in round 0: try another --seed")


def measure(seed: int = 0) -> tuple[CallPath, str]:
    """The call path of one program's `compile` verdict, and the verdict."""
    from gpusem.fuzz.bundl.target import BundlTarget

    generated = one_program(seed)
    target = BundlTarget("cpu")
    out: list[Any] = []
    try:
        path = record(lambda: out.append(target.check(generated, "compile")))
    finally:
        target.close()
    res = out[0]
    return path, f"{res.status} {res.kind}".strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write the counts here")
    args = ap.parse_args(argv)
    path, verdict = measure(args.seed)
    report = {"seed": args.seed, "verdict": verdict, **path.as_dict()}
    for key in ("verdict", "calls", "modules", "edges", "climbs",
                "reference_fuzz_calls"):
        print(f"{key:22} {report[key]}")
    print(f"{'calls by stage':22} {report['stages']}")
    for edge, n in report["climb_edges"].items():
        print(f"  climb {edge} ({n} calls)")
    for module, n in report["reference_fuzz_modules"].items():
        print(f"  reference judged in {module} ({n} calls)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
