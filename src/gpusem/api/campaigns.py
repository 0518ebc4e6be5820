"""Campaigns and their findings, for any target: `fuzz` (the campaign loop of
`fuzz/driver.py`), `replay`, `generate`, `reduce` (the reducer of
`fuzz/bundl/reduce.py`), `triage` and `redecide`. Each returns a frozen, typed result."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpusem.interpreter.debugger import Debugger
    from gpusem.fuzz.driver import CampaignResult, CampaignSpec, OnFinding, OnProgress
    from gpusem.calculus.bundl.ast import Program
    from gpusem.fuzz.bundl.reduce import Reduced
    from gpusem.fuzz.reduce import ReducedFinding, ReduceProgress
    from gpusem.fuzz.replay import CorpusRow, Replay
    from gpusem.fuzz.redecide import Redecision
    from gpusem.fuzz.triage import TriageRow


def campaign(spec: CampaignSpec, on_finding: OnFinding | None = None,
             on_progress: OnProgress | None = None) -> CampaignResult:
    """Run the campaign `spec` describes (see `CampaignSpec`)."""
    from gpusem.fuzz import driver

    return driver.run(spec, on_finding, on_progress)


def fuzz(target: str = "bundl", props: Sequence[str] = (), *, budget_s: float = 60.0,
         backend: str = "cpu", seed: int = 0, jobs: int = 1,
         shard: tuple[int, int] = (0, 1), out_dir: str = "fuzz-out",
         round_size: int = 100, max_programs: int | None = None,
         resume: bool = False, coverage: bool = False,
         hunt_cap_s: float | None = None, on_finding: OnFinding | None = None,
         on_progress: OnProgress | None = None, engine: str = "local",
         scheduler: str | None = None, gpus: str | None = None,
         baseline: str | None = None, corpus: str | None = None,
         generation: str | None = None) -> CampaignResult:
    """`campaign(CampaignSpec(...))` with the spec's fields as keyword arguments
    (`generation` None: the spec's default mode):
    findings are bundles under `out_dir`; `on_finding(f)` is called once per finding
    when its bundle is final (with jobs > 1: after the campaign); `on_progress(prop,
    running_summary)` while it runs. Writes no report: `result.report.write(...)`
    does."""
    from gpusem.fuzz import driver

    spec = driver.CampaignSpec(target, tuple(props), budget_s, backend, seed, jobs,
                               shard, out_dir, round_size, max_programs, resume,
                               coverage, hunt_cap_s, engine, scheduler, gpus,
                               baseline, corpus)
    if generation is not None:
        spec = replace(spec, generation=generation)
    return driver.run(spec, on_finding, on_progress)


def replay_corpus(folder: str | Path, backend: str | None = None,
                  baseline: str | None = None) -> list[CorpusRow]:
    """Every bundle under `folder` replayed: still failing (`reproduces`), `fixed`
    or `cannot-test`, and `known` where the baseline (a JSON report or a folder of
    bundles) holds it."""
    from gpusem.fuzz.baseline import load_baseline
    from gpusem.fuzz.replay import replay_corpus as replay_all

    known = load_baseline(baseline) if baseline else None
    return replay_all(folder, backend, baseline=known)


def corpus_exit_code(rows: Sequence[CorpusRow]) -> int:
    """The exit code of `gpusem replay` on a corpus (`fuzz/replay.py`)."""
    from gpusem.fuzz.replay import corpus_exit_code as code

    return code(rows)


def target_properties(target: str, backend: str = "cpu") -> tuple[str, ...]:
    """The properties target `target` checks (BadInput for an unknown target)."""
    from gpusem.fuzz import driver

    return driver.target_properties(target, backend)


def replay(bundle_dir: str | Path, backend: str | None = None) -> Replay:
    """Re-run a bundle: does its finding still reproduce (the same signature, or one
    that refines it; a cpu deadlock seen as a timeout on the cuda backend)?"""
    from gpusem.fuzz.replay import replay as replay_bundle

    return replay_bundle(bundle_dir, backend)


def generate(target: str = "bundl", n: int = 10, seed: int = 0, prop: str | None = None,
             backend: str = "cpu", generation: str | None = None
             ) -> list[tuple[str, str]]:
    """`n` programs of the target's generator for `prop` (default: its first), as
    (file name, text): deterministic from `seed` and `generation` (the way rounds are
    drawn, `fuzz/hunt.GENERATIONS`; None: the campaigns' default)."""
    from gpusem.calculus.errors import BadInput
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.direct import DEFAULT_GENERATION, check_generation
    from gpusem.fuzz.hunt import generate_round
    from gpusem.fuzz.targets import load_target

    try:
        mode = check_generation(generation or DEFAULT_GENERATION)
    except ValueError as err:
        raise BadInput(str(err)) from None

    t = load_target(target, backend)
    try:
        prop = prop or t.properties[0]
        out: list[tuple[str, str]] = []
        r = 0
        while len(out) < n:
            drawn = generate_round(t.strategy(prop), round_seed(seed, r), n - len(out),
                                   generation=mode)
            for d in drawn:
                name, text = next(iter(t.program_files(d.program).items()))
                stem, dot, ext = name.rpartition(".")
                out.append((f"{stem or name}-{len(out):05d}{dot}{ext if dot else ''}",
                            text))
            r += 1
            if not drawn:
                break
        return out
    finally:
        t.close()


def reduce(program: Program, prop: str | None = None, command: str | None = None,
           backend: str = "cpu", budget_s: float = 300.0, max_tried: int = 5000,
           file_name: str = "program.bundl",
           on_progress: Callable[[ReduceProgress], None] | None = None) -> Reduced:
    """Shrink a Bundl program with the fuzzer's passes while it stays interesting:
    `prop` (a bundl property: the same finding signature) or `command` (C-Reduce's
    interestingness test: a shell command run in a scratch folder holding the
    candidate as `file_name`; exit 0 = still interesting). `on_progress` after each
    candidate."""
    from gpusem.fuzz.bundl.reduce import reduce as reduce_program

    return reduce_program(program, prop, command, backend, budget_s, max_tried,
                          file_name, on_progress)


def reduce_bundle(bundle_dir: str | Path, prop: str | None = None,
                  backend: str | None = None, budget_s: float = 300.0,
                  on_progress: Callable[[ReduceProgress], None] | None = None,
                  ) -> ReducedFinding:
    """Shrink a bundle's program, of any target (a plugin's too), with the target's
    own reducer while its property fails with the same signature
    (`fuzz/reduce.py`)."""
    from gpusem.fuzz.reduce import reduce_bundle as reduce_it

    return reduce_it(bundle_dir, prop, backend, budget_s, on_progress)


def reduce_program_file(target: str, file_name: str, text: str, prop: str | None = None,
                        backend: str = "cpu", budget_s: float = 300.0,
                        on_progress: Callable[[ReduceProgress], None] | None = None,
                        ) -> ReducedFinding:
    """Shrink a user's program file (`text`, held as the bundle file `file_name`)
    for target `target`'s property `prop` (default: its first)."""
    from gpusem.fuzz.reduce import reduce_files

    prop = prop or target_properties(target, backend)[0]
    return reduce_files(target, {file_name: text}, {"backend": backend}, prop,
                        backend, budget_s, on_progress)


def rate_shown(programs: int, seconds: float) -> str:
    """Programs per minute as reports show it: "1,234/min", or "rate n/a (under 1
    s)" where one program more or less would swing it by orders of magnitude."""
    from gpusem.fuzz.summary import rate_per_min, rate_text

    return rate_text(rate_per_min(programs, seconds))


def progress_every_s() -> float:
    """Seconds between two progress lines in a log ($GPUSEM_PROGRESS_EVERY_S, 30)."""
    from gpusem.fuzz.progress import every_s_from_env

    return every_s_from_env()


def process_started_at(fallback: float) -> float:
    """time.time() when this process started (`fallback` where the system does not
    say): `gpusem fuzz` starts its campaign's clock there (`fuzz/clock.py`)."""
    from gpusem.fuzz.clock import process_started_at as started

    return started(fallback)


def step_bundle(bundle_dir: str | Path) -> tuple[Debugger, tuple[str, ...]]:
    """The debugger on a Bundl bundle's program, and the commands that stop it where
    the first differing cell is written (none when the bundle records no memories):
    `gpusem replay --step`."""
    from gpusem.api.bundl import debugger
    from gpusem.calculus.errors import BadInput
    from gpusem.fuzz.bundle import read_bundle
    from gpusem.fuzz.replay import first_difference

    bundle = read_bundle(bundle_dir)
    if "program.bundl" not in bundle.files:
        raise BadInput(f"replay --step: only Bundl bundles: {bundle.path}")
    cell = first_difference(bundle)
    opening = () if cell is None else (f"break write {cell[0]}[{cell[1]}]", "continue")
    return (debugger(bundle.files["program.bundl"], str(bundle.path / "program.bundl")),
            opening)


def install_signal_handlers() -> None:
    """SIGTERM (and SIGINT) end a campaign cleanly: its reports are still written."""
    from gpusem.fuzz.summary import install_signal_handlers as install

    install()


def triage(dirs: Sequence[str | Path]) -> list[TriageRow]:
    """Every bundle under `dirs` (searched recursively), grouped by signature: one row
    per distinct finding, most seen first."""
    from gpusem.fuzz.triage import triage as group

    return group(dirs)


def redecide(dirs: Sequence[str | Path], write: bool = False) -> list[Redecision]:
    """Every attributed bundle under `dirs` decided again under today's attribution
    rules from its stored evidence (no GPU); `write`: the changed decisions that
    are computable from it rewritten in place, the old kept as
    `attribution_history` (`fuzz/redecide.py`)."""
    from gpusem.fuzz.redecide import redecide as again

    return again(dirs, write)


__all__ = ["campaign", "corpus_exit_code", "fuzz", "generate",
           "install_signal_handlers", "progress_every_s", "rate_shown", "redecide",
           "reduce", "reduce_bundle", "reduce_program_file", "replay", "replay_corpus",
           "step_bundle", "target_properties", "triage"]
