"""The `ptx` property's findings, shared by every target that emits CUDA (issue 23,
item 3): the coverage labels of what the static PTX checks saw, the cause-level
signature, and the bundle files (`kernel.cu`, each failing version's PTX, the
excerpt). Language-neutral: the Bundl and GPU IR targets both use it.

A failure's signature is `ptx:CHECK:ATTRIBUTION:VERSIONS`: the check, who is at fault
(`nvvm`; `ours` where our `.cu` promised `const` on a buffer it writes) and the set of
NVRTC versions whose PTX fails it, so one miscompilation gives one bundle however
many programs show it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusem.compiler.backends.nvrtc_lib import Nvrtc
from gpusem.compiler.backends.ptx_check import CHECKS, PtxFinding
from gpusem.compiler.backends.ptx_oracle import PtxCheckReport
from gpusem.fuzz.targets import CheckResult

CONTEXT = 2  # PTX lines shown around a finding's load and store
NONTRIVIAL = "ptx:kernel reads one buffer and writes another"


@dataclass(frozen=True, slots=True)
class PtxOutcome:
    """A program's verdict, and the coverage labels of what the checks saw (so a
    campaign's coverage table costs no second run)."""

    result: CheckResult
    labels: frozenset[str]


def labels_of(nvrtcs: tuple[Nvrtc, ...]) -> tuple[str, ...]:
    """Every coverage label of the property, for the installed versions."""
    out = [NONTRIVIAL]
    for n in nvrtcs:
        out += [f"ptx:{n.label}:built", f"ptx:{n.label}:ld.global.nc",
                *(f"ptx:{n.label}:{name} failed" for name, _ in CHECKS)]
    return tuple(out)


def labels(report: PtxCheckReport) -> frozenset[str]:
    """The labels of `labels_of` that one program's report exercises."""
    out = set()
    for t in report.toolchains:
        if t.verdict is None:
            continue
        out.add(f"ptx:{t.nvrtc.label}:built")
        if t.verdict.nc_loads:
            out.add(f"ptx:{t.nvrtc.label}:ld.global.nc")
        if t.verdict.reads_one_writes_another:
            out.add(NONTRIVIAL)
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


def finding(report: PtxCheckReport, program_files: dict[str, str],
            size: int) -> CheckResult:
    """The finding of a failed report: the program's files (its first is the one a
    report points at), `kernel.cu`, each failing version's PTX, the excerpt, the
    trace."""
    sig = signature(report)
    files = dict(program_files) | {"kernel.cu": report.source,
                                   "ptx_excerpt.txt": "", "trace.txt": ""}
    excerpts, trace = [], [f"property ptx; signature {sig}", *report.lines()]
    for t in report.toolchains:
        if not t.findings:
            continue
        name = f"nvrtc-{t.nvrtc.version[0]}.{t.nvrtc.version[1]}.ptx"
        files[name] = t.ptx
        excerpts += [excerpt(t.ptx, f, name) for f in t.findings]
    files["ptx_excerpt.txt"] = "\n".join(excerpts)
    files["trace.txt"] = "\n".join(trace) + "\n"
    first = report.findings[0]
    return CheckResult("finding", signature=sig, kind=f"ptx {first.check}",
                       detail=first.one_line()[:300], files=files, size=size,
                       program_file=next(iter(program_files), ""))


def meta(nvrtcs: tuple[Nvrtc, ...]) -> list[dict[str, str]]:
    """The versions, targets and libraries a ptx bundle records."""
    return [{"version": f"{n.version[0]}.{n.version[1]}", "arch": n.arch,
             "library": n.path} for n in nvrtcs]


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
