"""The GPU IR target of `gpusem fuzz`: the seq = par property of AMIR (DESIGN.md).

A generated GPU IR kernel (`fuzz/gpuir/strategies`) is sync-checked (GPU IR -> AMIR),
compiled to CUDA and run on a backend; `fuzz/gpuir/seqpar` classifies it. Only a
VIOLATION (the checker accepts, yet a schedule disagrees with the sequential reading)
is a finding; witnesses (rejected, and a schedule shows why) pass; false positives
(rejected, no schedule shows a difference) and unsupported programs are counted as
`invalid`, apart, each with its reason (`seqpar.not_compared_reason`: the campaign
report's `not_compared` table).

The `ptx` property (`ptx_property.py`): the PTX every installed NVRTC makes of the
compiled kernel obeys the static PTX checks (no GPU).

A final seqpar finding is attributed (`attribute`, `fuzz/gpuir/attribute.py`): the
program re-run under the toolchain matrix, its verdict in the bundle's
`attribution.json`, as the bundl and ckernel targets do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from gpusem.fuzz.environment import device_name, tool_versions
from gpusem.fuzz.targets import CUDA_RUNTIME, CheckResult, Target, checked, ptx_probe


class GpuirTarget(Target):
    name = "gpuir"
    properties = ("seqpar", "ptx")
    backends = ("cpu", "cuda")
    requires_on: ClassVar = {"cuda": CUDA_RUNTIME}

    def __init__(self, backend: str = "cpu"):
        self.backend = backend
        self._cache: dict = {}
        self._prop = "seqpar"  # of the last check (coverage follows it)
        self._ptx: dict = {}  # kernel -> PtxOutcome (the ptx property)
        self._nvrtcs: tuple | None = None
        self._matrix = None  # the toolchain matrix, for attribution

    def close(self) -> None:
        self._cache.clear()
        self._ptx.clear()
        if self._matrix is not None:
            self._matrix.close()
            self._matrix = None

    def matrix(self):
        """The toolchain matrix of this target's backend (made once)."""
        if self._matrix is None:
            from gpusem.compiler.backends.toolchain import Matrix

            self._matrix = Matrix(self.backend)
        return self._matrix

    def attribute(self, result: CheckResult, prop: str) -> dict | None:
        """The `attribution.json` of a final seqpar finding (`fuzz/attribution.py`,
        through `fuzz/gpuir/attribute.py`): the program re-run, stage by stage, under
        the toolchain matrix (on cpu: the harness), with the static PTX check on
        cuda; None for the ptx property (its check is its evidence)."""
        from gpusem.fuzz.attribution import without_runs

        if prop != "seqpar" or "program.gpuir" not in result.files:
            return None
        failing = "nvrtc" if self.backend == "cuda" else "cpu"
        if result.kind == "internal":
            return without_runs("gpusem", "internal", result.detail, failing)
        if result.signature.startswith("seqpar:compile-error"):
            return without_runs("ours", "compile-error", result.detail, failing)
        from gpusem.compiler.backends.toolchain import installed_checker
        from gpusem.fuzz.gpuir.attribute import attribute_program

        return attribute_program(
            result.files["program.gpuir"], {}, self.backend, self.matrix(),
            installed_checker() if self.backend == "cuda" else None,
            kernel_source=result.files.get("kernel.cu", ""))

    def nvrtcs(self) -> tuple:
        """The installed NVRTCs (the ptx property; BadInput when there is none)."""
        if self._nvrtcs is None:
            from gpusem.compiler.backends.ptx_oracle import installed

            self._nvrtcs = installed()
        return self._nvrtcs

    def _ptx_outcomes(self, kernels: list) -> None:
        from gpusem.fuzz.gpuir.ptx_property import check_ptx_round

        todo = [k for k in dict.fromkeys(kernels) if k not in self._ptx]
        if len(self._ptx) > 4096:
            self._ptx.clear()
        outcomes = check_ptx_round([k.source() for k in todo], self.nvrtcs())
        self._ptx.update(zip(todo, outcomes, strict=True))

    def probe(self, prop: str) -> str | None:
        """The campaign's preflight (`targets.preflight`): the `ptx` property needs an
        installed NVRTC (`targets.ptx_probe`)."""
        return ptx_probe(self) if prop == "ptx" else None

    def strategy(self, prop: str):
        from gpusem.fuzz.gpuir.strategies import kernels

        if prop == "ptx":
            self.nvrtcs()  # no NVRTC installed: BadInput before any program (exit 2)
        return kernels()

    def size(self, kernel) -> int:
        return kernel.source().count("\n")

    def coverage(self, kernel) -> set[str]:
        """The AMIR rules this program reaches (fuzz/gpuir/coverage.py; issue 14 item
        7): Figure 5 rows, Figure 19 cases, Figure 16 rows, the checks of Figure 7
        that met a record, the failing check of a rejection."""
        from gpusem.fuzz.gpuir.coverage import coverage_of

        if self._prop == "ptx":
            self._ptx_outcomes([kernel])
            return set(self._ptx[kernel].labels)
        return coverage_of(kernel.source())

    def coverage_labels(self) -> tuple[str, ...]:
        """Every label `coverage` can give: a label at 0 in a campaign is a blind
        spot of the generator."""
        from gpusem.fuzz.gpuir.coverage import LABELS

        if self._prop == "ptx":
            from gpusem.fuzz.ptx_findings import labels_of

            return labels_of(self.nvrtcs())
        return LABELS

    def prefetch(self, kernels: list, prop: str) -> bool:
        """One backend build for the whole round; True: `check` finds the verdicts."""
        from gpusem.fuzz.gpuir.seqpar import check_sources

        if prop == "ptx":
            self._ptx.clear()
            self._ptx_outcomes(kernels)
            return True
        # only this batch's verdicts are kept: the campaign checks a batch before it
        # prefetches the next, and a cache of every batch grew by a program's source
        # and CUDA text (~8 KB) per program for the whole campaign (as the Bundl
        # target, which clears its cache per batch too)
        self._cache.clear()
        todo = list(dict.fromkeys(kernels))
        items: list[tuple[str, str, dict]] = [
            (f"k{i}.gpuir", k.source(), defines_of(k)) for i, k in enumerate(todo)]
        for kernel, outcome in zip(todo, check_sources(items, self.backend), strict=True):
            self._cache[kernel] = outcome
        return True

    def check(self, kernel, prop: str = "seqpar") -> CheckResult:
        from gpusem.fuzz.gpuir.seqpar import check_sources, not_compared_reason

        self._prop = prop
        if prop == "ptx":
            self._ptx_outcomes([kernel])
            return self._ptx[kernel].result
        outcome = self._cache.get(kernel)
        if outcome is None:
            (outcome,) = check_sources(
                [("k.gpuir", kernel.source(), defines_of(kernel))], self.backend)
        kind = outcome.classification
        if kind in ("holds", "witness"):
            return CheckResult("pass")
        if kind != "VIOLATION":  # its kind: why it was not compared (the report's)
            return CheckResult("invalid", kind=not_compared_reason(outcome, self.backend),
                               detail=outcome.verdict.describe())
        v = outcome.verdict
        files = {"program.gpuir": outcome.source, "kernel.cu": v.kernel_source,
                 "trace.txt": f"sync check: {outcome.sync}\nschedule: {v.schedule}\n"
                              f"{v.describe()}\n"}
        repro, repro_cpu = _repro(outcome), _repro(outcome, cpu=True)
        if repro:
            files["repro.cu"] = repro
        if repro_cpu:
            files["repro_cpu.cpp"] = repro_cpu
        first = (v.difference or ("",))[0]
        return CheckResult("finding", signature=f"seqpar:{v.kind}:{first}",
                           kind=f"seqpar {v.kind}", detail=v.describe()[:200],
                           files=files, size=self.size(kernel))

    def finding_meta(self, result: CheckResult) -> dict:
        meta: dict = {"versions": tool_versions(self.backend),
                      "device": device_name(self.backend)}
        if result.signature.startswith("ptx:"):
            from gpusem.fuzz.ptx_findings import meta as ptx_meta

            meta["nvrtc"] = ptx_meta(self.nvrtcs())
        if "repro.cu" in result.files:
            from gpusem.compiler.backends.standalone import NVCC_COMMAND

            meta["nvcc_command"] = NVCC_COMMAND
        if "repro_cpu.cpp" in result.files:
            from gpusem.compiler.backends.standalone_cpu import CPU_COMMAND

            meta["cpu_command"] = CPU_COMMAND
        return meta

    def program_files(self, kernel) -> dict[str, str]:
        return {"program.gpuir": kernel.source()}

    def replay(self, files: dict[str, str], meta: dict) -> CheckResult:
        from gpusem.fuzz.gpuir.seqpar import check_sources

        if meta["property"] == "ptx":
            from gpusem.fuzz.gpuir.ptx_property import check_ptx_round

            (ptx,) = check_ptx_round([files["program.gpuir"]], self.nvrtcs())
            return ptx.result
        text = files["program.gpuir"]  # its sizes from its `# defines:` header
        (o,) = check_sources([("program.gpuir", text, SourceKernel(text).defines)],
                             meta["backend"])
        if o.classification == "VIOLATION":
            return CheckResult("finding", signature=meta["signature"], kind="seqpar",
                               detail=o.verdict.describe())
        if o.classification in ("holds", "witness"):
            return CheckResult("pass")
        # set aside now (unsupported, a false positive): no pass (replay: cannot test)
        return CheckResult("invalid", kind=o.classification,
                           detail=o.verdict.describe())

    def load_program(self, files: dict[str, str], meta: dict) -> SourceKernel:
        """A bundle's program (or a user's .gpuir file), for `gpusem reduce`."""
        return SourceKernel(files["program.gpuir"])

    def minimise(self, kernel, res: CheckResult, prop: str = "seqpar",
                 budget_s: float | None = None) -> CheckResult:
        """Delete lines while the finding's signature stays (greedy, first line that
        can go, then again), for at most `budget_s` seconds (default REDUCE_S): a
        generated kernel's phases hang together, which choice shrinking keeps."""
        if res.status != "finding":
            return res
        deadline = time.monotonic() + (REDUCE_S if budget_s is None else budget_s)
        lines = kernel.source().splitlines()
        changed = True
        while changed and time.monotonic() < deadline:
            changed = False
            for i in range(len(lines)):
                if time.monotonic() >= deadline:
                    break
                cand = lines[:i] + lines[i + 1:]
                if not any(ln.strip() and not ln.lstrip().startswith("#")
                           for ln in cand):
                    continue
                r = checked(self, SourceKernel("\n".join(cand) + "\n"), prop)
                if r.status == "finding" and r.signature == res.signature:
                    lines, res, changed = cand, r, True
                    break
        return res


