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
import multiprocessing as mp
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any, Final

from gpusem.calculus.errors import BadInput, GpusemError
from gpusem.fuzz.targets import (
    RUNTIME_TARGETS,
    CheckResult,
    checked,
    load_target,
    register_target,
)
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hseed


@dataclass
class Finding:
    signature: str
    kind: str
    detail: str
    size: int
    bundle: str
    shrunk: bool
    found_after_s: float  # campaign time when the failure was first seen, before shrinking
    shrink_s: float = 0.0  # time spent shrinking it afterwards


@dataclass
class Summary:
    programs: int = 0
    invalid: int = 0
    skipped: int = 0
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    failed: list[str] = field(default_factory=list)  # `--jobs` processes that died
    seen_elsewhere: int = 0  # findings another job of the campaign had already recorded

    @property
    def rate_per_min(self) -> float:
        return 60.0 * self.programs / self.seconds if self.seconds else 0.0

    def merge(self, other: Summary) -> None:
        self.programs += other.programs
        self.invalid += other.invalid
        self.skipped += other.skipped
        self.seconds = max(self.seconds, other.seconds)
        self.failed += other.failed
        self.seen_elsewhere += other.seen_elsewhere
        seen = {f.signature: f for f in self.findings}
        for f in other.findings:
            if f.signature not in seen or f.size < seen[f.signature].size:
                seen[f.signature] = f
        self.findings = sorted(seen.values(), key=lambda f: f.signature)


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


# ------------------------------------------------------------------------ jobs

JOB_START: Final = "spawn"  # never fork: the parent may hold threads (rich), z3 or a CUDA context
JOB_GRACE_S = 120.0  # past a campaign's hard stop, before a silent job is given up


class JobFailed(GpusemError):
    """A `--jobs` process died or hung; the other jobs' results are still merged."""


def run_jobs(base: dict, jobs: int, on_tick=None) -> Summary:
    """Run `jobs` local processes over disjoint sub-shards; merge their summaries.

    Children are *spawned* (fresh interpreters that import what they need), so neither
    the parent's threads and locks nor an initialised CUDA context can leak into them.
    Each child writes its running counts into its own slots of a shared array (the
    parent's progress bar sums them) and sends one message at the end: its Summary, or
    the error that ended it. A child that exits without a message, or outlives its
    campaign's hard stop by JOB_GRACE_S, is reported in `Summary.failed`, never waited
    for forever. Ctrl-C in the parent stops every child."""
    if jobs <= 1:
        return Campaign(**base, on_progress=on_tick).run()
    ctx = mp.get_context(JOB_START)
    counts = ctx.Array("q", 4 * jobs, lock=False)  # one writer per slot
    queue = ctx.Queue()
    i, n = base["shard"]
    factory = RUNTIME_TARGETS.get(base["target_name"])
    since = time.time()  # the jobs skip findings a sibling recorded after this
    procs = [ctx.Process(target=_child, name=f"gpusem-job{j}", args=(
        j, factory, dict(base, shard=(i * jobs + j, n * jobs), since=since), counts,
        queue))
        for j in range(jobs)]
    try:
        for p in procs:
            p.start()
        return _collect(base, procs, counts, queue, on_tick)
    finally:  # normal end: all have exited; Ctrl-C or an error here: stop them
        _stop(procs)


def _collect(base: dict, procs: list, counts, queue, on_tick) -> Summary:
    total, pending = Summary(), set(range(len(procs)))
    give_up = time.monotonic() + hard_stop_s(base["budget_s"]) + JOB_GRACE_S

    def take(msg) -> None:
        kind, j, payload = msg
        pending.discard(j)
        if kind == "done":
            total.merge(payload)
        else:
            total.failed.append(f"job {j} failed: {payload}")

    while pending:
        try:
            take(queue.get(timeout=0.5))
        except Empty:
            pass
        if on_tick is not None:
            on_tick(_snapshot(counts, len(procs)))
        for j in sorted(pending):
            if procs[j].exitcode is None and time.monotonic() < give_up:
                continue
            while pending and (msg := _get_nowait(queue)) is not None:
                take(msg)  # a child's message is flushed before it exits
            if j in pending:
                pending.discard(j)
                total.failed.append(f"job {j} {_death(procs[j])}")
    # Bundle folders are named by signature, so jobs that meet one finding write one
    # folder; `merge` keeps the smallest program per signature in the summary.
    return total


def _get_nowait(queue):
    try:
        return queue.get(timeout=0.05)
    except Empty:
        return None


def _death(proc) -> str:
    code = proc.exitcode
    if code is None:
        return "did not finish by its campaign's hard stop (stopped)"
    if code < 0:
        return f"died ({signal.Signals(-code).name}) without a result"
    return f"exited with status {code} without a result"


def _stop(procs: list) -> None:
    """SIGTERM (a child runs its `finally`s: backend workers closed), then SIGKILL."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + 5.0
    for p in procs:
        if p.pid is None:
            continue  # never started
        p.join(max(0.1, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join(1.0)


def _snapshot(counts, jobs: int) -> Summary:
    col = [sum(counts[4 * j + k] for j in range(jobs)) for k in range(4)]
    return Summary(programs=col[0], invalid=col[1], skipped=col[2],
                   findings=[None] * col[3])  # type: ignore[list-item]


def _child(j: int, factory, args: dict, counts, queue) -> None:
    """One job. Ctrl-C goes to the whole process group: the parent alone handles it
    (children and their harness workers ignore SIGINT; a kernel worker killed by it
    would read as a crash finding). SIGTERM from the parent ends the campaign through
    its `finally`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_on_term)
    if factory is not None:  # a target registered at run time in the parent
        register_target(args["target_name"], factory)

    def progress(s: Summary) -> None:
        for k, v in enumerate((s.programs, s.invalid, s.skipped, len(s.findings))):
            counts[4 * j + k] = v

    try:
        summary = Campaign(**args, on_progress=progress).run()
    except SystemExit:
        raise
    except BaseException as err:  # reported to the parent, then re-raised
        queue.put(("error", j, f"{type(err).__name__}: {err}".replace("\n", " ")[:300]))
        raise
    queue.put(("done", j, summary))


def _exit_on_term(signum, frame) -> None:
    raise SystemExit(128 + signum)
