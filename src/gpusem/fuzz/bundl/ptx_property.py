"""The `ptx` property of the Bundl target (issue 23, item 3): the PTX that every
installed NVRTC makes of the kernel our compiler emits obeys what the PTX ISA requires
of it (`compiler/backends/ptx_check.py`). No GPU: NVRTC only emits PTX.

A failure's signature is cause-level: `ptx:CHECK:ATTRIBUTION:VERSIONS`, the check, who
is at fault (`nvvm`; `ours` where our `.cu` promised `const` on a buffer it writes) and
the set of NVRTC versions whose PTX fails it, so one miscompilation gives one bundle
however many programs show it. Its bundle holds the program, `kernel.cu`, the PTX
excerpt of each failing version (`ptx_excerpt.txt`: the load, the store, the lines
between), each failing version's whole PTX, and the versions (`trace.txt`, and the
bundle's metadata).

A program the generator does not make race-free by construction is compared only once
the z3 race analysis proves it race-free (as the compile property does): under a race,
`__restrict__` on the kernel's parameters is itself a false promise, and the PTX would
show our fault, not NVVM's.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusem.calculus.bundl.printer import print_program
from gpusem.calculus.bundl.walk import statement_count
from gpusem.compiler.backends.nvrtc_lib import Nvrtc
from gpusem.compiler.backends.ptx_check import PtxFinding
from gpusem.compiler.backends.ptx_oracle import PtxCheckReport, check_many
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.targets import CheckResult

CONTEXT = 2  # PTX lines shown around a finding's load and store


@dataclass(frozen=True, slots=True)
class PtxOutcome:
    """The verdict, and the coverage labels of what the check saw (no second run)."""

    result: CheckResult
    labels: frozenset[str]


def labels_of(nvrtcs: tuple[Nvrtc, ...]) -> tuple[str, ...]:
    """Every coverage label of the property, for the installed versions."""
    from gpusem.compiler.backends.ptx_check import CHECKS

    out = ["ptx:kernel reads one buffer and writes another"]
    for n in nvrtcs:
        out += [f"ptx:{n.label}:built", f"ptx:{n.label}:ld.global.nc",
                *(f"ptx:{n.label}:{name} failed" for name, _ in CHECKS)]
    return tuple(out)


def check_ptx_property(generated: Generated, nvrtcs: tuple[Nvrtc, ...]) -> PtxOutcome:
    """Compile with our compiler, then with every NVRTC of `nvrtcs`; check each PTX."""
    return check_ptx_round([generated], nvrtcs)[0]


def check_ptx_round(round_: list[Generated],
                    nvrtcs: tuple[Nvrtc, ...]) -> list[PtxOutcome]:
    """`check_ptx_property` of each program, the kernels screened together
    (`ptx_oracle.check_many`: one NVRTC program per version for the round)."""
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program

    outcomes: list[PtxOutcome | None] = []
    sources: dict[int, str] = {}
    for i, generated in enumerate(round_):
        try:
            sources[i] = compile_program(generated.program, CompileOptions()).source
            outcomes.append(None)
        except Exception as err:  # noqa: BLE001 - the compile property's to report
            outcomes.append(PtxOutcome(CheckResult(
                "invalid", kind="compile-error",
                detail=f"{type(err).__name__}: {err}"[:200]), frozenset()))
    reports = check_many(list(sources.values()), nvrtcs) if sources else []
    for i, report in zip(sources, reports, strict=True):
        outcomes[i] = _verdict(round_[i], report)
    return [o for o in outcomes if o is not None]


def _verdict(generated: Generated, report: PtxCheckReport) -> PtxOutcome:
    labels = _labels(report)
    if not any(t.verdict is not None for t in report.toolchains):
        first = report.toolchains[0].build_error.splitlines()[:1]
        return PtxOutcome(CheckResult("invalid", kind="build-error",
                                      detail=" ".join(first)[:200]), labels)
    if not report.findings:
        return PtxOutcome(CheckResult("pass"), labels)
    if not generated.race_free_by_construction:
        from gpusem.fuzz.bundl.compile_property import unproven_race_freedom

        if (why := unproven_race_freedom(generated.program)) is not None:
            return PtxOutcome(CheckResult("invalid", kind="racy", detail=why), labels)
    return PtxOutcome(_finding(generated.program, report.source, report), labels)


def _labels(report: PtxCheckReport) -> frozenset[str]:
    out = set()
    for t in report.toolchains:
        if t.verdict is None:
            continue
        out.add(f"ptx:{t.nvrtc.label}:built")
        if t.verdict.nc_loads:
            out.add(f"ptx:{t.nvrtc.label}:ld.global.nc")
        if t.verdict.reads_one_writes_another:
            out.add("ptx:kernel reads one buffer and writes another")
        out |= {f"ptx:{t.nvrtc.label}:{f.check} failed" for f in t.findings}
    return frozenset(out)


def signature(report: PtxCheckReport) -> str:
    """`ptx:CHECK:ATTRIBUTION:VERSIONS` of the first failed check (checks in pipeline
    order), VERSIONS every version whose PTX fails that check, newest first."""
    first = report.findings[0]
    versions = [t.nvrtc for t in report.toolchains
                if any(f.check == first.check for f in t.findings)]
    tags = "+".join(f"{n.version[0]}.{n.version[1]}" for n in versions)
    return f"ptx:{first.check}:{first.attribution}:{tags}"


def _finding(program, source: str, report: PtxCheckReport) -> CheckResult:
    sig = signature(report)
    files = {"program.bundl": print_program(program), "kernel.cu": source,
             "ptx_excerpt.txt": "", "trace.txt": ""}
    excerpts, trace = [], [f"property ptx; signature {sig}", *report.lines()]
    for t in report.toolchains:
        if not t.findings:
            continue
        name = f"nvrtc-{t.nvrtc.version[0]}.{t.nvrtc.version[1]}.ptx"
        files[name] = t.ptx
        for f in t.findings:
            excerpts.append(excerpt(t.ptx, f, name))
    files["ptx_excerpt.txt"] = "\n".join(excerpts)
    files["trace.txt"] = "\n".join(trace) + "\n"
    first = report.findings[0]
    return CheckResult("finding", signature=sig, kind=f"ptx {first.check}",
                       detail=first.one_line()[:300], files=files,
                       size=statement_count(program), program_file="program.bundl")


def excerpt(ptx: str, f: PtxFinding, name: str) -> str:
    """The PTX lines from the store (if any) to the flagged instruction, with
    CONTEXT lines either side; each line numbered, the two marked."""
    lines = ptx.splitlines()
    marks = {f.line, f.store_line} - {0}
    lo, hi = max(1, min(marks) - CONTEXT), min(len(lines), max(marks) + CONTEXT)
    if hi - lo > 60:  # far apart: each with its context only
        keep = sorted({n for m in marks for n in range(m - CONTEXT, m + CONTEXT + 1)
                       if 1 <= n <= len(lines)})
    else:
        keep = list(range(lo, hi + 1))
    body = [f"{'>>' if n in marks else '  '} {n:5d}  {lines[n - 1]}" for n in keep]
    return "\n".join([f"== {name}: {f.check} ({f.attribution}): {f.why} {f.param}",
                      *body, ""])
