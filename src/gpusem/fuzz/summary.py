"""What a campaign reports: one `Finding` per distinct bug and the `Summary` of a
campaign or of one of its shards (counts, findings, coverage), mergeable across shards
and engines (`fuzz/engines/`), and the source of every report (`fuzz/reports.py`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# where they lived before fuzz/interrupts.py: the CLI and the engines import them here
from gpusem.fuzz.interrupts import Interrupted, install_signal_handlers

__all__ = ["MIN_RATE_S", "Cause", "Finding", "Interrupted", "Summary", "causes",
           "install_signal_handlers", "rate_per_min", "rate_text"]

OUTCOMES = ("pass", "finding", "invalid", "skip")
# the reason `not_compared` gives a program whose check ended in gpusem's own error
# (a finding of kind internal: reported, never a verdict on the program)
INTERNAL_REASON = "internal error of gpusem"
MIN_RATE_S = 1.0  # seconds of work below which no rate is reported


def rate_per_min(programs: int, seconds: float) -> float | None:
    """`programs` per minute over `seconds` of wall time; None below MIN_RATE_S."""
    if seconds < MIN_RATE_S:
        return None
    return 60.0 * max(0, programs) / seconds


def rate_text(rate: float | None) -> str:
    return "rate n/a (under 1 s)" if rate is None else f"{rate:,.0f}/min"


@dataclass
class Finding:
    signature: str
    kind: str
    detail: str
    size: int  # statements of the program in the bundle (after shrinking)
    bundle: str  # its folder in the store
    shrunk: bool
    found_after_s: float  # campaign time when the failure was first seen, before shrinking
    shrink_s: float = 0.0  # time spent shrinking it afterwards
    size_before: int = 0  # statements of the program as first seen
    prop: str = ""
    target: str = ""
    duplicates: int = 0  # later sightings of the same signature (counted, not rewritten)
    new: bool = True  # False: the store held this signature before this campaign
    attribution: str = ""  # whose bug (fuzz/attribution.py's verdict), where known
    cause: str = ""  # attribution.cause_of: "<verdict>:<checks>", "" = its signature
    known: bool = False  # the baseline (--baseline) holds it: it does not fail the run

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def cause_key(self) -> str:
        return self.cause or self.signature


@dataclass(frozen=True)
class Cause:
    """Findings with one attributed cause (DESIGN.md: one cause, one signature, where
    the evidence says two signatures are one cause: the same verdict and check)."""

    key: str
    findings: tuple[Finding, ...]

    @property
    def signatures(self) -> list[str]:
        return [f.signature for f in self.findings]

    @property
    def attribution(self) -> str:
        return next((f.attribution for f in self.findings if f.attribution), "")


def causes(findings: list[Finding]) -> list[Cause]:
    """The findings grouped by cause, in the order their causes first appear."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.cause_key, []).append(f)
    return [Cause(k, tuple(fs)) for k, fs in groups.items()]


