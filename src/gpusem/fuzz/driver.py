"""A whole campaign as a user asks for it: a typed `CampaignSpec` (a target, its
properties, a budget, where shards run), run property by property on an engine, and
a `CampaignResult` (the merged summary, the recorded parameters, the report).

`gpusem fuzz`, `gpusem.api.fuzz` and the pytest plugin all come here. Below this
module the campaign is cut into shards (`client.py`), each shard is a `Campaign`
(`campaign.py`), and an engine runs them (`engines/`); a shard travels as the plain,
picklable keyword dictionary `ShardTask.spec` (engines and plugins pickle it), which
`shard_spec` builds from the typed spec.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from gpusem.calculus.errors import BadInput
from gpusem.fuzz.baseline import load_baseline
from gpusem.fuzz.direct import DEFAULT_GENERATION, ENGINE, check_generation
from gpusem.fuzz.replay import replay_corpus
from gpusem.fuzz.reports import Report
from gpusem.fuzz.summary import Finding, Summary

OnFinding = Callable[[Finding], None]
OnProgress = Callable[[str, Summary], None]


@dataclass(frozen=True)
class CampaignSpec:
    """What to fuzz and how. `props`: the target's properties to check (empty: its
    first). `resume`: continue the campaign in `out_dir` with its recorded parameters
    (the ones given here are then ignored). `hunt_cap_s`: seconds the shrinking of
    one finding may take, hypothesis's and the target's reducer's together
    (--shrink-time; default: $GPUSEM_SHRINK_S, else a fifth of the budget, at least
    60). `engine`: who runs the shards (`fuzz/engines/registry.py`): "local" (`jobs`
    processes), "dask" (`scheduler` ADDR, or a local cluster of `jobs` workers per
    GPU among `gpus`). `baseline`: a JSON report or a folder of bundles whose findings
    are known and pass (`fuzz/baseline.py`); `corpus`: a folder of stored bundles
    replayed before anything is generated, each still failing one a finding of this
    campaign (the regression mode). `started_at`: time.time() when the campaign's
    clock starts (the budget, the shrink deadline and the report's `seconds` count
    from it): `gpusem fuzz` gives its process's start (`fuzz/clock.py`), so that
    the interpreter's start and the imports are inside the budget; None: the call.
    `generation`: how rounds are drawn (`fuzz/hunt.GENERATIONS`: "direct", "engine");
    a seed draws other programs in each, so it is recorded with the seed, and a
    resumed campaign keeps its own (one recorded before the modes: "engine")."""

    target: str = "bundl"
    props: tuple[str, ...] = ()
    budget_s: float = 60.0
    backend: str = "cpu"
    seed: int = 0
    jobs: int = 1
    shard: tuple[int, int] = (0, 1)
    out_dir: str = "fuzz-out"
    round_size: int = 100
    max_programs: int | None = None
    resume: bool = False
    coverage: bool = False
    hunt_cap_s: float | None = None
    engine: str = "local"
    scheduler: str | None = None
    gpus: str | None = None
    baseline: str | None = None
    corpus: str | None = None
    started_at: float | None = None
    generation: str = DEFAULT_GENERATION

    def params(self) -> dict[str, object]:
        """The campaign's record (`manifest.json`, the reports' `campaign`)."""
        return {"target": self.target, "backend": self.backend,
                "properties": list(self.props), "seed": self.seed,
                "shard": list(self.shard), "jobs": self.jobs,
                "round_size": self.round_size, "budget_s": self.budget_s,
                "max_programs": self.max_programs, "out_dir": self.out_dir,
                "resumed": self.resume, "engine": self.engine,
                "baseline": self.baseline, "corpus": self.corpus,
                "generation": self.generation}


@dataclass(frozen=True)
class CampaignResult:
    summary: Summary
    spec: CampaignSpec
    report: Report

    @property
    def params(self) -> dict[str, object]:
        return self.spec.params()

    @property
    def exit_code(self) -> int:
        return self.report.code


def target_properties(target: str, backend: str = "cpu") -> tuple[str, ...]:
    """The properties target `target` checks (BadInput for an unknown target)."""
    from gpusem.fuzz.targets import load_target

    probe = load_target(target, backend)
    try:
        return tuple(probe.properties)
    finally:
        probe.close()


def resolved(spec: CampaignSpec) -> CampaignSpec:
    """The spec a campaign runs: a resumed one's recorded parameters, the default
    property; BadInput for what cannot run (jobs < 1, an unknown property, cluster
    options without a cluster engine)."""
    if spec.resume:
        from gpusem.fuzz import manifest

        rec = manifest.read_campaign(spec.out_dir)
        spec = replace(spec, target=rec["target"], backend=rec["backend"],
                       seed=rec["seed"], jobs=rec["jobs"],
                       round_size=rec["round_size"], props=tuple(rec["properties"]),
                       shard=(rec["shard"][0], rec["shard"][1]),
                       # its record of finished work is its own engine's
                       engine=rec.get("engine", "local"),
                       # its rounds as it drew them: before the modes, the engine's
                       generation=rec.get("generation", ENGINE))
    if spec.jobs < 1:
        raise BadInput(f"bad jobs: {spec.jobs} (must be >= 1)")
    if not spec.budget_s > 0:  # NaN too: a campaign that cannot check anything
        raise BadInput(f"bad budget: {spec.budget_s} s (must be more than 0 s)")
    if spec.max_programs is not None and spec.max_programs < 1:
        raise BadInput(f"bad max_programs: {spec.max_programs} (must be >= 1)")
    if spec.hunt_cap_s is not None and not spec.hunt_cap_s > 0:
        raise BadInput(f"bad shrink time: {spec.hunt_cap_s} s (must be more than 0 s)")
    if spec.hunt_cap_s is None:
        from gpusem.fuzz.shrink_jobs import default_shrink_s

        default_shrink_s(spec.budget_s)  # a bad $GPUSEM_SHRINK_S: bad input, now
    if spec.round_size < 1:
        raise BadInput(f"bad round_size: {spec.round_size} (must be >= 1)")
    try:
        check_generation(spec.generation)
    except ValueError as err:
        raise BadInput(str(err)) from None
    if spec.engine == "local" and (spec.scheduler or spec.gpus):
        raise BadInput("--scheduler and --gpus are for a cluster engine (--engine dask)")
    known = target_properties(spec.target, spec.backend)
    props = spec.props or (known[0],)
    for p in props:
        if p not in known:
            raise BadInput(f"unknown property: {p} (target {spec.target}: "
                           f"{', '.join(known)})")
    return replace(spec, props=tuple(props))


def ready(spec: CampaignSpec) -> None:
    """The campaign's preflight, on this machine (a cluster engine asks its workers
    too: `engines/dask.py`): every property's requirements (`targets.preflight`:
    the modules the target declares, tried in a child process, and its probe);
    BadInput, one line naming the module and the target that needs it, for the
    first that fails. Issue 23: a campaign on a machine without z3 ran its whole
    budget into 13,235 internal findings of one signature."""
    from gpusem.fuzz.targets import preflight_target

    why = preflight_target(spec.target, spec.backend, spec.props)
    if why is not None:
        raise BadInput(why)


def shard_spec(spec: CampaignSpec, prop: str) -> dict[str, object]:
    """One property's `Campaign` keyword arguments (the engines' wire format)."""
    return {"target_name": spec.target, "backend": spec.backend, "prop": prop,
            "budget_s": spec.budget_s / len(spec.props), "seed": spec.seed,
            "shard": spec.shard, "out_dir": spec.out_dir,
            "round_size": spec.round_size, "max_programs": spec.max_programs,
            "resume": spec.resume, "coverage": spec.coverage,
            "hunt_cap_s": spec.hunt_cap_s, "generation": spec.generation}


def run(spec: CampaignSpec, on_finding: OnFinding | None = None,
        on_progress: OnProgress | None = None) -> CampaignResult:
    """The campaign: findings are bundles under `spec.out_dir`; `on_finding(f)` once
    per finding when its bundle is final (with jobs > 1 or a cluster: after each
    property); `on_progress(prop, running_summary)` while it runs. Writes no report:
    `result.report.write(...)` does."""
    from gpusem.fuzz import manifest
    from gpusem.fuzz.client import run_campaign, run_jobs
    from gpusem.fuzz.engines.registry import load_engine

    # every engine's budget counts from here (a cluster's start, the --jobs
    # processes' start-up too), and the report's seconds until it is written
    began = spec.started_at if spec.started_at is not None else time.time()
    spec = resolved(spec)
    if spec.engine == "local":  # a cluster engine asks its workers (engines/dask.py)
        ready(spec)  # before any program: a missing z3 is one line, not 8 minutes
    baseline = load_baseline(spec.baseline) if spec.baseline else None
    if not spec.resume:
        manifest.write_campaign(spec.out_dir, spec.params())
    total, started = Summary(), time.time()
    if spec.corpus:  # the regression mode: the stored bundles first
        total.corpus = [r.as_dict() for r in replay_corpus(
            spec.corpus, spec.backend, spec.target, spec.props, baseline)]
    for p in spec.props:
        wire = shard_spec(spec, p)
        # the first property from the command's start, the others from their own
        since = began if p == spec.props[0] else time.time()
        if spec.jobs == 1 and on_finding is not None:
            wire["on_finding"] = on_finding
        tick = (lambda s, p=p: on_progress(p, s)) if on_progress else None
        if spec.engine == "local":
            part = run_jobs(wire | {"since": since}, spec.jobs, on_tick=tick)
        else:
            runner, shards = load_engine(spec.engine, spec.backend, spec.jobs,
                                         spec.scheduler, spec.gpus)
            if hasattr(runner, "started_at"):  # its pieces stop by the budget's end
                runner.started_at = since
            wire.pop("on_finding", None)  # called below, on this side
            part = run_campaign(wire, runner, shards, on_tick=tick)
        if (spec.jobs > 1 or spec.engine != "local") and on_finding is not None:
            for f in part.findings:
                on_finding(f)
        total.merge(part)
        if total.interrupted or total.stopped:
            break
    if spec.resume:  # what the campaign found before it was resumed counts too
        total.merge(earlier_findings(spec.out_dir, spec.target, spec.props, total))
    total.merge(corpus_findings(total.corpus, total))
    if baseline is not None:
        for f in total.findings:
            f.known = baseline.match(f.signature, f.attribution) is not None
    # the campaign's whole time, its engine's teardown included (the --jobs
    # processes stopped, a cluster closed): the shards' own clocks stop earlier
    total.seconds = max(total.seconds, time.time() - began)
    return CampaignResult(total, spec, Report(total, spec.params(), started))


def corpus_findings(rows: Sequence[dict], now: Summary) -> Summary:
    """The corpus's bundles that still fail, as findings of the campaign (not new:
    their bundles are the corpus's), unless the campaign met them itself."""
    have = {f.signature for f in now.findings}
    out = Summary()
    for r in rows:
        if r["verdict"] != "reproduces" or r["signature"] in have:
            continue
        out.findings.append(Finding(
            r["signature"], r["kind"], r["detail"], r["size"], r["bundle"], True, 0.0,
            prop=r["prop"], target=r["target"], new=False))
    return out


