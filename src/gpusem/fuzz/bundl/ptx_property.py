"""The `ptx` property of the Bundl target (issue 23, item 3): the PTX that every
installed NVRTC makes of the kernel our compiler emits obeys what the PTX ISA requires
of it (`compiler/backends/ptx_check.py`). No GPU: NVRTC only emits PTX.

A failure's signature is cause-level, `ptx:CHECK:ATTRIBUTION:VERSIONS`
(`fuzz/ptx_findings.py`); its bundle holds the program, `kernel.cu`, the PTX excerpt
of each failing version (`ptx_excerpt.txt`: the store and the load marked), each
failing version's whole PTX, and the versions (`trace.txt`, the bundle's metadata).

A program the generator does not make race-free by construction is compared only once
the z3 race analysis proves it race-free (as the compile property does): under a race,
`__restrict__` on the kernel's parameters is itself a false promise, and the PTX would
show our fault, not NVVM's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpusem.calculus.bundl.printer import print_program
from gpusem.calculus.bundl.walk import statement_count
from gpusem.compiler.backends.nvrtc_lib import Nvrtc
from gpusem.compiler.backends.ptx_oracle import PtxCheckReport, check_cuda, screen
from gpusem.fuzz import ptx_findings
from gpusem.fuzz.ptx_findings import PtxOutcome
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.targets import CheckResult

STEPS = 200_000  # the interpreter's budget for the definedness of a failing program


def check_ptx_property(generated: Generated, nvrtcs: tuple[Nvrtc, ...]) -> PtxOutcome:
    """Compile with our compiler, then with every NVRTC of `nvrtcs`; check each PTX."""
    (outcome,) = check_ptx_round([generated], nvrtcs)
    assert isinstance(outcome, PtxOutcome)  # not deferred
    return outcome


@dataclass(frozen=True, slots=True)
class DeferredPtx:
    """The verdict of a program the round's screen failed, decided when read
    (`check_ptx_round(defer=True)`, the reducer's batches): checking it alone (three
    NVRTC builds) and judging a finding (an interpreter run, a cpu-harness run) is
    most of a shrink step's cost, and a step reads a batch's verdicts only up to the
    first that still fails (`fuzz/bundl/shrink.py`). Decided, it is what the round
    would have said at once."""

    decide: Callable[[], PtxOutcome]


def check_ptx_round(round_: list[Generated], nvrtcs: tuple[Nvrtc, ...],
                    defer: bool = False) -> list[PtxOutcome | DeferredPtx]:
    """`check_ptx_property` of each program, the kernels screened together
    (`ptx_oracle.screen`: one NVRTC program per version for the round), a program the
    screen fails checked again alone (`check_cuda`): at once, or when read (`defer`)."""
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program

    outcomes: list[PtxOutcome | DeferredPtx | None] = []
    sources: dict[int, str] = {}
    for i, generated in enumerate(round_):
        try:
            sources[i] = compile_program(generated.program, CompileOptions()).source
            outcomes.append(None)
        except Exception as err:  # noqa: BLE001 - the compile property's to report
            outcomes.append(PtxOutcome(CheckResult(
                "invalid", kind="compile-error",
                detail=f"{type(err).__name__}: {err}"[:200]), frozenset()))
    screened = screen(list(sources.values()), nvrtcs) if sources else []
    for i, report in zip(sources, screened, strict=True):
        if report is not None:
            outcomes[i] = _verdict(round_[i], report)
            continue
        alone = _alone(round_[i], sources[i], nvrtcs)
        outcomes[i] = DeferredPtx(alone) if defer else alone()
    return [o for o in outcomes if o is not None]


def _alone(generated: Generated, source: str,
           nvrtcs: tuple[Nvrtc, ...]) -> Callable[[], PtxOutcome]:
    return lambda: _verdict(generated, check_cuda(source, nvrtcs))


def _verdict(generated: Generated, report: PtxCheckReport) -> PtxOutcome:
    labels = ptx_findings.labels(report)
    if not any(t.verdict is not None for t in report.toolchains):
        first = report.toolchains[0].build_error.splitlines()[:1]
        return PtxOutcome(CheckResult("invalid", kind="build-error",
                                      detail=" ".join(first)[:200]), labels)
    if not report.findings:
        return PtxOutcome(CheckResult("pass"), labels)
    if (why := _undefined(generated.program)) is not None:
        return PtxOutcome(CheckResult("invalid", kind="undefined", detail=why), labels)
    if not generated.race_free_by_construction:
        from gpusem.interpreter.bundl.reference import unproven_race_freedom

        if (why := unproven_race_freedom(generated.program)) is not None:
            return PtxOutcome(CheckResult("invalid", kind="racy", detail=why), labels)
    if (why := _unobservable(generated.program, report)) is not None:
        return PtxOutcome(CheckResult("invalid", kind="unobservable", detail=why),
                          labels)
    return PtxOutcome(ptx_findings.finding(
        report, {"program.bundl": print_program(generated.program)},
        statement_count(generated.program)), labels)


def _unobservable(program, report: PtxCheckReport) -> str | None:
    """Why a failure of `ld.nc-read-only` cannot show on a GPU, or None: every buffer
    the `.nc` loads may read stale ends, on the cpu harness, holding what it held
    before the kernel ran, so a read of the old contents reads the new ones too.
    The AST reducer keeps a finding's signature only: without this it shrank the
    stored value to the scratch's initial 0 (two ptx bundles right on the H200,
    FINDINGS.md "Not NVIDIA's"); with it, a reduced program still stores a value that
    differs from the buffer's initial contents. Findings of other checks, and runs
    the harness does not finish, are not judged here."""
    params = {f.param for f in report.findings}
    if not params or any(f.check != "ld.nc-read-only" for f in report.findings):
        return None
    import numpy as np

    from gpusem.compiler.backends.kernel import prepare_args
    from gpusem.compiler.bundl_cuda.launch import jobs_for
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl.compile_property import shared_backend

    (job,) = jobs_for(program, compile_program(program, CompileOptions()), (0,), 10.0)
    before, _ = prepare_args(job)
    (result,) = shared_backend("cpu").run([job])
    if result.kind != "ok" or not params <= set(before) & set(result.outputs):
        return None
    if any(not np.array_equal(result.outputs[p], before[p]) for p in params):
        return None
    return (f"unobservable: {', '.join(sorted(params))} ends as it began, so a "
            "stale (.nc) read of it reads what a fresh one would")


def _undefined(program) -> str | None:
    """Why the program has no defined behaviour to miscompile (a trap such as an
    index out of bounds, no termination within the step budget), or None. The
    generators index in bounds, but the AST reducer keeps only the signature: without
    this a shrunk program read `st[7]` of an `int[1]` (campaign of 2026-11-28), and
    NVVM may do anything with such a kernel."""
    from gpusem.interpreter.bundl.schedulers import run_program

    outcome = run_program(program, "rr", max_steps=STEPS)
    if outcome.kind != "terminated" or getattr(outcome, "trap", False):
        return f"not a defined run: {outcome.kind}: {getattr(outcome, 'message', '')}"[
            :200]
    return None