@dataclass
class Summary:
    programs: int = 0
    invalid: int = 0
    skipped: int = 0
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    failed: list[str] = field(default_factory=list)  # shards (`--jobs` processes) that died
    # pieces a cluster engine stopped waiting for at the campaign's end (issue 31.1):
    # begun within the budget, not back by its end + 10%; their programs not counted
    cut: list[str] = field(default_factory=list)
    seen_elsewhere: int = 0  # findings another shard of the campaign had already recorded
    unconfirmed: int = 0  # timeouts that did not happen again with a longer limit
    interrupted: str = ""  # "SIGINT" / "SIGTERM" when the campaign was stopped early
    # why the circuit breaker stopped it (fuzz/breaker.py: one internal error in a
    # large share of the programs), "" when it did not
    stopped: str = ""
    # property -> outcome (OUTCOMES) -> programs
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)
    # property -> rule/construct -> programs that exercised it; and the programs measured
    coverage: dict[str, dict[str, int]] = field(default_factory=dict)
    coverage_programs: dict[str, int] = field(default_factory=dict)
    # property -> configuration -> programs it compared (a toolchain matrix's
    # configurations, from `CheckResult.configs`: not every one checks every program)
    by_configuration: dict[str, dict[str, int]] = field(default_factory=dict)
    # property -> reason -> programs not compared (invalid or not runnable here), the
    # reason being the result's `kind` (issue 31.6: what share was differentially
    # tested, and why the rest was not)
    not_compared: dict[str, dict[str, int]] = field(default_factory=dict)
    found: int = 0  # findings so far, in progress snapshots (whose `findings` is empty)
    resumed: int = 0  # of `programs`, those an earlier run checked (`--resume`)
    # the stored bundles replayed first (--corpus): fuzz/replay.CorpusRow.as_dict()
    corpus: list[dict[str, Any]] = field(default_factory=list)
    # seconds of fuzzing (the longest shard's), and of shrinking findings (all
    # shrinks added up; beside the fuzzing where a shrinker ran them, issue 31.1)
    fuzz_s: float = 0.0
    shrink_s: float = 0.0

    @property
    def rate_per_min(self) -> float | None:
        """Programs this run checked per minute of its wall time; None under
        MIN_RATE_S of it, where one program more or less swings the rate by orders
        of magnitude (a finished campaign resumed reported 7,552,014/min)."""
        return rate_per_min(self.programs - self.resumed, self.seconds)

    @property
    def compared(self) -> int:
        """Programs whose verdict was a pass or a finding of the program: checked
        against the reference, not set aside as invalid or not runnable here, and
        not ended by an internal error of gpusem (counted in `not_compared` under
        INTERNAL_REASON: stop 30's z3-less device call counted its 13,653 internal
        errors as compared programs)."""
        internal = sum(per.get(INTERNAL_REASON, 0) for per in self.not_compared.values())
        return max(0, self.programs - self.invalid - self.skipped - internal)

    @property
    def internal(self) -> list[Finding]:
        """Findings that are errors of gpusem itself (exit code 3), but for those the
        baseline knows."""
        return [f for f in self.findings if f.kind == "internal" and not f.known]

    @property
    def failing(self) -> list[Finding]:
        """Findings that fail the run (exit code 1): all but the baseline's."""
        return [f for f in self.findings if not f.known]

    @property
    def finding_count(self) -> int:
        return max(len(self.findings), self.found)

    def count(self, prop: str, outcome: str, n: int = 1) -> None:
        per = self.outcomes.setdefault(prop, dict.fromkeys(OUTCOMES, 0))
        per[outcome] = per.get(outcome, 0) + n

    def count_configs(self, prop: str, configs: tuple[str, ...] | list[str],
                      n: int = 1) -> None:
        if not configs:
            return
        per = self.by_configuration.setdefault(prop, {})
        for config in configs:
            per[config] = per.get(config, 0) + n

    def count_not_compared(self, prop: str, reason: str, n: int = 1) -> None:
        per = self.not_compared.setdefault(prop, {})
        key = reason or "unspecified"
        per[key] = per.get(key, 0) + n

    def merge(self, other: Summary) -> None:
        self.programs += other.programs
        self.resumed += other.resumed
        self.invalid += other.invalid
        self.skipped += other.skipped
        self.seconds = max(self.seconds, other.seconds)
        self.fuzz_s = max(self.fuzz_s, other.fuzz_s)
        self.shrink_s += other.shrink_s
        self.failed += other.failed
        self.cut += other.cut
        self.seen_elsewhere += other.seen_elsewhere
        self.found += other.found
        self.unconfirmed += other.unconfirmed
        self.interrupted = self.interrupted or other.interrupted
        self.stopped = self.stopped or other.stopped
        for prop, per in other.outcomes.items():
            for outcome, n in per.items():
                self.count(prop, outcome, n)
        for prop, table in other.coverage.items():
            mine = self.coverage.setdefault(prop, {})
            for rule, n in table.items():
                mine[rule] = mine.get(rule, 0) + n
        for prop, n in other.coverage_programs.items():
            self.coverage_programs[prop] = self.coverage_programs.get(prop, 0) + n
        for prop, per_config in other.by_configuration.items():
            for config, n in per_config.items():
                self.count_configs(prop, (config,), n)
        for prop, per_reason in other.not_compared.items():
            for reason, n in per_reason.items():
                self.count_not_compared(prop, reason, n)
        seen = {f.signature: f for f in self.findings}
        for f in other.findings:
            mine_f = seen.get(f.signature)
            if mine_f is None:
                seen[f.signature] = f
                continue
            # one finding, met by two shards: the shrunk one, else the smaller
            # program (a shrunk finding's bundle holds its program: a smaller
            # sighting, never shrunk, describes a program no bundle holds), every
            # sighting counted, the earliest time, and new if either shard created
            # its bundle
            keep = min(mine_f, f, key=lambda x: (not x.shrunk, x.size))
            seen[f.signature] = Finding(**(keep.as_dict() | {
                "duplicates": mine_f.duplicates + f.duplicates + 1,
                "found_after_s": min(mine_f.found_after_s, f.found_after_s),
                "new": mine_f.new or f.new}))
        self.findings = sorted(seen.values(), key=lambda f: f.signature)

    def coverage_per_10k(self, prop: str) -> dict[str, float]:
        """Programs per 10,000 that exercised each rule or construct (`prop`'s table)."""
        n = self.coverage_programs.get(prop, 0)
        return {rule: round(1e4 * k / n, 1) for rule, k in
                sorted(self.coverage.get(prop, {}).items())} if n else {}