REDUCE_S = 60.0  # the line reducer's time cap when the caller gives none


@dataclass(frozen=True)
class SourceKernel:
    """A GPU IR program given as text (read back from a bundle or a file): what
    `check` takes, as it takes a generated kernel; its sizes from its `# defines:`
    header, if any."""

    text: str

    def source(self, name: str = "gen") -> str:
        return self.text

    @property
    def defines(self) -> dict[str, int]:
        from gpusem.calculus.gpuir.defines import header_defines

        return header_defines(self.text, "program.gpuir")


def defines_of(kernel) -> dict[str, int]:
    """The sizes a program names (a generated kernel has none: its are numbers)."""
    return dict(getattr(kernel, "defines", None) or {})


def _repro(outcome, cpu: bool = False) -> str:
    """The standalone reproducer (`compiler/gpuir_cuda/standalone.py`; `cpu`: the
    cpu harness's `repro_cpu.cpp`, under the witness's schedule), or "" when the
    program cannot be made into one (the finding stands without it)."""
    from gpusem.compiler.gpuir_cuda.standalone import standalone_proc

    seed = (outcome.verdict.schedule or 0) if cpu else None
    try:
        return standalone_proc(outcome.source, "program.gpuir", outcome.defines,
                               cpu_seed=seed)
    except Exception:  # noqa: BLE001 - a reproducer is a convenience, not the verdict
        return ""
