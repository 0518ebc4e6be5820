"""The `ckernel` target of `gpusem fuzz`: NVIDIA's CUDA toolchain under test through
generated CKernel programs (issue 23, item 5: "hunt on purpose").

Properties:
  compile     the emitted CUDA on the backend = the reference (check.py)
  emi         every EMI variant too (emi.py)
  toolchain   every configuration of a toolchain matrix = the reference (hooks.py)
  ptx         the static PTX check finds nothing (hooks.py; no GPU)
  sass        the static SASS check finds nothing (hooks.py, sass_check.py: ptxas
              -O3 SASS against the PTX, toolchain finding T2's class; no GPU)
  printparse  parse . print = id on the program

Signatures are cause-level: `<property>:<kind>` (`compile:mismatch`,
`compile:build_error`, `emi:emi-mismatch`, `toolchain:<configs>`, `ptx:<checks>`,
`sass:<checks>`),
never the program, so one bug seen in many programs is one bundle.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from gpusem.calculus.ckernel import ast as A
from gpusem.calculus.ckernel.parser import parse_kernel
from gpusem.calculus.ckernel.printer import print_kernel
from gpusem.fuzz.ckernel import hooks
from gpusem.fuzz.ckernel.check import (
    CPU_SEEDS,
    Reference,
    Verdict,
    check_round,
    first_difference,
    launches,
    reference,
    seeds_for,
)
from gpusem.fuzz.environment import device_name, tool_versions
from gpusem.fuzz.targets import CUDA_RUNTIME, CheckResult, Target, bundle_fault

SHRINK_BUDGET_S = 60.0
PROPERTIES = ("compile", "emi", "toolchain", "ptx", "sass", "printparse")


class CkernelTarget(Target):
    name = "ckernel"
    properties = PROPERTIES
    backends = ("cpu", "cuda")
    requires_on: ClassVar = {"cuda": CUDA_RUNTIME}

    # of --shrink-time, hypothesis's share: the batched reducer (one backend call a
    # step) shrinks these kernels far better than hypothesis's one check a candidate
    hypothesis_share = 0.1

    def probe(self, prop: str) -> str | None:
        """The campaign's preflight (`targets.preflight`): the `toolchain` property
        on a GPU builds with nvcc, ptxas and cuobjdump (nvcc-O3, nvcc-G, ptxas-O0)."""
        if prop != "toolchain" or self.backend != "cuda":
            return None
        from gpusem.compiler.backends.toolchain_build import find_tool

        return None if find_tool("nvcc") else "nvcc not found (nvcc-O3, nvcc-G, ptxas-O0)"

    def __init__(self, backend: str = "cpu", max_templates: int = 10) -> None:
        self.backend = backend
        self.max_templates = max_templates
        self._runner: Any = None
        self._refs: dict[A.Kernel, Reference] = {}
        self._cache: dict[tuple[str, A.Kernel], CheckResult] = {}
        # hooks.py: the toolchain matrix and the PTX checker, or a test's own
        self.matrix: hooks.ToolchainMatrix | None = None
        self.ptx_checker: hooks.PtxChecker | None = None

    def close(self) -> None:
        if self._runner is not None:
            getattr(self._runner, "close", lambda: None)()
            self._runner = None
        if self.matrix is not None:
            getattr(self.matrix, "close", lambda: None)()
        self._refs.clear()
        self._cache.clear()

    def runner(self) -> Any:
        if self._runner is None:
            from gpusem.compiler.backends import get_backend

            self._runner = get_backend(self.backend)
        return self._runner

    def strategy(self, prop: str) -> Any:
        from gpusem.fuzz.ckernel.templates import kernels

        return kernels(max_templates=self.max_templates)

    def size(self, program: A.Kernel) -> int:
        return A.statement_count(program.body)

    def reference(self, k: A.Kernel) -> Reference:
        if k not in self._refs:
            if len(self._refs) > 4096:
                self._refs.clear()
            self._refs[k] = reference(k)
        return self._refs[k]

    def attribute(self, result: CheckResult, prop: str) -> dict | None:
        """The `attribution.json` of a final finding (`fuzz/attribution.py`): the
        finding's kernel re-run under the toolchain matrix (on the cpu backend: the
        harness only), four launches (re-runs on a GPU), and the static PTX check.
        CKernel has one reference, so no second reference path is offered. An `emi`
        finding is attributed on the kernel as drawn: a failure of a variant only is
        `undecided` here, with the matrix's runs as evidence."""
        import time

        from gpusem.fuzz.attribution import Case, attribute, without_runs

        if prop not in ("compile", "emi", "toolchain") or (
                "program.ck" not in result.files):
            return None
        failing = "nvrtc" if self.backend == "cuda" else "cpu"
        if result.kind == "internal":
            return without_runs("gpusem", "internal", result.detail, failing)
        start = time.perf_counter()
        k = parse_kernel(result.files["program.ck"], "program.ck")
        ref = self.reference(k)
        if ref.run is None:
            return without_runs("gpusem", "ill-typed", str(ref.ill_typed), failing)
        matrix = self.matrix or hooks.default_matrix(self.backend)
        if matrix is None:
            return None
        from gpusem.compiler.backends.toolchain import installed_checker

        found = attribute(Case(launches(k, CPU_SEEDS), failing,
                               lambda outputs: first_difference(ref.expected, outputs)),
                          matrix, installed_checker())
        found["seconds"] = round(time.perf_counter() - start, 3)
        return found

    # ------------------------------------------------------------------ checking
    def prefetch(self, programs: list, prop: str) -> bool:
        """The round's verdicts in one backend call (check then looks them up)."""
        todo = list(dict.fromkeys(programs))
        if prop in ("compile", "emi"):
            refs = [self.reference(k) for k in todo]
            verdicts = check_round(refs, self.runner(), seeds_for(self.backend),
                                   emi=prop == "emi")
            results = [self._result(k, v, prop) for k, v in zip(todo, verdicts,
                                                                 strict=True)]
        elif prop == "toolchain":
            results = hooks.toolchain_round(self, todo)
        elif prop == "ptx":
            results = hooks.ptx_round(self, todo)
        elif prop == "sass":
            results = hooks.sass_round(self, todo)
        else:
            return False
        for k, res in zip(todo, results, strict=True):
            self._cache[(prop, k)] = res
        return True

    def check(self, program: A.Kernel, prop: str = "compile") -> CheckResult:
        cached = self._cache.pop((prop, program), None)
        if cached is not None:
            return cached
        if prop == "printparse":
            text = print_kernel(program)
            back = parse_kernel(text, "program.ck")
            if back == program:
                return CheckResult("pass")
            return CheckResult("finding", signature="printparse:differs",
                               kind="printparse", files={"program.ck": text},
                               size=self.size(program))
        self.prefetch([program], prop)
        return self._cache.pop((prop, program))

    def minimise(self, program: A.Kernel, res: CheckResult,
                 prop: str = "compile", budget_s: float | None = None) -> CheckResult:
        """The batched AST reducer (shrink.py) after hypothesis's shrinking; capped
        by `budget_s` (the campaign's --shrink-time left; None: SHRINK_BUDGET_S)."""
        from gpusem.fuzz.ckernel.shrink import reduce

        if res.status != "finding" or prop not in ("compile", "emi", "toolchain"):
            return res

        def batch(kernels: list[A.Kernel]) -> list[CheckResult]:
            self.prefetch(kernels, prop)
            return [self.check(k, prop) for k in kernels]

        budget = SHRINK_BUDGET_S if budget_s is None else budget_s
        _, best = reduce(program, res, batch, budget)
        return best

    def _result(self, k: A.Kernel, v: Verdict, prop: str) -> CheckResult:
        if v.agree:
            return CheckResult("pass")
        files = self.finding_files(v.kernel or k, v, prop)
        return CheckResult("finding", signature=f"{prop}:{v.kind}", kind=v.kind,
                           detail=v.message[:200], files=files, size=self.size(k),
                           program_file="program.ck")

    def finding_files(self, k: A.Kernel, v: Verdict, prop: str) -> dict[str, str]:
        from gpusem.compiler.ckernel_cuda.emit import emit_kernel
        from gpusem.fuzz.ckernel.repro import inputs_json, repro_source

        ref = self.reference(k)
        files = {"program.ck": print_kernel(k), "kernel.cu": emit_kernel(k),
                 "inputs.json": inputs_json(k),
                 "expected.json": _json(ref.expected),
                 "actual.json": _json(v.actual) if v.actual else json.dumps(
                     {"error": v.kind, "message": v.message}) + "\n",
                 "trace.txt": (f"property {prop}; backend {self.backend}; schedule "
                               f"{v.schedule}; EMI mutation {v.mutation or 'none'}\n"
                               f"{v.kind}: {v.message}\n")}
        repro = repro_source(k, ref.expected)
        if repro:
            files["repro.cu"] = repro
        return files

    # ------------------------------------------------------------------ reports
    def coverage(self, program: A.Kernel) -> set[str]:
        from gpusem.fuzz.ckernel.coverage import coverage_of

        ref = self.reference(program)
        return coverage_of(program, ref.run.reached if ref.run else None)

    def coverage_labels(self) -> tuple[str, ...]:
        from gpusem.fuzz.ckernel.coverage import LABELS

        return LABELS

    def program_files(self, program: A.Kernel) -> dict[str, str]:
        return {"program.ck": print_kernel(program)}

    def finding_meta(self, result: CheckResult) -> dict:
        from gpusem.compiler.ckernel_cuda.faults import active_faults

        meta: dict[str, Any] = {"versions": tool_versions(self.backend),
                                "device": device_name(self.backend)}
        if active_faults():
            meta["fault"] = ",".join(active_faults())
        if "repro.cu" in result.files:
            from gpusem.compiler.backends.standalone import NVCC_COMMAND

            meta["nvcc_command"] = NVCC_COMMAND
        return meta

    def load_program(self, files: dict[str, str], meta: dict) -> A.Kernel:
        """A bundle's kernel, for `gpusem reduce`."""
        return parse_kernel(files["program.ck"], "program.ck")

    def replay(self, files: dict[str, str], meta: dict) -> CheckResult:
        """The bundle's verdict now; a bundle found under a seeded fault replays with
        that fault on (as the Bundl target's do), unless GPUSEM_FAULT is set."""
        program = parse_kernel(files["program.ck"], "program.ck")
        with bundle_fault(meta):
            # as it is: `invalid` or `skip` now is no pass (replay: cannot test)
            return self.check(program, meta["property"])


def _json(arrays: dict[str, Any]) -> str:
    return json.dumps({n: v.tolist() for n, v in arrays.items()}) + "\n"
