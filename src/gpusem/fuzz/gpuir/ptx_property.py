"""The `ptx` property of the GPU IR target (issue 23, item 3): the PTX every installed
NVRTC makes of the CUDA our GPU IR compiler emits obeys the static PTX checks
(`compiler/backends/ptx_check.py`). No GPU, no sync check: the checks are about the
PTX of any kernel, racy or not (our GPU IR kernels carry no `__restrict__`, so a
`.nc` load of a buffer the kernel writes is NVVM's alone). Signatures and bundles as
the Bundl target's (`fuzz/ptx_findings.py`).
"""

from __future__ import annotations

from gpusem.compiler.backends.nvrtc_lib import Nvrtc
from gpusem.compiler.backends.ptx_oracle import check_many
from gpusem.fuzz import ptx_findings
from gpusem.fuzz.ptx_findings import PtxOutcome
from gpusem.fuzz.targets import CheckResult

FILE = "program.gpuir"


def check_ptx_round(texts: list[str], nvrtcs: tuple[Nvrtc, ...]) -> list[PtxOutcome]:
    """The verdict on each GPU IR program text: compiled by our compiler (its last
    proc, no defines, as the generator writes them), screened by every NVRTC at once
    (`ptx_oracle.check_many`), a failing kernel checked again alone."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.compiler.gpuir_cuda.pipeline import compile_proc

    outcomes: list[PtxOutcome | None] = []
    sources: dict[int, str] = {}
    for i, text in enumerate(texts):
        try:
            proc = parse_module(text, FILE).procs[-1]
            sources[i] = compile_proc(proc, {}, source=text, file=FILE).source
            outcomes.append(None)
        except Exception as err:  # noqa: BLE001 - unsupported / seqpar's to report
            outcomes.append(PtxOutcome(CheckResult(
                "invalid", kind="compile-error",
                detail=f"{type(err).__name__}: {err}"[:200]), frozenset()))
    reports = check_many(list(sources.values()), nvrtcs) if sources else []
    for i, report in zip(sources, reports, strict=True):
        labels = ptx_findings.labels(report)
        if not any(t.verdict is not None for t in report.toolchains):
            result = CheckResult("invalid", kind="build-error",
                                 detail=report.toolchains[0].build_error[:200])
        elif not report.findings:
            result = CheckResult("pass")
        else:
            result = ptx_findings.finding(report, {FILE: texts[i]},
                                          texts[i].count("\n"))
        outcomes[i] = PtxOutcome(result, labels)
    return [o for o in outcomes if o is not None]
