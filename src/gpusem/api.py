"""gpusem as a library (issue 18): the functions behind every `gpusem` verb, for a
compiler team's scripts, notebooks and tests. The CLI verbs call these.

    from gpusem import api

    prog = api.load("kernel.bundl")            # parse (calculus/bundl)
    assert api.check(prog) == []               # Γ ⊢ prog (typing_rules/bundl)
    out = api.run(prog)                        # the small-step machine
    kernel = api.compile(prog)                 # Bundl -> CUDA C++ (.source)
    verdict = api.exec(prog, backend="cpu")    # compile, run, compare
    result = api.fuzz("bundl", budget_s=60,    # a campaign; a callback per finding
                      on_finding=lambda f: print(f.signature, f.bundle))

Errors are the `gpusem.calculus.errors` taxonomy (`BadInput`, `IllTyped`, `Stuck`, ...);
nothing here prints or exits. Programs are Bundl unless a function says otherwise
(`fuzz`, `replay`, `generate` and `triage` take any target's).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusem.fuzz.bundle import Bundle
from gpusem.fuzz.reports import Report
from gpusem.fuzz.summary import Finding, Summary
from gpusem.fuzz.targets import CheckResult

# --------------------------------------------------------------------- one program


def parse(text: str, file: str = "<input>") -> Any:
    """A Bundl program from its text (BadInput: `file:line:col: message`)."""
    from gpusem.calculus.bundl.parser import parse_program

    return parse_program(text, file)


def load(path: str | Path) -> Any:
    """A Bundl program from a file (read through the one source reader)."""
    from gpusem.calculus.source import read_source

    return parse(read_source(str(path)), str(path))


def check(program: Any, rules: str = "fixed") -> list[Any]:
    """Every type error of `program` (`IllTyped`, naming the rule); [] = well-typed.
    `rules`: "fixed" (the corrected rules) or "paper" (Appendix A as printed)."""
    from gpusem.typing_rules.bundl.stmt import type_errors

    return type_errors(program, rules)


def run(program: Any, schedule: str = "rr", max_steps: int = 1_000_000,
        rules: str = "fixed") -> Any:
    """Run on the small-step machine: an `Outcome` (kind terminated | stuck | deadlock
    | budget; `globals` the final global memory). schedule: rr | random:SEED |
    exhaustive."""
    from gpusem.interpreter.bundl.schedulers import run_program

    return run_program(program, schedule, max_steps, rules)


def compile(program: Any, sync_motion: bool = True, cp_async: bool = True) -> Any:
    """Bundl -> CUDA C++: a `CompiledKernel` (`.source`, `.name`, `.blocks`,
    `.threads`, `.smem_bytes`). The program must be well-typed (IllTyped otherwise)."""
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.typing_rules.bundl.stmt import check_program

    check_program(program)
    return compile_program(program, CompileOptions(sync_motion=sync_motion,
                                                   cp_async=cp_async))


def standalone(program: Any, sync_motion: bool = True, title: str = "") -> str:
    """One self-contained `.cu` (runtime inlined, inputs and the interpreter's output
    embedded, a main() that exits 1 on a mismatch): `nvcc -arch=sm_90a repro.cu`
    builds it. When the interpreter does not terminate, nothing is embedded and the
    program prints its output instead."""
    from gpusem.compiler.bundl_cuda.launch import initial_globals
    from gpusem.compiler.bundl_cuda.standalone import standalone_source

    kernel = compile(program, sync_motion)
    out = run(program)
    expected = out.globals if out.kind == "terminated" else None
    return standalone_source(kernel, initial_globals(program), expected, title)


def exec(program: Any, backend: str = "cpu", schedules: Sequence[int] = (0, 1, 2, 3),
         sync_motion: bool = True) -> Any:
    """Compile, run on `backend` under the cpu harness's fibre orders `schedules`,
    compare with the interpreter: a `Verdict` (`.agree`, `.kind`, `.describe()`)."""
    from gpusem.fuzz.bundl.compile_property import check_program, reference
    from gpusem.typing_rules.bundl.stmt import check_program as typecheck

    typecheck(program)
    return check_program(program, backend, tuple(schedules), sync_motion,
                         ref=reference(program))


# ------------------------------------------------------------------------ campaigns


@dataclass
class CampaignResult:
    summary: Summary
    params: dict[str, Any]
    report: Report

    @property
    def exit_code(self) -> int:
        return self.report.code


def fuzz(target: str = "bundl", props: Sequence[str] = (), *, budget_s: float = 60.0,
         backend: str = "cpu", seed: int = 0, jobs: int = 1,
         shard: tuple[int, int] = (0, 1), out_dir: str = "fuzz-out",
         round_size: int = 100, max_programs: int | None = None,
         resume: bool = False, coverage: bool = False,
         hunt_cap_s: float | None = None,
         on_finding: Callable[[Finding], None] | None = None,
         on_progress: Callable[[str, Summary], None] | None = None,
         engine: str = "local", scheduler: str | None = None,
         gpus: str | None = None) -> CampaignResult:
    """A campaign: findings are bundles under `out_dir`; `on_finding(f)` is called once
    per finding when its bundle is final (with jobs > 1: after the campaign);
    `on_progress(prop, running_summary)` while it runs. `resume`: continue the
    campaign in `out_dir` with its recorded parameters (the arguments given for them
    are ignored). `hunt_cap_s`: seconds hypothesis shrinks one finding (default: a
    fifth of the budget, at least 60). Writes no report: `result.report.write(...)`
    does. `engine`: who runs the shards (`fuzz/engines/registry.py`): "local"
    (`jobs` processes), "dask" (`scheduler` ADDR or a local cluster of `jobs` workers
    per GPU among `gpus`, or in all for cpu) or a plugin; a resumed campaign keeps the
    engine it was started with."""
    import time

    from gpusem.calculus.errors import BadInput
    from gpusem.fuzz import manifest
    from gpusem.fuzz.client import run_campaign, run_jobs
    from gpusem.fuzz.engines.registry import load_engine

    if resume:
        rec = manifest.read_campaign(out_dir)
        target, backend, seed, jobs, round_size = (
            rec["target"], rec["backend"], rec["seed"], rec["jobs"], rec["round_size"])
        props, shard = tuple(rec["properties"]), (rec["shard"][0], rec["shard"][1])
        engine = rec.get("engine", "local")  # its record of finished work is its own
    if jobs < 1:
        raise BadInput(f"bad jobs: {jobs} (must be >= 1)")
    if engine == "local" and (scheduler or gpus):
        raise BadInput("--scheduler and --gpus are for a cluster engine (--engine dask)")
    props = tuple(props) or (target_properties(target, backend)[0],)
    known = target_properties(target, backend)
    for p in props:
        if p not in known:
            raise BadInput(f"unknown property: {p} (target {target}: {', '.join(known)})")
    params = {"target": target, "backend": backend, "properties": list(props),
              "seed": seed, "shard": list(shard), "jobs": jobs, "round_size": round_size,
              "budget_s": budget_s, "max_programs": max_programs, "out_dir": out_dir,
              "resumed": resume, "engine": engine}
    if not resume:
        manifest.write_campaign(out_dir, params)
    total, started = Summary(), time.time()
    for p in props:
        spec = {"target_name": target, "backend": backend, "prop": p,
                "budget_s": budget_s / len(props), "seed": seed, "shard": shard,
                "out_dir": out_dir, "round_size": round_size,
                "max_programs": max_programs, "resume": resume, "coverage": coverage,
                "hunt_cap_s": hunt_cap_s}
        if jobs == 1 and on_finding is not None:
            spec["on_finding"] = on_finding
        tick = (lambda s, p=p: on_progress(p, s)) if on_progress else None
        if engine == "local":
            part = run_jobs(spec, jobs, on_tick=tick)
        else:
            runner, shards = load_engine(engine, backend, jobs, scheduler, gpus)
            spec.pop("on_finding", None)  # called below, on this side
            part = run_campaign(spec, runner, shards, on_tick=tick)
        if (jobs > 1 or engine != "local") and on_finding is not None:
            for f in part.findings:
                on_finding(f)
        total.merge(part)
        if total.interrupted:
            break
    if resume:  # what the campaign found before it was resumed counts too
        total.merge(_earlier_findings(out_dir, target, props, total))
    return CampaignResult(total, params, Report(total, params, started))


def _earlier_findings(out_dir: str, target: str, props: Sequence[str],
                      now: Summary) -> Summary:
    from gpusem.fuzz.bundle import list_bundles

    have = {f.signature for f in now.findings}
    earlier = Summary()
    for b in list_bundles(out_dir):
        m = b.meta
        if b.target != target or m["property"] not in props or b.signature in have:
            continue
        size = int(m.get("size", 0) or 0)
        earlier.findings.append(Finding(
            b.signature, str(m["kind"]), str(m.get("detail", "")), size, str(b.path),
            bool(m.get("shrunk")), float(m.get("found_after_s", 0.0) or 0.0),
            size_before=int(m.get("size_before", size) or size), prop=m["property"],
            target=target, duplicates=b.sightings - 1, new=False))
    return earlier


def target_properties(target: str, backend: str = "cpu") -> tuple[str, ...]:
    """The properties target `target` checks (BadInput for an unknown target)."""
    from gpusem.fuzz.targets import load_target

    probe = load_target(target, backend)
    try:
        return tuple(probe.properties)
    finally:
        probe.close()


@dataclass
class Replay:
    bundle: Bundle
    now: CheckResult
    reproduces: bool


def replay(bundle_dir: str | Path, backend: str | None = None) -> Replay:
    """Re-run a bundle: does its finding still reproduce (the same signature, or one
    that refines it; a cpu deadlock seen as a timeout on the cuda backend)?"""
    from gpusem.fuzz.bundle import read_bundle
    from gpusem.fuzz.targets import load_target, replayed, same_finding

    b = read_bundle(bundle_dir)
    target = load_target(b.target, backend or str(b.meta["backend"]))
    try:
        res = replayed(target, b.files, b.meta)
    finally:
        target.close()
    same = res.status == "finding" and (
        same_finding(b.signature, res.signature)
        or (target.backend == "cuda" and b.signature.endswith(":deadlock")
            and res.signature == b.signature[:-len("deadlock")] + "timeout"))
    return Replay(b, res, same)


def generate(target: str = "bundl", n: int = 10, seed: int = 0, prop: str | None = None,
             backend: str = "cpu") -> list[tuple[str, str]]:
    """`n` programs of the target's generator for `prop` (default: its first), as
    (file name, text): deterministic from `seed`."""
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round
    from gpusem.fuzz.targets import load_target

    t = load_target(target, backend)
    try:
        prop = prop or t.properties[0]
        out: list[tuple[str, str]] = []
        r = 0
        while len(out) < n:
            drawn = generate_round(t.strategy(prop), round_seed(seed, r), n - len(out))
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


@dataclass
class Reduced:
    text: str  # the reduced program
    before: int  # statements
    after: int
    signature: str  # what was kept ("interesting" for a command)
    tried: int
    seconds: float


def reduce(program: Any, prop: str | None = None, command: str | None = None,
           backend: str = "cpu", budget_s: float = 300.0, max_tried: int = 5000,
           file_name: str = "program.bundl") -> Reduced:
    """Shrink a Bundl program with the fuzzer's passes (`fuzz/bundl/shrink.py`) while it
    stays interesting: `prop` (a bundl property: the same finding signature) or
    `command` (C-Reduce's interestingness test: a shell command run in a scratch folder
    holding the candidate as `file_name`; exit 0 = still interesting)."""
    import shutil
    import subprocess
    import tempfile

    from gpusem.calculus.bundl.printer import print_program
    from gpusem.calculus.bundl.walk import statement_count
    from gpusem.calculus.errors import BadInput
    from gpusem.fuzz.bundl.generated import Generated
    from gpusem.fuzz.bundl.shrink import shrink
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.targets import checked

    if (prop is None) == (command is None):
        raise BadInput("reduce: give a property or an interestingness command (one)")
    start = Generated(program, race_free_by_construction=False)
    target = BundlTarget(backend) if prop is not None else None
    scratch = Path(tempfile.mkdtemp(prefix="gpusem-reduce-"))
    try:
        if target is not None:
            if prop not in target.properties:
                raise BadInput(f"unknown property: {prop} (bundl: "
                               f"{', '.join(target.properties)})")

            def test(g: Generated) -> CheckResult:
                return checked(target, g, prop)

            def batch(gs: list[Generated]) -> object:
                return target.prefetch(gs, prop)

            prefetch: Callable[[list[Generated]], object] | None = batch
        else:
            shell = str(command)

            def test(g: Generated) -> CheckResult:
                (scratch / file_name).write_text(print_program(g.program))
                try:
                    rc = subprocess.run(shell, shell=True, cwd=scratch,
                                        capture_output=True, timeout=600).returncode
                except subprocess.TimeoutExpired:
                    rc = 1
                return CheckResult("finding", signature="interesting") if rc == 0 \
                    else CheckResult("pass")

            prefetch = None
        first = test(start)
        if first.status != "finding":
            what = f"property {prop} holds" if prop else f"`{command}` exits nonzero"
            raise BadInput(f"not interesting: {what} on the program as given")
        best, _, stats = shrink(start, first.signature, test, prefetch, budget_s,
                                max_tried)
    finally:
        if target is not None:
            target.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return Reduced(print_program(best.program), statement_count(program),
                   statement_count(best.program), first.signature, stats.tried,
                   stats.seconds)


def reduce_cuda(path: str | Path, *, test: Callable[[str], bool] | None = None,
                command: str | None = None, keep_exit: int | None = None,
                keep_ptx: str | None = None, keep_ptx_check: str | None = None,
                keep_attribution: str | None = None, sanitize: bool = False,
                guards: bool = True, engine: str = "own", budget_s: float = 300.0,
                on_progress: Callable[[Any], None] | None = None) -> Any:
    """Shrink a CUDA reproducer (`repro.cu`, issue 23) while it stays interesting to
    exactly one test: `test` (a callable on the text), `command` (C-Reduce's shell
    convention: run in a folder holding only the candidate, under the file's name;
    exit 0 = interesting), `keep_exit` (nvcc builds it and it exits with this
    status: needs a GPU), `keep_ptx` (its `nvcc -ptx` still matches this regular
    expression), `keep_ptx_check` (the static PTX checker still fails this check) or
    `keep_attribution` (the attribution still names this component). `guards`: the
    candidate must still build alone with nvcc and keep main's check
    (`fuzz/cuda_reduce/oracles.py` says what is and is not guarded). `engine`: "own"
    (our passes) or "cvise" (C-Vise, when installed, then our passes). A
    `CudaReduction`; BadInput when the file is not interesting to start with."""
    from gpusem.calculus.errors import BadInput
    from gpusem.calculus.source import read_source
    from gpusem.compiler.backends.standalone import RUNTIME
    from gpusem.fuzz.cuda_reduce import cvise, oracles
    from gpusem.fuzz.cuda_reduce.reducer import NotInteresting, default_passes

    name = Path(path).name
    chosen = [x for x in (test, command, keep_exit, keep_ptx, keep_ptx_check,
                          keep_attribution) if x is not None]
    if len(chosen) != 1:
        raise BadInput("reduce: give exactly one interestingness test (a command, "
                       "--keep-exit, --keep-ptx, --keep-ptx-check or "
                       "--keep-attribution)")
    if not oracles.have_nvcc() and (guards or test is None and command is None):
        raise BadInput("reduce: nvcc is not on PATH (the guards and the built-in "
                       "tests build with it)")
    keep: Callable[[str], bool]
    if test is not None:
        keep = test
    elif command is not None:
        keep = oracles.ShellTest(command, name)
    elif keep_exit is not None:
        # the program must keep printing the original's last line (its mismatch)
        line = oracles.KeepExit(keep_exit, sanitize).report_line(read_source(str(path)))
        keep = oracles.KeepExit(keep_exit, sanitize, line)
    elif keep_ptx is not None:
        keep = oracles.KeepPtx(_regex(keep_ptx))
    elif keep_ptx_check is not None:
        if oracles.PTX_CHECKER is None:
            raise BadInput("reduce: --keep-ptx-check needs the static PTX checker, "
                           "which this build does not have")
        keep = oracles.KeepPtxCheck(oracles.PTX_CHECKER, keep_ptx_check)
    else:
        if oracles.ATTRIBUTOR is None:
            raise BadInput("reduce: --keep-attribution needs the attribution, which "
                           "this build does not have")
        keep = oracles.KeepAttribution(oracles.ATTRIBUTOR, str(keep_attribution))
    text = read_source(str(path))
    chosen_guards: list[oracles.Guard] = [
        oracles.KeepsMain(), oracles.KeepsMainCheck(), oracles.NoConstantPointers(),
        oracles.BuildsAlone()
    ] if guards else []
    passes = default_passes((Path(path).resolve().parent, RUNTIME.parent))
    try:
        if engine == "cvise":
            return cvise.reduce_with_cvise(text, name, keep, chosen_guards, passes,
                                           budget_s, on_progress, command)
        if engine != "own":
            raise BadInput(f"reduce: unknown engine: {engine} (own, cvise)")
        from gpusem.fuzz.cuda_reduce.reducer import reduce_cuda as run_passes

        return run_passes(text, keep, budget_s=budget_s, guards=chosen_guards,
                          passes=passes, on_progress=on_progress)
    except NotInteresting:
        raise BadInput(f"{path}:1:1: not interesting: the test does not hold on the "
                       "file as given") from None


def _regex(pattern: str) -> str:
    import re

    from gpusem.calculus.errors import BadInput

    try:
        re.compile(pattern)
    except re.error as e:
        raise BadInput(f"reduce: --keep-ptx: bad regular expression: {e}") from None
    return pattern


@dataclass
class TriageRow:
    signature: str
    kind: str
    target: str
    prop: str
    bundles: list[str] = field(default_factory=list)
    sightings: int = 0
    smallest: int = 0


def triage(dirs: Sequence[str | Path]) -> list[TriageRow]:
    """Every bundle under `dirs` (searched recursively), grouped by signature: one row
    per distinct finding, most seen first."""
    from gpusem.fuzz.bundle import META, read_bundle

    rows: dict[str, TriageRow] = {}
    for d in dirs:
        root = Path(d)
        metas = [root / META] if (root / META).is_file() else sorted(root.rglob(META))
        for meta in metas:
            if any(part.startswith(".") for part in meta.relative_to(root).parts[:-1]):
                continue  # a store's temporary folders
            b = read_bundle(meta.parent)
            row = rows.setdefault(b.signature, TriageRow(
                b.signature, str(b.meta["kind"]), b.target, str(b.meta["property"]),
                smallest=int(b.meta.get("size", 0) or 0)))
            row.bundles.append(str(b.path))
            row.sightings += b.sightings
            row.smallest = builtins.min(row.smallest, int(b.meta.get("size", 0) or 0))
    return sorted(rows.values(), key=lambda r: (-r.sightings, r.signature))


__all__ = ["CampaignResult", "Reduced", "Replay", "TriageRow", "check", "compile",
           "exec", "fuzz", "generate", "load", "parse", "reduce", "replay", "run",
           "standalone", "target_properties", "triage"]
