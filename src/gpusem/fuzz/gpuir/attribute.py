"""Attribution of GPU IR findings (`fuzz/attribution.py` is the decision procedure):
what only the GPU IR target knows, i.e. how one of its programs runs. A compiled GPU
IR program is a sequence of kernels, each stage's outputs feeding the next
(`compiler/gpuir_cuda/run.check_batch`), so one "launch" of the attribution is a whole
run: `Staged` runs every stage under one configuration of the toolchain matrix, in
order, and gives the run's final memory (or the first stage's failure) as one
`Result`. The reference is the sequential reading; GPU IR has one, so no second
reference path is offered.

On the cpu backend the matrix is the cpu harness alone (a finding there is the
harness's: rule cpu-harness); on cuda every configuration runs, a run of the
finding's seeds each (the cuda backend ignores the seed: re-runs).
"""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np

from gpusem.compiler.backends.kernel import Job, Result
from gpusem.compiler.gpuir_cuda.run import Case as RunCase
from gpusem.compiler.gpuir_cuda.run import first_difference
from gpusem.fuzz.attribution import Case, attribute

LAUNCH_TIMEOUT_S = 10.0


class Staged:
    """`matrix` (a `toolchain.Matrix`) over a staged program: `run(jobs)` takes one
    Job per run (its spec: stage 0's; its seed: the run's) and runs every stage under
    each configuration, each configuration its own memory."""

    def __init__(self, matrix: Any, case: RunCase) -> None:
        self.matrix, self.case = matrix, case
        self.shared: dict[str, dict[int, str]] = {}

    @property
    def seconds(self) -> dict[str, float]:
        return getattr(self.matrix, "seconds", {})

    def binary(self, spec: Any, config: str) -> Any:
        return self.matrix.binary(spec, config) if hasattr(self.matrix, "binary") \
            else None

    def run(self, jobs: list[Job]) -> dict[str, list[Result]]:
        return {config: self._runs(config, jobs) for config in self.matrix.configs}

    def _runs(self, config: str, jobs: list[Job]) -> list[Result]:
        compiled, _ = self.case.ready()
        state = [{k: v.copy() for k, v in self.case.inputs.items()} for _ in jobs]
        failed: dict[int, Result] = {}
        for stage, spec in enumerate(compiled.specs()):
            if compiled.kernels[stage].grid == 0:
                continue
            live = [i for i in range(len(jobs)) if i not in failed]
            stage_jobs = [Job(spec, {p.name: (np.asarray(state[i][p.name]).reshape(-1)
                                              if p.pointer else
                                              self.case.defines[p.name])
                                     for p in spec.params},
                              jobs[i].schedule_seed, jobs[i].timeout_s) for i in live]
            if not stage_jobs:
                break
            results = self.matrix.run(stage_jobs, (config,))[config]
            for i, res in zip(live, results, strict=True):
                if not res.ok:
                    failed[i] = res
                    continue
                for name, arr in res.outputs.items():
                    state[i][name] = arr.reshape(self.case.inputs[name].shape)
        return [failed.get(i) or Result("ok", state[i]) for i in range(len(jobs))]


def attribute_program(source: str, defines: dict, backend: str, matrix: Any,
                      checker: Any = None, seeds: tuple[int, ...] = (0, 1, 2, 3),
                      kernel_source: str = "") -> dict[str, Any] | None:
    """The `attribution.json` of a seqpar finding of `source` on `backend`; None where
    the program no longer compiles to a kernel to run (the fault that made the
    finding is not on now: then the attribution says so, blaming none)."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.compiler.gpuir_cuda.run import make_inputs, prepare
    from gpusem.typing_rules.gpuir.frontend import analyse

    start = time.perf_counter()
    proc = parse_module(source, "program.gpuir").procs[-1]
    case = RunCase(proc, dict(defines), make_inputs(proc, defines, 0), source=source,
                   file="program.gpuir")
    prepare(case, analyse(proc, defines))
    failing = "nvrtc" if backend == "cuda" else "cpu"
    if case.verdict is not None:
        return None
    compiled, expected = case.ready()
    env = ("the kernel compiled now differs from the finding's (GPUSEM_FAULT?)"
           if kernel_source and _unnamed(compiled.source) != _unnamed(kernel_source)
           else "")
    spec = compiled.specs()[0]
    jobs = [Job(spec, {}, s, LAUNCH_TIMEOUT_S) for s in seeds]

    def wrong_cell(outputs: dict) -> str | None:
        diff = first_difference(expected, outputs)
        return None if diff is None else (
            f"{diff[0]}{list(diff[1])} = {diff[3]!r}, expected {diff[2]!r}")

    found = attribute(Case(jobs if not env else [], failing, wrong_cell,
                           environment=env), Staged(matrix, case), checker)
    found["seconds"] = round(time.perf_counter() - start, 3)
    return found


def _unnamed(source: str) -> str:
    """CUDA text without the program file's name (the comments cite it: a round
    checks `k3.gpuir`, a bundle holds `program.gpuir`)."""
    return re.sub(r"[\w./-]*\.gpuir", "<program>", source)


__all__ = ["Staged", "attribute_program"]
