"""The generic campaign runner behind `gpusem fuzz`, for every target (issues 5 and 7).

A target (registered in `TARGETS` by a lazy "module:Class" path, so Bundl and GPU IR
targets plug in without touching this file's logic) provides:

  name, properties, backends
  strategy(prop)            a hypothesis strategy of programs
  check(program, prop)      -> CheckResult ("pass" | "finding" | "invalid")
  size(program)             statements, for reports
  finding_meta(result)      extra bundle metadata (versions, device)
  replay(files, meta)       -> CheckResult, re-run from a bundle's files
  close()
  minimise(program, res, prop) -> CheckResult   (optional: passes after hypothesis's)

How a campaign runs. Work is cut into *rounds*; round r is a hypothesis run of at most
`round_size` programs seeded by hash(seed, r), so a campaign is deterministic from its
seed, and `--shard I/N` takes the rounds r = I (mod N) without overlap (`--jobs J` splits
a shard further into J local processes, shard I*J+j of N*J). Within a round the first
finding whose signature is new is *hunted*: the test raises for that signature only,
hypothesis shrinks it, and the minimal program is written as a bundle. Other new
signatures met meanwhile are kept unshrunk and written at the end if never hunted.
Shrinking may overrun the budget by 10% + 30 s; past that the smallest failure found so
far is written.
"""

from __future__ import annotations

import hashlib
import importlib
import multiprocessing as mp
import time
from dataclasses import dataclass, field

from gpusem.calculus.errors import BadInput, GpusemError
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hseed

TARGETS: dict[str, object] = {"appy": "gpusem.fuzz.appy.target:AppyTarget",
                              "bundl": "gpusem.fuzz.bundl_target:BundlTarget",
                              "gpuir": "gpusem.fuzz.gpuir_target:GpuirTarget"}


def register_target(name: str, factory) -> None:
    """Plug a target in: a lazy path `register_target("bundl", "gpusem.fuzz.x:Bundl")`
    or a class / callable taking `backend=`."""
    TARGETS[name] = factory


def load_target(name: str, backend: str):
    if name not in TARGETS:
        raise BadInput(f"unknown target: {name} (known: {', '.join(sorted(TARGETS))})")
    factory = TARGETS[name]
    if isinstance(factory, str):
        mod, _, cls = factory.partition(":")
        factory = getattr(importlib.import_module(mod), cls)
    target = factory(backend=backend)
    if backend not in target.backends:
        raise BadInput(f"unknown backend: {backend} for target {name}")
    return target


