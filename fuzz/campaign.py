"""The generic campaign runner behind `gpusem fuzz`, for every target (issues 5 and 7).

A target (`fuzz.targets.Target`, found through the `gpusem.targets` entry points)
provides:

  name, properties, backends
  strategy(prop)            a hypothesis strategy of programs
  check(program, prop)      -> CheckResult ("pass" | "finding" | "invalid")
  size(program)             statements, for reports
  finding_meta(result)      extra bundle metadata (versions, device)
  replay(files, meta)       -> CheckResult, re-run from a bundle's files
  close()
  minimise(program, res, prop) -> CheckResult   (optional: passes after hypothesis's)
  prefetch(programs, prop) -> bool   (optional: batch-check a round; True when `check`
                            of those programs is now a cache look-up)

How a campaign runs. Work is cut into *rounds*; round r is a hypothesis run of at most
`round_size` programs seeded by hash(seed, r), so a campaign is deterministic from its
seed, and `--shard I/N` takes the rounds r = I (mod N) without overlap (`--jobs J` splits
a shard further into J local processes, shard I*J+j of N*J). Within a round the first
finding whose signature is new is *hunted*: the test raises for that signature only,
hypothesis shrinks it, and the minimal program is written as a bundle. Other new
signatures met meanwhile are kept unshrunk and written at the end if never hunted.
A target that batch-checks (`prefetch`) has the round generated and checked once; only
a round with a new signature is run again under hypothesis, to shrink (most rounds find
nothing new: this halves generation and avoids re-checking programs hypothesis does not
draw identically twice).
Shrinking may overrun the budget by 10% + 30 s; past that the smallest failure found so
far is written. Hypothesis shrinks one finding for at most a fifth of the budget (at
least a minute) before the target's reducer takes over.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusem.calculus.errors import BadInput, GpusemError
from gpusem.fuzz.summary import Finding, Summary
from gpusem.fuzz.targets import CheckResult, checked, load_target
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hseed


def hard_stop_s(budget_s: float) -> float:
    """Campaign seconds after which hypothesis stops shrinking: the budget + 10% + 30 s
    (a target's own reducer may still run after it, within its own cap)."""
    return 1.1 * budget_s + 30


class _Hunted(Exception):
    """Raised inside the hypothesis test for the signature being shrunk."""


@dataclass
class Campaign:
    target_name: str
    backend: str = "cpu"
    prop: str = "compile"
    budget_s: float = 60.0
    seed: int = 0
    shard: tuple[int, int] = (0, 1)
    out_dir: str = "fuzz-out"
    round_size: int = 25
    max_programs: int | None = None
    on_progress: Callable[[Summary], None] | None = None
    since: float | None = None  # wall-clock start shared by the jobs of one campaign

    def run(self) -> Summary:
        target = load_target(self.target_name, self.backend)
        if self.prop not in target.properties:
            raise BadInput(f"unknown property: {self.prop} for target "
                           f"{self.target_name} ({', '.join(target.properties)})")
        self.summary = Summary()
        self.known: set[str] = set()
        self.pending: dict[str, CheckResult] = {}
        self.first_seen: dict[str, float] = {}  # signature -> campaign seconds
        self.t0 = time.monotonic()
        self.wall0 = self.since if self.since is not None else time.time()
        try:
            r = self.shard[0]
            while not self._out_of_budget():
                self._round(target, r)
                r += self.shard[1]
            for _sig, res in sorted(self.pending.items()):
                if not self._is_known(res):
                    self._record(target, res, shrunk=False)
        finally:
            target.close()
            self.summary.seconds = time.monotonic() - self.t0
        return self.summary

    def _elapsed(self) -> float:
        return time.monotonic() - self.t0

    def _is_known(self, res: CheckResult) -> bool:
        """Recorded by this job, or by another job of the same campaign (`--jobs`): its
        bundle, written since the campaign began, is in the shared out dir, so this job
        does not shrink the same finding again. (Older bundles in the out dir do not
        count: a new campaign reports what it finds.)"""
        from gpusem.fuzz.bundle import bundle_name

        if res.signature in self.known:
            return True
        meta = Path(self.out_dir) / bundle_name(self.target_name, res.kind,
                                                res.signature) / "bundle.json"
        try:
            recorded = meta.stat().st_mtime >= self.wall0
        except OSError:
            return False
        if recorded:
            self.known.add(res.signature)
            self.summary.seen_elsewhere += 1
        return recorded

    def _out_of_budget(self) -> bool:
        if self.max_programs is not None and self.summary.programs >= self.max_programs:
            return True
        return time.monotonic() - self.t0 >= self.budget_s

    def _prefetch(self, target, r: int) -> list | None:
        """Targets whose checks are cheaper in batches (one g++ build or NVRTC module
        for many kernels) get the round's programs first: a generate-only run with the
        round's seed draws (nearly always) the sequence the checking run would, and the
        target caches the batched verdicts that `check` then finds. The programs, or
        None when the target cached nothing for this property."""
        programs: list = []

        def collect(program) -> None:
            programs.append(program)

        test = settings(max_examples=self.round_size, database=None, deadline=None,
                        phases=[Phase.generate], suppress_health_check=list(HealthCheck))(
            given(target.strategy(self.prop))(collect))
        hseed(_round_seed(self.seed, r))(test)()
        return programs if target.prefetch(programs, self.prop) else None

    def _quiet_round(self, target, programs: list) -> bool:
        """Count a prefetched round directly when it holds no new signature (the
        verdicts are the same `check`s the hypothesis run would make). False, with the
        new signature kept as pending, when it must be hunted by a shrinking run."""
        results = [checked(target, p, self.prop) for p in programs]
        for res in results:
            if res.status == "finding" and not self._is_known(res):
                self.first_seen.setdefault(res.signature, self._elapsed())
                self.pending.setdefault(res.signature, res)  # if the rerun misses it
                return False
        for res in results:
            if self.max_programs is not None and self.summary.programs >= self.max_programs:
                break  # (all were checked in budget: only --max-programs cuts them)
            self.summary.programs += 1
            self.summary.invalid += res.status == "invalid"
            self.summary.skipped += res.status == "skip"
        if self.on_progress:
            self.on_progress(self.summary)
        return True

    def _past_hard_stop(self) -> bool:
        return time.monotonic() - self.t0 >= hard_stop_s(self.budget_s)

    def _hunt_too_long(self, since: float) -> bool:
        """Hypothesis's shrinking of one finding gets a fifth of the budget (at least a
        minute): where every check is a compile (one NVRTC build per candidate on the
        cuda backend), it would otherwise eat the campaign; the target's own reducer
        (`minimise`, batched) takes over from the smallest failure so far."""
        return time.monotonic() - since >= max(60.0, 0.2 * self.budget_s)

    def _round(self, target, r: int) -> None:
        state: dict[str, Any] = {"hunting": None, "last": None}
        if hasattr(target, "prefetch"):
            programs = self._prefetch(target, r)
            if programs is not None and self._quiet_round(target, programs):
                return

        def body(program) -> None:
            hunting = state["hunting"]
            if hunting is None and self._out_of_budget():
                return
            if hunting is not None and (self._past_hard_stop()
                                        or self._hunt_too_long(state["since"])):
                return  # stop shrinking: the smallest failure so far is kept

            res = checked(target, program, self.prop)
            if hunting is None:
                self.summary.programs += 1
                if self.on_progress:
                    self.on_progress(self.summary)
            if res.status in ("invalid", "skip"):
                if hunting is None and res.status == "invalid":
                    self.summary.invalid += 1
                elif hunting is None:
                    self.summary.skipped += 1
                return
            if res.status != "finding" or self._is_known(res):
                return
            self.first_seen.setdefault(res.signature, self._elapsed())
            if hunting is None:
                state["hunting"], state["since"] = res.signature, time.monotonic()
            if res.signature == state["hunting"]:
                state["last"] = (program, res)
                raise _Hunted(res.signature)
            self.pending.setdefault(res.signature, res)

        test = settings(max_examples=self.round_size, database=None, deadline=None,
                        derandomize=False, report_multiple_bugs=False,
                        phases=[Phase.generate, Phase.shrink],
                        suppress_health_check=list(HealthCheck))(
            given(target.strategy(self.prop))(body))
        test = hseed(_round_seed(self.seed, r))(test)
        try:
            test()
        except _Hunted:
            pass
        except GpusemError:
            raise
        except Exception as err:  # noqa: BLE001 - hypothesis Flaky etc.
            state["error"] = err  # the last failing example is still recorded below
        if state["last"] is not None:
            program, res = state["last"]
            if hasattr(target, "minimise"):  # target-specific passes after hypothesis
                res = target.minimise(program, res, self.prop)
            self._record(target, res, shrunk=True)

    def _record(self, target, res: CheckResult, shrunk: bool) -> None:
        from gpusem.fuzz.bundle import write_bundle

        self.known.add(res.signature)
        meta = {"target": self.target_name, "backend": self.backend,
                "property": self.prop, "signature": res.signature, "kind": res.kind,
                "detail": res.detail, "size": res.size, "shrunk": shrunk,
                "seed": self.seed, "shard": list(self.shard),
                "found_after_s": round(self.first_seen.get(res.signature,
                                                           self._elapsed()), 2)}
        meta |= target.finding_meta(res)
        path = write_bundle(self.out_dir, meta, res.files)
        found = self.first_seen.get(res.signature, self._elapsed())
        self.summary.findings.append(Finding(
            res.signature, res.kind, res.detail, res.size, str(path), shrunk,
            found, self._elapsed() - found))
        if self.on_progress:
            self.on_progress(self.summary)


def _round_seed(seed: int, r: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{r}".encode()).digest()[:8], "little")
