"""The `toolchain` property of the Bundl target (DESIGN.md's table; issue 23, item 5):
every configuration of the toolchain matrix (`compiler/backends/toolchain.py`) gives
the reference's memory for the program's kernel.

On the cuda backend every configuration runs (nvrtc, nvcc-O3, nvcc-G, ptxas-O0,
ptx-jit, no-restrict, and the cpu harness), two launches each; a configuration that
disagrees with the reference is a finding, attributed at once (`fuzz/attribution.py`)
from the same runs.

On the cuda backend a program costs what its launches cost (the GPU's launches, not
the builds, bound a campaign of 16 shards on one H200: scripts/toolchain_cost.py), so
by default a clean program gets ONE launch per GPU configuration, no cpu harness run,
and none of a configuration whose machine code for it is another's (the matrix's
`shared`). A program some configuration gets wrong is then run again: a second launch
of every GPU configuration (a re-run: `reruns-differ` needs two) and the cpu harness
(two launches; attribution reads it: `harness-same`, `every-gpu-same`), and only
then decided; so every finding is decided from the runs it was before. What the cpu
harness alone would find is the `compile` property's on the cpu backend (our
compiler, the harness). `GPUSEM_TOOLCHAIN_EAGER=1` runs everything for every
program, as before (two launches of every configuration and the harness).

nvcc-G (`toolchain.SAMPLED`) is the most expensive build of a program and mostly
attribution's evidence ("right at -G": an optimiser is wrong), so a campaign builds
and runs it for clean programs only on every K-th round of a shard
(GPUSEM_TOOLCHAIN_G_EVERY, default `toolchain.G_EVERY`; the campaign says the round
through `begin_round`), and for a program another configuration gets wrong on every
round: that program's verdict, signature and attribution are the same as where
nvcc-G ran for every program. What K gives up: a bug of nvcc-G alone is met on its
rounds only. `no-restrict` (T1's evidence, and other PTX for NVVM) is cheap and stays
on every program. Each compared program's verdict lists the configurations that
checked it (`CheckResult.configs`): the report's `by_configuration`.

On the cpu backend only the `cpu` configuration can run. Decision: it runs (the
harness's four schedules, as the compile property), and the host configurations that
need no GPU are BUILT (nvcc-O3, nvcc-G, ptxas-O0: one nvcc / ptxas call per
configuration for a round's kernels; nvcc-G on every K-th round, and for a program
a build refuses or the harness gets wrong): a kernel that one configuration builds
and another refuses is a finding too. Where nvcc is not installed the builds are left out
(nothing to say about a toolchain that is not there), never reported as failures.

Signatures are cause-level: `toolchain:<verdict>:<configurations that disagree>`
(`toolchain:build:<configurations that refuse>` for builds), never the program, so
one cause across many programs is one bundle.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.printer import print_program
from gpusem.calculus.bundl.walk import statement_count
from gpusem.compiler.backends.toolchain import (
    BUILD_ONLY,
    CONFIGS,
    SAMPLED,
    build_only,
    eager,
)
from gpusem.compiler.bundl_cuda.launch import (
    as_bundl_values,
    first_difference,
    initial_globals,
    jobs_for,
)
from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
from gpusem.fuzz.attribution import Evidence, decide, disagreeing, observe, report
from gpusem.fuzz.bundl.attribute import second_reference
from gpusem.fuzz.bundl.compile_property import HARNESS_SEEDS, Reference, not_compared
from gpusem.fuzz.targets import CheckResult

GPU_LAUNCHES = (0, 1)  # the cuda backend ignores the seed: two launches = one re-run
LAUNCH_TIMEOUT_S = 5.0


def check_round(progs: list[B.Program], refs: list[Reference], backend: str,
                matrix: Any, checker: Any = None,
                confirm: Callable[[int], Reference | None] | None = None,
                sampled: bool = True) -> list[CheckResult]:
    """The `toolchain` verdict of each program, the round's kernels run together (one
    build per configuration). `confirm(i)`: the full reference of program i when
    `refs[i]` is a fast one (`fast_reference.py`): a finding is then decided again
    against it, from the same runs, as the compile property does. `sampled` False:
    a round whose clean programs go without the `SAMPLED` configurations (nvcc-G:
    built and run on every K-th round of a campaign only, `toolchain.g_every`); a
    program another configuration gets wrong, or a build refuses, gets them all the
    same before it is decided, so its verdict and evidence are a sampled round's.
    Each compared program's verdict names the configurations that checked it
    (`CheckResult.configs`: the campaign counts them)."""
    out: list[CheckResult | None] = [None] * len(progs)
    kernels: dict[int, Any] = {}
    jobs, owners = [], []
    lazy = backend == "cuda" and "cpu" in matrix.configs and not eager()
    # left out for clean programs: only where a second pass gives them to the others
    left_out = SAMPLED if not (sampled or eager()) and (lazy or backend == "cpu") \
        else ()
    if lazy and not set(matrix.configs) - {"cpu", *left_out}:
        left_out = ()  # a matrix of nvcc-G alone: nothing would run
    seeds = (GPU_LAUNCHES[:1] if lazy else GPU_LAUNCHES) if backend == "cuda" \
        else HARNESS_SEEDS
    for i, (prog, ref) in enumerate(zip(progs, refs, strict=True)):
        if (skip := not_compared(ref)) is not None:
            kind = "stuck" if skip.kind == "stuck" else skip.kind
            out[i] = CheckResult("invalid", kind=kind, detail=skip.message)
            continue
        try:
            kernels[i] = compile_program(prog, CompileOptions())
        except Exception as err:  # noqa: BLE001 - the compile property reports these
            out[i] = CheckResult("invalid", kind="compile-error", detail=str(err)[:200])
            continue
        for job in jobs_for(prog, kernels[i], seeds, LAUNCH_TIMEOUT_S):
            jobs.append(job)
            owners.append(i)
    configs = tuple(c for c in matrix.configs if c != "cpu" and c not in left_out) \
        if lazy else None
    runs = matrix.run(jobs, configs) if jobs else {}
    # {config: {job: config}}: launches one SASS made for two configurations
    shared = dict(getattr(matrix, "shared", {}))
    per = {i: {c: [r for r, o in zip(rs, owners, strict=True) if o == i]
               for c, rs in runs.items()} for i in kernels}
    if lazy and jobs:
        _again_where_wrong(progs, refs, per, kernels, configs or (), matrix,
                           tuple(c for c in left_out if c in matrix.configs))
    built = _host_builds(progs, refs, per, kernels, left_out) if backend == "cpu" \
        else {}
    first = {o: k for k, o in reversed(list(enumerate(owners)))}
    # the order of a sampled round, where a skipped configuration ran later (the
    # signature names the disagreeing configurations in this order)
    order = tuple(dict.fromkeys((*(c for c in matrix.configs if c != "cpu"), "cpu")))
    for i in sorted(kernels):
        mine = {c: per[i][c] for c in order if c in per[i]} if left_out \
            else per[i]
        same = {c: other for c, jobs_of in shared.items()
                if (other := jobs_of.get(first.get(i, -1))) is not None}
        tried = built.get(i, {})
        refused = {c: why for c, why in tried.items() if why is not None}
        verdict = _verdict(progs[i], refs[i], kernels[i], mine, refused, backend,
                           checker, same, tuple(tried))
        full = confirm(i) if confirm is not None and verdict.status == "finding" \
            else None
        if full is not None:
            bad = not_compared(full)
            verdict = _verdict(progs[i], full, kernels[i], mine, refused, backend,
                               checker, same, tuple(tried)) if bad is None else \
                CheckResult("invalid", kind=bad.kind, detail=bad.message)
        if verdict.status in ("pass", "finding"):
            verdict = replace(verdict, configs=tuple(
                c for c in dict.fromkeys((*CONFIGS, *mine)) if mine.get(c) or c in tried))
        out[i] = verdict
    return out  # type: ignore[return-value]  # every program has its verdict


def _again_where_wrong(progs: list[B.Program], refs: list[Reference],
                       per: dict[int, dict[str, list]], kernels: dict[int, Any],
                       gpu_configs: tuple[str, ...], matrix: Any,
                       skipped: tuple[str, ...] = ()) -> None:
    """For the programs a GPU configuration got wrong: the second launch of every GPU
    configuration, both launches of those the round `skipped` (nvcc-G off its K-th
    round), and the cpu harness's two, added to `per` (one matrix call each for all
    of them)."""
    wrong = [i for i, runs in per.items()
             if any(not _right(progs[i], refs[i], r) for rs in runs.values()
                    for r in rs)]
    for configs, seeds in ((gpu_configs, GPU_LAUNCHES[1:]), (skipped, GPU_LAUNCHES),
                           (("cpu",), GPU_LAUNCHES)):
        if not configs:
            continue
        jobs, owners = [], []
        for i in wrong:
            for job in jobs_for(progs[i], kernels[i], seeds, LAUNCH_TIMEOUT_S):
                jobs.append(job)
                owners.append(i)
        if not jobs:
            return
        for config, results in matrix.run(jobs, configs).items():
            for owner, result in zip(owners, results, strict=True):
                per[owner].setdefault(config, []).append(result)


def _right(prog: B.Program, ref: Reference, result: Any) -> bool:
    return result.kind == "ok" and first_difference(
        prog, ref.globals, as_bundl_values(prog, result.outputs)) is None


def _host_builds(progs: list[B.Program], refs: list[Reference],
                 per: dict[int, dict[str, list]], kernels: dict[int, Any],
                 skip: tuple[str, ...]) -> dict[int, dict[str, str | None]]:
    """{program: {host configuration: None (it builds) or the error}} on the cpu
    backend: every `BUILD_ONLY` configuration but those of `skip`, and those too for
    a program a build refuses or the harness gets wrong (its verdict and evidence
    are then what building them all gives); {} where nvcc is not installed."""
    order = sorted(kernels)
    built: dict[int, dict[str, str | None]] = {i: {} for i in order}
    first = tuple(c for c in BUILD_ONLY if c not in skip)
    for config, errs in _builds([kernels[i] for i in order], first).items():
        for i, why in zip(order, errs, strict=True):
            built[i][config] = why
    again = [i for i in order if built[i] and (
        any(why is not None for why in built[i].values())
        or not all(_right(progs[i], refs[i], r) for rs in per[i].values()
                   for r in rs))]
    later = tuple(c for c in BUILD_ONLY if c in skip)
    for config, errs in _builds([kernels[i] for i in again], later).items():
        for i, why in zip(again, errs, strict=True):
            built[i][config] = why
    return {i: {c: tried[c] for c in BUILD_ONLY if c in tried}
            for i, tried in built.items() if tried}


def _builds(kernels: list[Any], configs: tuple[str, ...] = BUILD_ONLY
            ) -> dict[str, list[str | None]]:
    """The host configurations' build verdicts; {} where nvcc is not installed."""
    from gpusem.compiler.backends.toolchain_build import find_tool

    if not kernels or not configs or find_tool("nvcc") is None:
        return {}
    return build_only([_spec(k) for k in kernels], configs)


