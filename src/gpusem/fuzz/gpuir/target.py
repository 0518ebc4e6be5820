"""The GPU IR target of `gpusem fuzz`: the seq = par property of AMIR (DESIGN.md).

A generated GPU IR kernel (`fuzz/gpuir/strategies`) is sync-checked (GPU IR -> AMIR),
compiled to CUDA and run on a backend; `fuzz/gpuir/seqpar` classifies it. Only a
VIOLATION (the checker accepts, yet a schedule disagrees with the sequential reading)
is a finding; witnesses (rejected, and a schedule shows why) pass; false positives
(rejected, no schedule shows a difference) and unsupported programs are counted as
`invalid`, apart.
"""

from __future__ import annotations

from gpusem.fuzz.environment import device_name, tool_versions
from gpusem.fuzz.targets import CheckResult, Target


class GpuirTarget(Target):
    name = "gpuir"
    properties = ("seqpar",)
    backends = ("cpu", "cuda")

    def __init__(self, backend: str = "cpu"):
        self.backend = backend
        self._cache: dict = {}

    def close(self) -> None:
        self._cache.clear()

    def strategy(self, prop: str):
        from gpusem.fuzz.gpuir.strategies import kernels

        return kernels()

    def size(self, kernel) -> int:
        return kernel.source().count("\n")

    def coverage(self, kernel) -> set[str]:
        """The AMIR rules this program reaches (fuzz/gpuir/coverage.py; issue 14 item
        7): Figure 5 rows, Figure 19 cases, Figure 16 rows, the checks of Figure 7
        that met a record, the failing check of a rejection."""
        from gpusem.fuzz.gpuir.coverage import coverage_of

        return coverage_of(kernel.source())

    def coverage_labels(self) -> tuple[str, ...]:
        """Every label `coverage` can give: a label at 0 in a campaign is a blind
        spot of the generator."""
        from gpusem.fuzz.gpuir.coverage import LABELS

        return LABELS

    def prefetch(self, kernels: list, prop: str) -> bool:
        """One backend build for the whole round; True: `check` finds the verdicts."""
        from gpusem.fuzz.gpuir.seqpar import check_sources

        todo = list(dict.fromkeys(kernels))
        items: list[tuple[str, str, dict]] = [(f"k{i}.gpuir", k.source(), {})
                                              for i, k in enumerate(todo)]
        for kernel, outcome in zip(todo, check_sources(items, self.backend), strict=True):
            self._cache[kernel] = outcome
        return True

    def check(self, kernel, prop: str = "seqpar") -> CheckResult:
        from gpusem.fuzz.gpuir.seqpar import check_sources

        outcome = self._cache.get(kernel)
        if outcome is None:
            (outcome,) = check_sources([("k.gpuir", kernel.source(), {})], self.backend)
        kind = outcome.classification
        if kind in ("holds", "witness"):
            return CheckResult("pass")
        if kind != "VIOLATION":
            return CheckResult("invalid", kind=kind, detail=outcome.verdict.describe())
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
        meta = {"versions": tool_versions(self.backend),
                "device": device_name(self.backend)}
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

        (o,) = check_sources([("program.gpuir", files["program.gpuir"], {})],
                             meta["backend"])
        if o.classification == "VIOLATION":
            return CheckResult("finding", signature=meta["signature"], kind="seqpar",
                               detail=o.verdict.describe())
        return CheckResult("pass")


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