def earlier_findings(out_dir: str, target: str, props: Sequence[str],
                     now: Summary) -> Summary:
    """The bundles a resumed campaign found before, as findings (not new)."""
    from gpusem.fuzz.bundle import list_bundles

    have = {f.signature for f in now.findings}
    earlier = Summary()
    for b in list_bundles(out_dir):
        m = b.meta
        if b.target != target or m["property"] not in props or b.signature in have:
            continue
        size = int(m.get("size", 0) or 0)
        # its attribution as the bundle records it now (`gpusem triage --redecide
        # --write` rewrites it under today's rules): the reports group it by cause
        recorded = m.get("attribution")
        blame: dict = recorded if isinstance(recorded, dict) else {}
        earlier.findings.append(Finding(
            b.signature, str(m["kind"]), str(m.get("detail", "")), size, str(b.path),
            bool(m.get("shrunk")), float(m.get("found_after_s", 0.0) or 0.0),
            size_before=int(m.get("size_before", size) or size), prop=m["property"],
            target=target, duplicates=b.sightings - 1, new=False,
            attribution=str(blame.get("verdict") or ""),
            cause=str(blame.get("cause") or "")))
    return earlier


__all__ = ["CampaignResult", "CampaignSpec", "corpus_findings", "earlier_findings",
           "ready", "resolved", "run", "shard_spec", "target_properties"]
