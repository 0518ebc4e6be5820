"""`gpusem reduce` for every target (issue 32.8): a bundle's program, or a program
file, shrunk by the target's own reducer (`Target.minimise`) through the target
interface, so a plugin's target is reduced exactly as a built-in one: the target
reads the program back from its files (`load_program(files, meta)`, optional in the
interface), checks it (it must fail the property now), and `minimise(program,
result, prop, budget_s=)` shrinks it while the signature stays.

Progress: every check the reducer makes passes through a counter, and `on_progress`
gets a `ReduceProgress` after each one (checks, the smallest failing size so far,
seconds), so the CLI can say how it goes (`reduce` ran two minutes without a word).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusem.calculus.errors import BadInput
from gpusem.fuzz.bundle import read_bundle
from gpusem.fuzz.shrink_jobs import minimise_within
from gpusem.fuzz.targets import (
    CheckResult,
    Target,
    bundle_fault,
    checked,
    load_target,
)


@dataclass(frozen=True)
class ReduceProgress:
    checks: int  # candidates checked so far
    size: int  # the smallest failing program's size so far (statements or lines)
    start_size: int
    elapsed_s: float


@dataclass(frozen=True)
class ReducedFinding:
    files: dict[str, str]  # the reduced program's bundle files
    target: str
    prop: str
    signature: str
    before: int
    after: int
    checks: int
    seconds: float


def reduce_bundle(bundle_dir: str | Path, prop: str | None = None,
                  backend: str | None = None, budget_s: float = 300.0,
                  on_progress: Callable[[ReduceProgress], None] | None = None,
                  ) -> ReducedFinding:
    """Shrink the program of the bundle at `bundle_dir` (any target) while `prop`
    (default: the bundle's property) fails with the signature it fails with now."""
    b = read_bundle(bundle_dir)
    return reduce_files(b.target, b.files, b.meta, prop or str(b.meta["property"]),
                        backend or str(b.meta["backend"]), budget_s, on_progress)


def reduce_files(target_name: str, files: dict[str, str], meta: dict[str, Any],
                 prop: str, backend: str = "cpu", budget_s: float = 300.0,
                 on_progress: Callable[[ReduceProgress], None] | None = None,
                 ) -> ReducedFinding:
    """Shrink the program `files` hold (as a bundle holds it) for `target_name`."""
    if not budget_s > 0:
        raise BadInput(f"bad budget: {budget_s} s (must be more than 0 s)")
    target = load_target(target_name, backend)
    try:
        if prop not in target.properties:
            raise BadInput(f"unknown property: {prop} (target {target_name}: "
                           f"{', '.join(target.properties)})")
        load = getattr(target, "load_program", None)
        if load is None or type(target).minimise is Target.minimise:
            raise BadInput(f"reduce: target {target_name} cannot reduce a program (it "
                           "needs load_program(files, meta) and minimise: "
                           "docs/plugins.md)")
        try:
            program = load(files, dict(meta) | {"property": prop})
        except KeyError as err:
            raise BadInput(f"reduce: the program's files lack {err} (target "
                           f"{target_name})") from None
        # a bundle found under a seeded fault is reduced with it on, as it replays
        with bundle_fault(meta):
            return _reduce(target, target_name, program, prop, budget_s, on_progress)
    finally:
        target.close()


def _reduce(target: Target, name: str, program: Any, prop: str, budget_s: float,
            on_progress: Callable[[ReduceProgress], None] | None) -> ReducedFinding:
    t0 = time.monotonic()
    first = checked(target, program, prop)
    if first.status != "finding":
        raise BadInput(f"not interesting: property {prop} holds on the program as "
                       f"given ({first.status}{': ' + first.detail if first.detail else ''})")
    counter = _Counter(target, first, t0, on_progress)
    try:
        res = minimise_within(target, program, first, prop,
                              max(0.0, budget_s - (time.monotonic() - t0)))
    finally:
        counter.restore()
    if res.status != "finding" or res.signature != first.signature:
        res = first  # a reducer that lost the finding: keep what was given
    return ReducedFinding(dict(res.files), name, prop, res.signature, first.size,
                          res.size, counter.checks, time.monotonic() - t0)


class _Counter:
    """Counts the target's checks while its reducer runs (an attribute on the
    instance, so the reducer's own calls to `self.check` pass through it)."""

    def __init__(self, target: Target, first: CheckResult, t0: float,
                 on_progress: Callable[[ReduceProgress], None] | None) -> None:
        self.target, self.checks, self.best = target, 0, first.size
        self.had_own = "check" in vars(target)
        inner = target.check

        def check(program: Any, prop: str) -> CheckResult:
            res = inner(program, prop)
            self.checks += 1
            if res.status == "finding" and res.signature == first.signature:
                self.best = min(self.best, res.size or self.best)
            if on_progress is not None:
                on_progress(ReduceProgress(self.checks, self.best, first.size,
                                           time.monotonic() - t0))
            return res

        target.check = check  # type: ignore[method-assign]

    def restore(self) -> None:
        if not self.had_own:
            del self.target.check


__all__ = ["ReduceProgress", "ReducedFinding", "reduce_bundle", "reduce_files"]