@dataclass
class CheckResult:
    status: str  # "pass" | "finding" | "invalid" (illegal) | "skip" (not runnable here)
    signature: str = ""
    kind: str = ""
    detail: str = ""
    files: dict[str, str] = field(default_factory=dict)
    size: int = 0
    seconds: float = 0.0


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

    @property
    def rate_per_min(self) -> float:
        return 60.0 * self.programs / self.seconds if self.seconds else 0.0

    def merge(self, other: Summary) -> None:
        self.programs += other.programs
        self.invalid += other.invalid
        self.skipped += other.skipped
        self.seconds = max(self.seconds, other.seconds)
        seen = {f.signature: f for f in self.findings}
        for f in other.findings:
            if f.signature not in seen or f.size < seen[f.signature].size:
                seen[f.signature] = f
        self.findings = sorted(seen.values(), key=lambda f: f.signature)


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
    on_progress: object = None  # callable(Summary) or None

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
        try:
            r = self.shard[0]
            while not self._out_of_budget():
                self._round(target, r)
                r += self.shard[1]
            for sig, res in sorted(self.pending.items()):
                if sig not in self.known:
                    self._record(target, res, shrunk=False)
        finally:
            target.close()
            self.summary.seconds = time.monotonic() - self.t0
        return self.summary

    def _elapsed(self) -> float:
        return time.monotonic() - self.t0

    def _out_of_budget(self) -> bool:
        if self.max_programs is not None and self.summary.programs >= self.max_programs:
            return True
        return time.monotonic() - self.t0 >= self.budget_s

    def _prefetch(self, target, r: int) -> None:
        """Targets whose checks are cheaper in batches (one g++ build or NVRTC module
        for many kernels) get the round's programs first: a generate-only run with the
        round's seed draws the same sequence the checking run will, and the target
        caches the batched verdicts that `check` then finds."""
        programs: list = []

        def collect(program) -> None:
            programs.append(program)

        test = settings(max_examples=self.round_size, database=None, deadline=None,
                        phases=[Phase.generate], suppress_health_check=list(HealthCheck))(
            given(target.strategy(self.prop))(collect))
        hseed(_round_seed(self.seed, r))(test)()
        target.prefetch(programs, self.prop)

    def _past_hard_stop(self) -> bool:
        """Shrinking may run past the budget by 10% + 30 s, no more."""
        return time.monotonic() - self.t0 >= 1.1 * self.budget_s + 30

    def _round(self, target, r: int) -> None:
        state = {"hunting": None, "last": None}
        if hasattr(target, "prefetch"):
            self._prefetch(target, r)

        def body(program) -> None:
            hunting = state["hunting"]
            if hunting is None and self._out_of_budget():
                return
            if hunting is not None and self._past_hard_stop():
                return  # stop shrinking: the smallest failure so far is kept

            res = _checked(target, program, self.prop)
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
            if res.status != "finding" or res.signature in self.known:
                return
            self.first_seen.setdefault(res.signature, self._elapsed())
            if hunting is None:
                state["hunting"] = res.signature
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
        from .bundle import write_bundle

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


def _checked(target, program, prop: str) -> CheckResult:
    """target.check, with an error of our own tools on a generated program (a generator
    that built an invalid program, an evaluator that rejects a valid one) turned into a
    finding of kind `internal`: shrunk and bundled like any other, never a crash of
    the campaign."""
    try:
        return target.check(program, prop)
    except GpusemError as err:
        rule = err.rule or type(err).__name__
        return CheckResult("finding", signature=f"internal:{rule}:{err.prefix}",
                           kind="internal error", detail=err.one_line()[:200],
                           files={"trace.txt": err.one_line() + "\n"},
                           size=target.size(program))


def _round_seed(seed: int, r: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{r}".encode()).digest()[:8], "little")


# ------------------------------------------------------------------------ jobs


def run_jobs(base: dict, jobs: int, on_tick=None) -> Summary:
    """Run `jobs` local processes over disjoint sub-shards; merge their summaries.

    Children report programs and findings through shared counters so that the parent's
    progress bar moves; their summaries come back through a queue."""
    if jobs <= 1:
        return Campaign(**base, on_progress=on_tick).run()
    i, n = base["shard"]
    ctx = mp.get_context("fork")
    programs, findings = ctx.Value("l", 0), ctx.Value("l", 0)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(
        dict(base, shard=(i * jobs + j, n * jobs)), programs, findings, queue))
        for j in range(jobs)]
    for p in procs:
        p.start()
    total, got = Summary(), 0
    while got < jobs:
        try:
            total.merge(queue.get(timeout=0.5))
            got += 1
        except Exception:  # noqa: BLE001 - queue.Empty: tick, notice a dead child
            if not any(p.is_alive() for p in procs) and queue.empty():
                break
        if on_tick is not None:
            snap = Summary(programs.value + 0, 0, [None] * findings.value)
            on_tick(snap)
    for p in procs:
        p.join()
    # Bundle folders are named by signature, so jobs that meet one finding write one
    # folder; `merge` keeps the smallest program per signature in the summary.
    return total


def _child(args: dict, programs, findings, queue) -> None:
    last = {"p": 0, "f": 0}

    def progress(s: Summary) -> None:
        with programs.get_lock():
            programs.value += s.programs - last["p"]
        with findings.get_lock():
            findings.value += len(s.findings) - last["f"]
        last["p"], last["f"] = s.programs, len(s.findings)

    queue.put(Campaign(**args, on_progress=progress).run())