def _spec(kernel: Any) -> Any:
    from gpusem.compiler.bundl_cuda.launch import kernel_spec

    return kernel_spec(kernel)


def _verdict(prog: B.Program, ref: Reference, kernel: Any, results: dict[str, list],
             refused: dict[str, str], backend: str, checker: Any,
             same: dict[str, str] | None = None,
             tried: tuple[str, ...] = BUILD_ONLY) -> CheckResult:
    def wrong_cell(outputs: dict) -> str | None:
        diff = first_difference(prog, ref.globals, as_bundl_values(prog, outputs))
        return None if diff is None else (
            f"{diff[0]}[{diff[1]}] = {diff[3]!r}, expected {diff[2]!r}")

    runs = {c: [observe(r, wrong_cell) for r in rs] for c, rs in results.items()}
    bad = disagreeing(runs)
    if not bad and (not refused or set(refused) == set(tried)):
        # every build refused: CUDA that nvcc never builds is the compile property's
        return CheckResult("pass")
    failing = ("nvrtc" if "nvrtc" in bad else bad[0]) if bad else "cpu"
    static = checker(kernel.source) if checker is not None and backend == "cuda" \
        else None
    ev = Evidence(failing, runs, static, second_reference(prog, ref) if bad else None)
    if bad:
        found = decide(ev)
        if found.verdict == "environment":  # a platform limitation: counted apart
            return CheckResult("invalid", kind="environment", detail=found.line()[:200])
        signature = f"toolchain:{found.verdict}:{'+'.join(bad)}"
        detail = f"{'+'.join(bad)} disagree with the reference: {found.line()}"
    else:
        found = _build_verdict(refused)
        signature = f"toolchain:build:{'+'.join(sorted(refused))}"
        detail = f"{'+'.join(sorted(refused))} refuse a kernel the others build"
    text = print_program(prog)
    blame = report(found, ev, 0.0, {}) | {"refused": refused,
                                          "same_sass": same or {}}
    files = {
        "program.bundl": text, "kernel.cu": kernel.source,
        "inputs.json": json.dumps({k: v.tolist() for k, v in
                                   initial_globals(prog).items()}, indent=1) + "\n",
        "expected.json": json.dumps(ref.globals, indent=1) + "\n",
        "attribution.json": json.dumps(blame, indent=1, sort_keys=True) + "\n",
        "trace.txt": f"property toolchain; backend {backend}\n{detail}\n"
                     + "".join(f"{c}: {e}\n" for c, e in sorted(refused.items())),
    }
    return CheckResult("finding", signature=signature, kind="toolchain " + found.verdict,
                       detail=detail[:300], files=files, size=statement_count(prog),
                       program_file="program.bundl", line=1)


def _build_verdict(refused: dict[str, str]) -> Any:
    """A kernel some host configurations refuse: ptxas alone refusing the PTX the
    others compile is ptxas's; any other split is not decided here."""
    from gpusem.fuzz.attribution import Attribution

    lines = tuple(f"{c}: {e[:200]}" for c, e in sorted(refused.items()))
    if set(refused) == {"ptxas-O0"}:
        return Attribution("ptxas", "build-ptxas-O0", lines)
    return Attribution("undecided", "build-split", lines)
