"""Which stages one generated program's verdict passes through (issue 25, item 3).

Draws ONE program of the Bundl `compile` property as a campaign draws it (the
property's strategy, round 0 of `--seed`, the first program of the general generator:
not race-free by construction, so its reference needs the race proof), then asks the
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
  reference   the same counts for the part of the path below the fuzz stage's
              request for the reference outcome: the stage sequence of the modules
              the reference's computation enters (consecutive repeats merged) and
              how often it comes back up to the fuzz stage before it is decided

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
    # the stages entered while the fuzz stage waits for a reference outcome
    reference_walk: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        walk = self.reference_walk
        return {
            "calls": self.calls, "modules": len(self.modules), "edges": len(self.edges),
            "climbs": sum(self.climbs.values()),
            "climb_edges": {f"{a} -> {b}": n for (a, b), n in self.climbs.items()},
            "reference_stages": [STAGE_NAMES[s] for s in walk],
            "reference_returns_to_fuzz": sum(
                1 for a, b in zip(walk, walk[1:]) if b == STAGES["fuzz"] > a),
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


def _asks_reference(frame: FrameType) -> bool:
    """Whether the fuzz stage's request for the reference outcome is on the stack."""
    up: FrameType | None = frame
    while up is not None:
        if up.f_code.co_name in REFERENCE_REQUESTS and \
                stage(up.f_globals.get("__name__", "")) == STAGES["fuzz"]:
            return True
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
        caller = _caller(frame)
        if caller is None or caller == callee:
            return
        path.edges[(caller, callee)] += 1
        frm = stage(caller)
        assert frm is not None
        if to > frm:
            path.climbs[(caller, callee)] += 1
        if _asks_reference(frame) and (not path.reference_walk
                                       or path.reference_walk[-1] != to):
            path.reference_walk.append(to)

    sys.setprofile(profile)
    try:
        check()
    finally:
        sys.setprofile(None)
    return path


def one_program(seed: int) -> Any:
    """The first general-generator program (not race-free by construction) of round 0
    of a `compile` campaign seeded `seed`."""
    from gpusem.fuzz.bundl.sample import draw_round
    from gpusem.fuzz.bundl.target import BundlTarget

    for generated in draw_round(BundlTarget("cpu").strategy("compile"), seed, 0):
        if not generated.race_free_by_construction:
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
                "reference_returns_to_fuzz"):
        print(f"{key:26} {report[key]}")
    print(f"{'reference stages':26} {' -> '.join(report['reference_stages'])}")
    for edge, n in report["climb_edges"].items():
        print(f"  climb {edge} ({n} calls)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
