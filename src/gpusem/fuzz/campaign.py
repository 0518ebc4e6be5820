"""The campaign loop behind `gpusem fuzz`, for every target (issues 5, 7, 13, 15, 18):
one shard of a campaign, run in one process (`fuzz/engines/` run many).

A target (`fuzz.targets.Target`, found through the `gpusem.targets` entry points)
provides `strategy(prop)`, `check(program, prop)`, `size`, `replay`, `finding_meta`,
`close`, and optionally `prefetch` (batch-check a round), `minimise` (shrink further
than hypothesis), `confirm` (re-check a timeout), `program_files`, `coverage` and
`begin_round` (told the shard's round number k before each round, None before a
shrink: a target may check some rounds less, as the Bundl `toolchain` property builds
nvcc-G on every K-th round only). A verdict's `configs` (the configurations that
compared the program) are counted per configuration (`Summary.by_configuration`).

Rounds. Work is cut into *rounds*; round r is a hypothesis run of `round_size` programs
seeded by hash(seed, r), so a campaign is deterministic from its seed, and a shard
(I, N) takes the rounds r = I (mod N) without overlap. A round is generated once
(`fuzz/hunt.generate_round`, keeping each program's choice sequence), batch-checked
(`prefetch`) where the target can, and checked program by program.

Findings. A finding whose signature is new is written to the bundle store at once
(`fuzz/bundle.BundleStore.claim`: atomic, never overwriting) and then shrunk in place:
hypothesis replays the very example that failed and shrinks from it
(`fuzz/hunt.shrink_from`), then the target's own reducer (`minimise`) goes further;
each stage's result replaces the bundle's files. Where the target has `attribute`, a
new finding is attributed here, once, before it is shrunk (`_attribute_found`: this
shard has the target's backend loaded), and again for the shrunk program when its
shrink completes; a shrink cut at the deadline keeps the first, which names the
program it is of (`fuzz/attribution.py`, AS_FOUND). A signature met again (in this shard,
another shard, or an earlier campaign in the same out dir) is counted as a sighting of
its bundle, not rewritten. A `timeout` is reported only if `confirm` sees it again.
Any exception of gpusem's own code (a check, the generator, the batch check, the
reducer) becomes a finding of kind `internal` (exit 3), bundled like any other.

Budgets. No new program is checked past `budget_s` (or `max_programs`); a round's
generation stops and its batch check (`prefetch`) is cut to the programs the budget
left has time for (at the campaign's rate so far), so the last round does not run
past the budget. The shrinking of one finding, hypothesis's and then the target's
reducer (`minimise`) together, is bounded by `hunt_cap_s` (`--shrink-time`; default
$GPUSEM_SHRINK_S, else a fifth of the budget, at least a minute): hypothesis stops at
its share of it (half, or the target's `hypothesis_share`, or its
`hypothesis_share_of(prop)`: none for the Bundl compiler properties on the cpu
backend, whose reducer checks its candidates in batches where hypothesis builds each
one alone) and the reducer gets what is left (issue 32.8: the reducer had its own
cap of a minute, so `--shrink-time 5` shrank for 90 s).
With a `shrinker` (`fuzz/shrink_jobs.py`; the engines give one) a new finding is
shrunk beside the fuzzing, in a process or task of its own, and every shrink also
ends by `shrink_end_s` (the budget + 4%): the campaign keeps its budget whatever it
finds, and `Summary.fuzz_s` / `shrink_s` report the two times apart (issue 31.1).
Without one (a `Campaign` run by hand) the finding is shrunk in this process after
its round, never past the hard stop (budget + 10% + 30 s); past the budget one shrink
still runs, later findings are kept as first seen.

Interruption. Ctrl-C or SIGTERM, recorded by the caller's handler
(`fuzz/interrupts.py`) and raised as `Interrupted` before the next program (or a
KeyboardInterrupt where no handler is installed), ends the shard with
`Summary.interrupted` set and its summary returned; what it found is already on disk, and its progress record (`fuzz/manifest`)
lets `--resume` continue from the next round.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpusem.calculus.errors import BadInput
from gpusem.fuzz import manifest
from gpusem.fuzz.attribution import (
    AS_FOUND,
    SHRUNK,
    cause_of,
    of_program,
    program_digest,
    recorded,
)
from gpusem.fuzz.breaker import CircuitBreaker
from gpusem.fuzz.bundle import ATTRIBUTION, META, BundleStore, recorded_attribution
from gpusem.fuzz.clock import monotonic_at
from gpusem.fuzz.gc_tuning import campaign_gc
from gpusem.fuzz.hunt import (
    DEFAULT_GENERATION,
    Drawn,
    check_generation,
    generate_round,
    shrink_from,
)
from gpusem.fuzz.interrupts import raise_if_requested, stop_requested
from gpusem.fuzz.shrink_jobs import (
    JOB_MARGIN_S,
    ShrinkJob,
    ShrinkOutcome,
    attribution_of,
    blame_from,
    default_shrink_s,
    hunt_share,
    minimise_within,
    shrink_end_s,
)
from gpusem.fuzz.summary import INTERNAL_REASON, Finding, Interrupted, Summary
from gpusem.fuzz.targets import (
    INTERNAL,
    CheckResult,
    Target,
    checked,
    crash_result,
    internal_result,
    is_timeout,
    load_target,
)

TIMEOUT = "timeout"  # the kind of a timeout that happened again with a longer limit
FIRST_BATCH = 5  # programs batch-checked before the campaign knows its rate
IMPROVE_EVERY_S = 0.5  # a shrink job's improvements told to `on_improve`, at most


def hard_stop_s(budget_s: float) -> float:
    """Campaign seconds after which hypothesis stops shrinking: the budget + 10% + 30 s
    (a target's own reducer may still run after it, within its own cap)."""
    return 1.1 * budget_s + 30


@dataclass
class _Open:
    """A new finding being shrunk: its bundle and what it was when first seen."""

    res: CheckResult
    drawn: Drawn
    index: int
    path: Path
    first_seen: float
    size_before: int


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
    # time.time() when the campaign's clock started, shared by its shards (the
    # command's process start: `fuzz/clock.py`); None: when this shard starts
    since: float | None = None
    resume: bool = False  # continue from the shard's progress record in out_dir
    coverage: bool = False  # count the rules/constructs each program exercises
    on_finding: Callable[[Finding], None] | None = None  # each finding, once, when final
    hunt_cap_s: float | None = None  # hypothesis's time per finding (None: the rule below)
    # (k0, k1): only the shard's rounds k0 <= k < k1 (round r = I + k·N), a *piece* of
    # the shard that an engine runs as one task (fuzz/engines/pieces.py); the engine
    # keeps the record of finished pieces, so no progress record is written
    window: tuple[int, int] | None = None
    # who shrinks new findings (`fuzz/shrink_jobs.Shrinker`); None: this process,
    # after the round that met them
    shrinker: Any = None
    # each state of a finding's bundle as written, (meta, files): a cluster's shrink
    # task publishes its best so far, kept if the campaign ends first (engines/dask)
    on_improve: Callable[[dict[str, Any], dict[str, str]], None] | None = None
    # how a round is drawn (`hunt.GENERATIONS`): the same seed draws other programs in
    # another mode, so it is recorded wherever a seed names a program (manifest, bundles)
    generation: str = DEFAULT_GENERATION
    # time.time() when the campaign this one is a piece of began: what it reports
    # (found_after_s, sightings) counts from there (a Dask piece's clock starts late)
    reported_since: float | None = None

    def run(self) -> Summary:
        with campaign_gc():  # a campaign's garbage, collected less often (why: there)
            return self._run()

    def _run(self) -> Summary:
        check_generation(self.generation)  # before a target is loaded
        target = load_target(self.target_name, self.backend)
        if self.prop not in target.properties:
            target.close()
            raise BadInput(f"unknown property: {self.prop} for target "
                           f"{self.target_name} ({', '.join(target.properties)})")
        self.summary = Summary()
        self.store = BundleStore(self.out_dir)
        self.found: dict[str, Finding] = {}  # signature -> this shard's finding
        # signature -> the attribution.json of its program as found (`_seen`), and
        # that program's digest (`attribution.program_digest`)
        self._as_found: dict[str, str] = {}
        self._found_digest: dict[str, str] = {}
        self.overtime_shrinks = 0  # shrinks begun past the budget (at most one runs)
        # hypothesis's share of --shrink-time: a target may declare its own
        # (`hypothesis_share`: small where its reducer is the better shrinker)
        self._hunt_share = hunt_share(target, self.prop)
        self.shrink_until: float | None = None  # a shrink job's deadline (monotonic)
        self.batch_floor_s = 0.0  # the quickest batch check so far: its fixed cost
        self.slowest_per_program_s = 0.0  # the slowest batch's seconds per program
        self.no_time_for_a_batch = False  # the budget left is shorter than that
        self.breaker = CircuitBreaker()  # one internal error on every other program
        self.t0 = time.monotonic() if self.since is None else monotonic_at(self.since)
        self._report_offset = (0.0 if self.reported_since is None
                               else max(0.0, self.t0 - monotonic_at(self.reported_since)))
        r = self._start_round()
        end = (None if self.window is None
               else self.shard[0] + self.window[1] * self.shard[1])
        try:
            while not self._out_of_budget() and (end is None or r < end):
                self._round(target, r)
                r += self.shard[1]
                if self.window is None:
                    self._save_progress(r)
        except _Tripped:  # a systematic internal error: its round is not recorded
            pass  # as done, so a --resume after the fix checks it again
        except KeyboardInterrupt as stop:  # SIGINT, or SIGTERM raised as Interrupted
            self.summary.interrupted = (stop.signal_name if isinstance(stop, Interrupted)
                                        else "SIGINT")
        finally:
            try:
                target.close()
            finally:
                self.summary.fuzz_s = time.monotonic() - self.t0
                self._collect_shrinks()
                self.summary.seconds = time.monotonic() - self.t0
                self.summary.findings = sorted(self.found.values(),
                                               key=lambda f: f.signature)
        return self.summary

    # ------------------------------------------------------------------ budgets

    def _elapsed(self) -> float:
        return time.monotonic() - self.t0

    def _reported_s(self) -> float:  # campaign seconds, as reports give them
        return self._elapsed() + getattr(self, "_report_offset", 0.0)

    def _out_of_budget(self) -> bool:
        raise_if_requested()  # Ctrl-C / SIGTERM, recorded by the handler (interrupts.py)
        if self.max_programs is not None and self.summary.programs >= self.max_programs:
            return True
        return self.no_time_for_a_batch or self._elapsed() >= self.budget_s

    def _enough_programs(self) -> bool:
        return (self.max_programs is not None
                and self.summary.programs >= self.max_programs)

    def _spent(self) -> bool:
        """The time budget is spent (a signal is asked about between programs)."""
        return self._elapsed() >= self.budget_s

    def _generation_stop(self) -> Callable[[], bool]:
        """Generation stops when the budget is spent or (asked before each program) at
        what --max-programs leaves: the whole round's prefix, not 100 drawn for 30."""
        cap, asked = self.max_programs, itertools.count()
        left = float("inf") if cap is None else cap - self.summary.programs
        return lambda: next(asked) >= left or self._spent()

    def _past_hard_stop(self) -> bool:
        return self._elapsed() >= hard_stop_s(self.budget_s)

    def shrink_cap_s(self) -> float:
        """Seconds the shrinking of one finding may take, hypothesis and the target's
        reducer together: `hunt_cap_s` (--shrink-time), else $GPUSEM_SHRINK_S, else a
        fifth of the budget (at least a minute). Where every check is a compile (one
        NVRTC build per candidate on the cuda backend) shrinking would otherwise eat
        the campaign."""
        if self.hunt_cap_s is not None:
            return self.hunt_cap_s
        return default_shrink_s(self.budget_s)
    def _past_shrink_deadline(self) -> bool:
        if self.shrink_until is None:
            return self._past_hard_stop()
        return time.monotonic() >= self.shrink_until

    def _hunt_too_long(self, since: float) -> bool:
        """Hypothesis's shrinking has used its share of the cap: all of it, or half
        (or the target's `hypothesis_share`) where the target has its own reducer
        (`minimise`, batched: on the cuda backend one build checks a whole batch of
        candidates, where hypothesis builds once per candidate), which then takes
        over from the smallest failure so far with what is left."""
        share = self._hunt_share
        return time.monotonic() - since >= share * self.shrink_cap_s()

    # ------------------------------------------------------------------ progress

    def _start_round(self) -> int:
        if self.window is not None:
            return self.shard[0] + self.window[0] * self.shard[1]
        if not self.resume:
            return self.shard[0]
        done = manifest.load_progress(self.out_dir, self.prop, self.shard)
        if done is None:
            return self.shard[0]
        s = self.summary
        s.programs, s.invalid, s.skipped = (int(done.get(k, 0)) for k in (
            "programs", "invalid", "skipped"))
        s.resumed = s.programs  # checked by an earlier run: not in this run's rate
        s.outcomes = {self.prop: dict(done.get("outcomes", {}))}
        s.coverage = {self.prop: dict(done.get("coverage", {}))} if self.coverage else {}
        if self.coverage:
            s.coverage_programs = {self.prop: int(done.get("coverage_programs", 0))}
        if done.get("by_configuration"):
            s.by_configuration = {self.prop: {
                c: int(n) for c, n in dict(done["by_configuration"]).items()}}
        if done.get("not_compared"):
            s.not_compared = {self.prop: {
                r: int(n) for r, n in dict(done["not_compared"]).items()}}
        return int(done["next_round"])

    def _save_progress(self, next_round: int) -> None:
        s = self.summary
        manifest.save_progress(self.out_dir, self.prop, self.shard, {
            "next_round": next_round, "programs": s.programs, "invalid": s.invalid,
            "skipped": s.skipped, "outcomes": s.outcomes.get(self.prop, {}),
            "coverage": s.coverage.get(self.prop, {}),
            "coverage_programs": s.coverage_programs.get(self.prop, 0),
            "by_configuration": s.by_configuration.get(self.prop, {}),
            "not_compared": s.not_compared.get(self.prop, {}),
            "findings": sorted(self.found)})

    def _tick(self) -> None:
        if self.on_progress:
            self.summary.found = len(self.found)
            self.on_progress(self.summary)

    # ------------------------------------------------------------------ a round

    def _round(self, target: Target, r: int) -> None:
        seed = round_seed(self.seed, r)
        strategy = target.strategy(self.prop)
        begin = getattr(target, "begin_round", None)  # optional for a plugin
        if begin is not None:
            begin((r - self.shard[0]) // self.shard[1])  # this shard's round number
        try:
            drawn = generate_round(strategy, seed, self.round_size,
                                   self._generation_stop(), self.generation)
        except Exception as err:  # noqa: BLE001 - the generator crashed
            self._internal(target, internal_result(err, stage="generate"))
            return
        opened: list[_Open] = []
        ready = 0  # programs of the round batch-checked so far
        for i, d in enumerate(drawn):
            # a batch paid for is counted whole (its verdicts are cached: checking
            # them is a lookup); the budget is asked about before the next batch
            raise_if_requested()
            if self._enough_programs() or (i >= ready and self._out_of_budget()):
                break
            if i >= ready:
                ready = self._prefetch(target, drawn, i)
                if ready <= i:  # no time left for even one batch
                    break
            res = self._check(target, d.program)
            self.summary.programs += 1
            self.summary.count(self.prop, res.status)
            self.summary.invalid += res.status == "invalid"
            self.summary.skipped += res.status == "skip"
            self.summary.count_configs(self.prop, res.configs)
            if res.status in ("invalid", "skip"):
                self.summary.count_not_compared(self.prop, res.kind)
            elif res.kind == INTERNAL:  # a finding of gpusem's, not of the program
                self.summary.count_not_compared(self.prop, INTERNAL_REASON)
            if self.coverage:
                self._cover(target, d.program)
            if res.status == "finding":
                new = self._seen(target, res, d, i)
                if new is not None and self.shrinker is not None:
                    self._hand_over(seed, new)  # shrunk from now on, beside the round
                elif new is not None:
                    opened.append(new)
            self._tick()
            self._trip_if_systematic()
        if begin is not None and opened:
            begin(None)  # shrinking is no round's: every check in full
        for o in opened:
            self._shrink(target, strategy, seed, o)

    def _trip_if_systematic(self) -> None:
        """Stop the shard (`_Tripped`) when one internal error is systematic
        (`fuzz/breaker.py`): its findings are kept, the summary says why."""
        why = self.breaker.tripped(self.summary.programs - self.summary.resumed)
        if why:
            self.summary.stopped = why
            raise _Tripped(why)

    def _prefetch(self, target: Target, drawn: list[Drawn], i: int) -> int:
        """Batch-check programs i.. of the round (where the target can): all of them,
        or as many as half the budget left has time for at the campaign's rate so
        far, so that a campaign does not run a whole round past its budget. Returns
        the index up to which programs are batch-checked."""
        if not hasattr(target, "prefetch"):
            return i + 1  # checked one by one: the budget is asked before each
        n = len(drawn) - i
        done = self.summary.programs - self.summary.resumed
        if done > 0 and self.max_programs is None:
            # the slowest batch's rate, not only the average: a round whose findings
            # each take their full reference runs 3-4x the average (the CI run where
            # a 96-program batch began 5.7 s before the end and took 8.3 s)
            per_program = max(self._elapsed() / done, self.slowest_per_program_s)
            left = self.budget_s - self._elapsed()
            if left < self.batch_floor_s:  # even the smallest batch would overrun:
                self.no_time_for_a_batch = True  # end a moment early, not late
                return i
            # half the time left at most: batches shrink as the end nears, so one
            # that meets slow programs (a finding's full reference) overruns little
            n = max(1, min(n, int(0.5 * left / per_program)))
        elif done == 0:  # no rate yet: a first batch that cannot outlast the budget
            n = min(n, FIRST_BATCH)
        first = done == 0
        since, batch = time.monotonic(), [d.program for d in drawn[i:i + n]]
        until = getattr(target, "prefetch_until", None)
        try:
            if until is not None and self.max_programs is None:
                # the target itself stops at the budget's end: the programs it had
                # no time for are not checked (a round of findings, each confirmed
                # by its full reference, ran seconds past it)
                done = until(batch, self.prop, self.t0 + self.budget_s)
                if done is not None and done < n:
                    self.no_time_for_a_batch = True
                    n = done
            else:
                target.prefetch(batch, self.prop)
        except Exception as err:  # noqa: BLE001 - checked one by one below
            self._internal(target, crash_result(target, err, stage="prefetch"))
        took = time.monotonic() - since
        if not first:  # the first batch also starts the backend (a CUDA worker and its
            # context: seconds): kept as the slowest rate, it cut every later batch
            # to a few programs, each an NVRTC call of its own (regress31)
            self.slowest_per_program_s = max(self.slowest_per_program_s,
                                             took / max(n, 1))
        self.batch_floor_s = took if not self.batch_floor_s else min(
            self.batch_floor_s, took)
        return i + n

    def _check(self, target: Target, program: Any, count: bool = True) -> CheckResult:
        res = checked(target, program, self.prop)
        if not is_timeout(res):
            return res
        try:
            again = target.confirm(program, res, self.prop)
        except Exception as err:  # noqa: BLE001
            return crash_result(target, err, stage="confirm")
        if again.status == "finding" and again.signature == res.signature:
            return replace(again, kind=TIMEOUT)  # confirmed: classified `timeout`
        self.summary.unconfirmed += count  # a watchdog under load, not a bug
        return CheckResult("pass", detail=f"timeout not confirmed: {res.detail}")

    def _cover(self, target: Target, program: Any) -> None:
        measure = getattr(target, "coverage", None)
        if measure is None:
            return
        try:
            rules = measure(program)
        except Exception as err:  # noqa: BLE001
            self._internal(target, crash_result(target, err, stage="coverage"))
            return
        table = self.summary.coverage.setdefault(self.prop, {})
        if not table and hasattr(target, "coverage_labels"):  # rules at 0 show too
            table.update(dict.fromkeys(target.coverage_labels(), 0))
        for rule in rules:
            table[rule] = table.get(rule, 0) + 1
        self.summary.coverage_programs[self.prop] = (
            self.summary.coverage_programs.get(self.prop, 0) + 1)

    # ------------------------------------------------------------------ findings

    def _meta(self, target: Target, res: CheckResult, **extra: Any) -> dict:
        meta = {"target": self.target_name, "backend": self.backend,
                "property": self.prop, "signature": res.signature, "kind": res.kind,
                "detail": res.detail, "size": res.size, "seed": self.seed,
                "shard": list(self.shard), "generation": self.generation} | extra
        if res.program_file:
            meta |= {"program_file": res.program_file, "line": max(1, res.line)}
        if found := attribution_of(res):
            meta["attribution"] = recorded(found, res.signature, res.files,
                                           res.program_file)
        try:
            meta |= target.finding_meta(res)
        except Exception as err:  # noqa: BLE001 - metadata is best effort
            meta["meta_error"] = f"{type(err).__name__}: {err}"
        return meta

    def _seen(self, target: Target, res: CheckResult, d: Drawn, i: int) -> _Open | None:
        """First meeting of a signature in this shard: write it (new: returned, to be
        shrunk) or count a sighting of the bundle another shard or campaign wrote."""
        if res.kind == INTERNAL:
            self.breaker.hit(res.signature)
        known = self.found.get(res.signature)
        if known is not None:
            known.duplicates += 1
            self.store.sighting(Path(known.bundle), self._sighting())
            return None
        at = self._reported_s()
        meta = self._meta(target, res, shrunk=False, state="shrinking",
                          size_before=res.size, found_after_s=round(at, 2))
        path, created = self.store.claim(meta, res.files)
        finding = Finding(res.signature, res.kind, res.detail, res.size, str(path),
                          False, at, size_before=res.size, prop=self.prop,
                          target=self.target_name, new=created)
        self.found[res.signature] = finding
        if not created:
            # "" where its writer is still attributing it
            finding.attribution, finding.cause = recorded_attribution(path)
            self.summary.seen_elsewhere += 1
            self.store.sighting(path, self._sighting())
            self._announce(finding)
            return None
        res = self._attribute_found(target, res, finding)
        return _Open(res, d, i, path, at, res.size)

    def _attribute_found(self, target: Target, res: CheckResult, finding: Finding
                         ) -> CheckResult:
        """A new finding attributed where it was found, once per signature, its
        `attribution.json` written into the bundle at once: this shard has the target
        and its backend loaded (the campaign's main process never loads CuPy, by
        design), and a shrink cut at the deadline, or never begun, leaves a final
        bundle with no other attribution (stop 29: 3 of 6 classes had none). The
        cost is one attribution per class: a few seconds of one shard on a GPU
        (the toolchain matrix, builds cached), the cpu harness on the cpu backend.
        The bundle keeps it while it shrinks (`_with_as_found`), naming the program
        it was computed for (AS_FOUND and its digest)."""
        self._found_digest[res.signature] = program_digest(res.files, res.program_file)
        res = self._attributed(target, res)
        found = attribution_of(res)
        if not found:
            return res  # a property the target does not attribute
        self._as_found[res.signature] = res.files[ATTRIBUTION]
        blame_from(finding, res)
        meta = self._meta(target, res, shrunk=False, state="shrinking",
                          size_before=res.size,
                          found_after_s=round(finding.found_after_s, 2))
        self.store.update(Path(finding.bundle), meta, res.files)
        return res

    def _with_as_found(self, res: CheckResult) -> CheckResult:
        """`res` (a partly shrunk program) with the attribution of the program as
        found, which names that program: a bundle cut now keeps it."""
        carried = self._as_found.get(res.signature)
        if carried is None or ATTRIBUTION in res.files:
            return res
        return replace(res, files=dict(res.files) | {ATTRIBUTION: carried})

    def _sighting(self) -> dict[str, Any]:
        return {"seed": self.seed, "shard": list(self.shard),
                "after_s": round(self._reported_s(), 2)}

    def _internal(self, target: Target, res: CheckResult) -> None:
        """An internal error met outside a program's check: bundled, not shrunk."""
        if self._seen(target, res, Drawn(None, None), -1) is not None:
            self._finish(target, self.found[res.signature], res, shrunk=False,
                         state="done")

    def _shrink(self, target: Target, strategy: Any, seed: int, o: _Open) -> None:
        finding = self.found[o.res.signature]
        # the smallest failing program by the target's size, not hypothesis's last:
        # hypothesis orders candidates by its own choice sequence, and a candidate it
        # prefers can hold more statements than the program found (a lambda-cu
        # finding of 40 statements was reported "shrunk" to 47)
        best: list[Any] = [o.res, o.drawn.program]
        since = time.monotonic()

        def fails(program: Any) -> bool:  # a shrunk timeout must be confirmed too
            res = self._check(target, program, count=False)
            if res.status == "finding" and res.signature == o.res.signature:
                if res.size < best[0].size:
                    self._improved(res)
                if res.size <= best[0].size:
                    best[0], best[1] = res, program
                return True
            return False

        ran_out = [False]  # its deadline or a signal stopped it, not its own end

        def stop() -> bool:  # a signal ends the shrink; the round loop then stops
            if stop_requested() or self._past_shrink_deadline():
                ran_out[0] = True
                return True
            return self._hunt_too_long(since)

        if self.shrink_until is None and self._out_of_budget():
            # inline, past the budget: one shrink, no more
            self.overtime_shrinks += 1
            if self.overtime_shrinks > 1:
                self._finish(target, finding, o.res, shrunk=False, state="done")
                return
        if o.index >= 0 and not stop():
            try:
                shrink_from(strategy, seed, o.drawn, o.index, self.round_size, fails,
                            stop)
            except Exception as err:  # noqa: BLE001
                self._internal(target, internal_result(err, stage="shrink"))
        if best[0].size < o.size_before:
            self._finish(target, finding, best[0], shrunk=False)  # kept if killed now
        res, program = best[0], best[1]
        left = self.shrink_cap_s() - (time.monotonic() - since)
        by_deadline = False
        if self.shrink_until is not None:  # a shrink job: also by its deadline, with
            # time to write its result before the shrinker stops waiting for it
            end = self.shrink_until - time.monotonic() - JOB_MARGIN_S
            by_deadline, left = end < left, min(left, end)

        def on_step(smaller: CheckResult) -> None:  # a job cut now keeps it
            if smaller.signature == res.signature and smaller.size < res.size:
                self._finish(target, finding, smaller, shrunk=False)

        began = time.monotonic()
        if hasattr(target, "minimise") and left > 0 and not stop_requested():
            try:  # target-specific passes after hypothesis, in what is left
                smaller = minimise_within(
                    target, program, res, self.prop, left,
                    on_step if self.shrink_until is not None else None)
                if smaller.signature == res.signature and smaller.size <= res.size:
                    res = smaller
            except Exception as err:  # noqa: BLE001
                self._internal(target, crash_result(target, err, stage="minimise"))
        if hasattr(target, "minimise") and by_deadline:  # the deadline cut it, unless
            # it says it reached its fixpoint (`shrink_stats`: Bundl's, Prism's), or
            # (a reducer that does not say) it came back before its time was up
            stats = getattr(target, "shrink_stats", {}).get(res.signature)
            used_up = time.monotonic() >= began + left - JOB_MARGIN_S
            ran_out[0] |= left <= 0 or bool(stats["capped"] if stats else used_up)
        ran_out[0] |= bool(stop_requested())
        finding.shrink_s = time.monotonic() - since
        self.summary.shrink_s += finding.shrink_s
        # Note: `shrunk` is a step made, or a shrink that ended by itself (issue
        # 31.1: a Dask shrink handed over at the budget's end was reported shrunk
        # after 0 s); one its deadline stopped is cut, step or not, as a shrinker's
        # cut says (`attribution.kept_on_cut`: the two race at the deadline)
        shrunk = res.size < o.size_before or not ran_out[0]
        self._finish(target, finding, res, shrunk=shrunk, state="done", cut=ran_out[0])

    # ------------------------------------------------------------------ shrink jobs

    def _hand_over(self, seed: int, o: _Open) -> None:
        """The new finding `o` to the shrinker beside this campaign."""
        spec = {"target_name": self.target_name, "backend": self.backend,
                "prop": self.prop, "budget_s": self.budget_s, "seed": self.seed,
                "shard": self.shard, "out_dir": self.out_dir,
                "round_size": self.round_size, "hunt_cap_s": self.hunt_cap_s,
                "generation": self.generation}
        self.shrinker.submit(ShrinkJob(
            spec, seed, o.drawn, o.index, o.res, str(o.path), o.first_seen,
            o.size_before, self.t0 + shrink_end_s(self.budget_s)))

    def _collect_shrinks(self) -> None:
        """Wait for the shrinker (until the shrink deadline; at once when the
        campaign was interrupted) and take its final findings."""
        if self.shrinker is None:
            return
        deadline = (time.monotonic() if self.summary.interrupted
                    else self.t0 + shrink_end_s(self.budget_s))
        for out in self.shrinker.finish(deadline):
            self.summary.shrink_s += sum(f.shrink_s for f in out.findings
                                         if f.signature == out.signature)
            for f in out.findings:
                mine = self.found.get(f.signature)
                if mine is not None:
                    f.duplicates, f.new = mine.duplicates, mine.new
                self.found[f.signature] = f
                self._announce(f)

    def shrink_job(self, job: ShrinkJob, deadline: float) -> ShrinkOutcome:
        """Run `job` in this process (a shrinker's), writing its bundle in
        `out_dir` as it improves; by `deadline` (time.monotonic()) at the latest."""
        target = load_target(self.target_name, self.backend)
        self.summary, self.store = Summary(), BundleStore(self.out_dir)
        self.overtime_shrinks, self.shrink_until = 0, deadline
        self._hunt_share = hunt_share(target, self.prop)
        self.t0 = time.monotonic() - job.first_seen  # campaign seconds, near enough
        res = job.res
        finding = Finding(res.signature, res.kind, res.detail, res.size, job.bundle,
                          False, job.first_seen, size_before=job.size_before,
                          prop=self.prop, target=self.target_name)
        self.found = {res.signature: finding}
        self._as_found = ({res.signature: res.files[ATTRIBUTION]}
                          if ATTRIBUTION in res.files else {})
        self._found_digest = {res.signature: program_digest(res.files,
                                                            res.program_file)}
        self._last_improve = 0.0
        self._first_meta: dict[str, Any] = {}
        if self.on_improve is not None:
            try:  # the bundle as its piece wrote it: what each improvement updates
                self._first_meta = json.loads((Path(job.bundle) / META).read_text())
            except (OSError, ValueError):
                pass
        try:
            self._shrink(target, target.strategy(self.prop), job.seed, _Open(
                res, job.drawn, job.index, Path(job.bundle), job.first_seen,
                job.size_before))
        finally:
            target.close()
        return ShrinkOutcome(res.signature, list(self.found.values()))

    def _improved(self, res: CheckResult) -> None:
        """A smaller failure met while hypothesis shrinks, told to `on_improve` (at
        most every IMPROVE_EVERY_S; the bundle is written when hypothesis ends): a
        shrink task cut at the campaign's end reports the last one (issue 31.1)."""
        first = getattr(self, "_first_meta", None)  # a shrink job's (shrink_job)
        if self.on_improve is None or not first:
            return
        now = time.monotonic()
        if now - self._last_improve < IMPROVE_EVERY_S:
            return
        self._last_improve = now
        meta = dict(first, size=res.size, detail=res.detail,
                    state="shrinking", shrunk=False)
        if res.program_file:
            meta |= {"program_file": res.program_file, "line": max(1, res.line)}
        res = self._with_as_found(res)
        if found := attribution_of(res):
            meta["attribution"] = recorded(found, res.signature, res.files,
                                           res.program_file)
        self.on_improve(meta, dict(res.files))

    def _finish(self, target: Target, finding: Finding, res: CheckResult,
                shrunk: bool, state: str = "", cut: bool = False) -> None:
        finding.size, finding.detail, finding.shrunk = res.size, res.detail, shrunk
        if (state or ("done" if shrunk else "shrinking")) == "done":
            # a cut shrink keeps the as-found attribution as the cut paths do
            # (attribution.kept_on_cut): one bundle whoever writes it, none past it
            keep = cut and ATTRIBUTION not in res.files and res.signature in self._as_found
            res = self._with_as_found(res) if keep else self._attributed(target, res)
            found = attribution_of(res)
            finding.attribution = found.get("verdict", "")
            finding.cause = cause_of(found, finding.signature) if found else ""
        else:
            res = self._with_as_found(res)
        meta = self._meta(target, res, shrunk=shrunk,
                          state=state or ("done" if shrunk else "shrinking"),
                          size_before=finding.size_before,
                          found_after_s=round(finding.found_after_s, 2),
                          shrink_s=round(finding.shrink_s, 2),
                          **({"shrink_cut": True} if cut else {}))
        self.store.update(Path(finding.bundle), meta, res.files)
        if self.on_improve is not None:
            self.on_improve(meta, dict(res.files))
        if meta["state"] == "done":
            self._announce(finding)
        self._tick()

    def _attributed(self, target: Target, res: CheckResult) -> CheckResult:
        """`res` with its `attribution.json` (`fuzz/attribution.py`): the target's
        optional `attribute(result, prop)` re-runs it under the toolchain matrix,
        when the finding is new (`_attribute_found`) and again when it is final, if
        its program is not the one found (SHRUNK). A failure of attribution is
        reported in it, never lost with the finding. One the check made itself
        (the `toolchain` property's) is of `res`'s program: it is named so."""
        digest = program_digest(res.files, res.program_file)
        which = AS_FOUND if self._found_digest.get(res.signature,
                                                   digest) == digest else SHRUNK
        if ATTRIBUTION in res.files:
            made = attribution_of(res)
            if not made or made.get("program_sha256"):
                return res
            text = json.dumps(of_program(made, which, digest), indent=1,
                              sort_keys=True) + "\n"
            return replace(res, files=dict(res.files) | {ATTRIBUTION: text})
        attribute = getattr(target, "attribute", None)
        if attribute is None:
            return res
        carried = self._as_found.get(res.signature)
        if carried is not None and json.loads(carried).get("program_sha256") == digest:
            return replace(res, files=dict(res.files) | {ATTRIBUTION: carried})
        try:
            found = attribute(res, self.prop)
        except Exception as err:  # noqa: BLE001 - the finding comes first
            found = {"verdict": "undecided", "rule": "attribution-failed",
                     "evidence": [f"{type(err).__name__}: {err}"[:300]]}
        if not found:
            return res
        found = of_program(found, which, digest)
        text = json.dumps(found, indent=1, sort_keys=True) + "\n"
        return replace(res, files=dict(res.files) | {ATTRIBUTION: text})

    def _announce(self, finding: Finding) -> None:
        if self.on_finding is not None:
            self.on_finding(finding)


class _Tripped(Exception):
    """The circuit breaker stopped the shard (`Summary.stopped` says why)."""


def round_seed(seed: int, r: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{r}".encode()).digest()[:8], "little")
