"""A finding's shrinking as a job of its own (issue 31.1: budgets kept whatever a
campaign finds).

A shard that meets a new finding writes its bundle at once and goes on fuzzing; the
shrinking is a `ShrinkJob` handed to a *shrinker* beside it: a process of its own on
this machine (`fuzz/shrinker.py`, the local engine) or a task of its own on the
cluster (`fuzz/engines/dask.py`). So no fuzzing worker waits while a finding shrinks,
and shrinking ends at the campaign's shrink deadline (`shrink_end_s`: the budget and a
tail of SHRINK_TAIL of it), with the smallest failure found by then in the bundle.
The shrinker runs at a lower priority than the fuzzing (`shrinker.NICENESS`).

A shrinker is anything with `submit(job)` and `finish(deadline) -> [ShrinkOutcome]`
(what came back by `deadline`; jobs still running then are stopped, their bundles keep
their last improvement). This module is below both the campaign loop and the
shrinkers, so neither imports the other's process machinery. It also holds what a
finding's shrinking is given: the default --shrink-time (`default_shrink_s`),
hypothesis's share of it (`hunt_share`) and the target's reducer within a time
(`minimise_within`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpusem.calculus.errors import BadInput
from gpusem.fuzz.attribution import cause_of, in_files
from gpusem.fuzz.summary import Finding
from gpusem.fuzz.targets import CheckResult, Target

# Past the budget, the share of it that shrinking still under way may take: a
# campaign ends within its budget + 10% (issue 31.1), the rest is teardown.
SHRINK_TAIL = 0.04
HUNT_SHARE = 0.5  # of --shrink-time, hypothesis's most where the target has a reducer


# A shrink job's reducer ends this long before the job's deadline, so that its
# result is written (attributed, bundled) and handed back while the shrinker still
# waits for it (`shrinker.STOP_GRACE_S` before the deadline on this machine): a
# reducer that ran to the deadline itself was always reported cut.
JOB_MARGIN_S = 1.0


def shrink_end_s(budget_s: float) -> float:
    """Campaign seconds by which every shrink has ended."""
    return budget_s * (1.0 + SHRINK_TAIL)


@dataclass(frozen=True)
class ShrinkJob:
    """Shrink the finding `res` (a CheckResult) of bundle `bundle`: the `index`-th
    program (`drawn`, with its choice sequence) of the round seeded `seed`; `spec`:
    the shard's Campaign keyword arguments (plain values); `first_seen`: campaign
    seconds when it was met; `deadline`: time.monotonic() by which it ends (this
    machine's clock: a job sent elsewhere is re-timed by its receiver)."""

    spec: dict[str, Any] = field(hash=False)
    seed: int = 0
    drawn: Any = None
    index: int = -1
    res: Any = None
    bundle: str = ""
    first_seen: float = 0.0
    size_before: int = 0
    deadline: float = 0.0

    @property
    def signature(self) -> str:
        return str(self.res.signature)


@dataclass
class ShrinkOutcome:
    """What a shrink ended with: the findings as final (the job's, and any internal
    error the shrinking met), and, for a shrinker without the campaign's file system,
    each one's bundle as (meta, files) by signature."""

    signature: str
    findings: list[Any]
    bundles: dict[str, tuple[dict[str, Any], dict[str, str]]] = field(
        default_factory=dict)
    cut: bool = False  # stopped at the deadline before it ended by itself


class Shrinker(Protocol):
    def submit(self, job: ShrinkJob) -> None: ...

    def finish(self, deadline: float) -> list[ShrinkOutcome]: ...


class Deferred:
    """Keeps the jobs for someone else to run (a Dask piece hands them to its client,
    which sends each to a worker of its own)."""

    def __init__(self) -> None:
        self.jobs: list[ShrinkJob] = []

    def submit(self, job: ShrinkJob) -> None:
        self.jobs.append(job)

    def finish(self, deadline: float) -> list[ShrinkOutcome]:
        return []


def hunt_share(target: Target, prop: str | None = None) -> float:
    """Hypothesis's share of --shrink-time: a target may declare its own
    (`hypothesis_share`: small where its reducer is the better shrinker; or, per
    property, `hypothesis_share_of(prop)`: none where each of hypothesis's
    candidates is a backend build of its own and the reducer checks its candidates
    in batches); all of it where the target has no reducer."""
    if not hasattr(target, "minimise"):
        return 1.0
    of = getattr(target, "hypothesis_share_of", None)
    if of is not None and prop is not None and (share := of(prop)) is not None:
        return float(share)
    return float(getattr(target, "hypothesis_share", HUNT_SHARE))


def default_shrink_s(budget_s: float) -> float:
    """--shrink-time when not given: $GPUSEM_SHRINK_S, else a fifth of the campaign's
    budget, at least a minute."""
    raw = os.environ.get("GPUSEM_SHRINK_S", "").strip()
    if raw:
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if not value > 0:
            raise BadInput(f"bad GPUSEM_SHRINK_S: {raw} (seconds, more than 0)")
        return value
    return max(60.0, 0.2 * budget_s)


def minimise_within(target: Target, program: Any, res: CheckResult, prop: str,
                    budget_s: float,
                    on_step: Callable[[CheckResult], None] | None = None,
                    ) -> CheckResult:
    """`target.minimise` given `budget_s` seconds, where it takes them (every
    built-in target does; a plugin's `minimise(program, result, prop)` of before
    keeps its own cap); `on_step` told each smaller failure, where the reducer
    tells (the Bundl one does)."""
    import inspect

    try:
        params = inspect.signature(target.minimise).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    if "budget_s" in params and "on_step" in params and on_step is not None:
        reducer: Any = target  # on_step: beyond the interface, where it is taken
        return reducer.minimise(program, res, prop, budget_s=budget_s,
                                on_step=on_step)
    if "budget_s" in params:
        return target.minimise(program, res, prop, budget_s=budget_s)
    return target.minimise(program, res, prop)


def attribution_of(res: CheckResult) -> dict[str, Any]:
    """The finding's attribution (its `attribution.json`), {} when it has none."""
    return in_files(res.files)


def job_finding(job: ShrinkJob, bundle: str = "") -> Finding:
    """The finding of shrink job `job` as its shard met it, in `bundle` (default the
    job's own), with the attribution it was handed over with (`blame_from`)."""
    res = job.res
    finding = Finding(res.signature, res.kind, res.detail, res.size,
                      bundle or job.bundle, False, job.first_seen,
                      size_before=job.size_before, prop=str(job.spec.get("prop", "")),
                      target=str(job.spec.get("target_name", "")))
    blame_from(finding, res)
    return finding


def blame_from(finding: Finding, res: CheckResult) -> None:
    """`finding`'s verdict and cause from `res`'s attribution, where it has one (a
    shrink job's finding as handed over: attributed where it was found)."""
    if found := attribution_of(res):
        finding.attribution = str(found.get("verdict", ""))
        finding.cause = cause_of(found, finding.signature)
