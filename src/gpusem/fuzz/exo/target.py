"""Exo-GPU as a campaign target (issue 16): its sync checker and its CUDA, against our
AMIR.

Properties:
  verdict  (default) Exo-GPU's checker verdict (accept, or its error class) against
           gpusem's AMIR verdict under `--rules paper` and `--rules fixed`, on
           generated programs, correct ones and near misses (`fuzz/exo/strategies.py`).
           A disagreement is a finding: both verdicts, the AMIR statements and
           gpusem's diagnostic, Exo's own account (its debug log), and the rule of
           the paper it turns on (`fuzz/exo/findings.py`).
  compile  a program both checkers accept is compiled by Exo to CUDA, built with nvcc
           for sm_90a and run (backend `cuda`), its outputs compared with gpusem's
           sequential reading (`fuzz/exo/compile_property.py`). Backend `cpu` builds
           only (no GPU here): a build failure is a finding, the run is skipped.

Which Exo: `GPUSEM_EXO_PYTHON` (the CLI's `--exo-python`) or the current interpreter;
none: exit 2 with one line (`compiler/gpuir_exo/driver.py`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gpusem.calculus.errors import GpusemError
from gpusem.compiler.gpuir_exo.driver import ExoDriver
from gpusem.fuzz.exo.checking import Checked, check_program, check_text
from gpusem.fuzz.exo.findings import result_of
from gpusem.fuzz.exo.shrink import REDUCE_S
from gpusem.fuzz.exo.strategies import ExoProgram, programs
from gpusem.fuzz.targets import CheckResult, Target


class ExoTarget(Target):
    name = "exo"
    properties = ("verdict", "compile")
    backends = ("cpu", "cuda")

    def __init__(self, backend: str = "cpu", timeout: float = 60.0,
                 driver: ExoDriver | None = None):
        self.backend = backend
        self._cache: dict = {}
        self.driver = driver if driver is not None else ExoDriver(timeout=timeout)
        self.install = self.driver.install  # starts the worker: unavailable -> exit 2
        self._harness = None

    def close(self) -> None:
        self.driver.close()
        if self._harness is not None:
            self._harness.close()
            self._harness = None

    def strategy(self, prop: str):
        return programs()

    def load_program(self, files: dict[str, str], meta: dict) -> ExoText:
        """A bundle's program and its sizes, for `gpusem reduce`."""
        import json

        defines = json.loads(files.get("defines.json", "{}"))
        return ExoText(files["program.gpuir"], tuple(sorted(defines.items())))

    def size(self, program: ExoProgram) -> int:
        return program.source().count("\n")

    # ------------------------------------------------------------------ check
    def prefetch(self, programs: list, prop: str) -> bool:
        """compile: one Exo compile, one nvcc build and one runner for the round's
        accepted programs; `check` then finds the verdicts."""
        if prop != "compile":
            return False
        from gpusem.fuzz.exo.compile_property import compile_batch

        todo = [p for p in dict.fromkeys(programs) if p not in self._cache]
        checked = {p: check_program(self.driver, p) for p in todo}
        run = [p for p, c in checked.items() if c.both_accept and not c.unexpressible]
        results = compile_batch(self.driver, self.harness, [checked[p] for p in run]) \
            if run else []
        for p, c in checked.items():
            self._cache[p] = self._result(c, "verdict-only", 0.0)
        for p, r in zip(run, results, strict=True):
            self._cache[p] = r.result()
        return True

    @property
    def harness(self):
        if self._harness is None:
            from gpusem.compiler.gpuir_exo.harness import Harness

            self._harness = Harness(self.backend)
        return self._harness

    def check(self, program: ExoProgram, prop: str = "verdict") -> CheckResult:
        if prop == "compile" and program in self._cache:
            return self._cache[program]
        t0 = time.perf_counter()
        c = check_program(self.driver, program)
        return self._result(c, prop, t0)

    def _result(self, c: Checked, prop: str, t0: float) -> CheckResult:
        if c.unexpressible:
            return CheckResult("invalid", kind="unexpressible", detail=c.unexpressible)
        if prop == "compile":
            return self._compile(c, t0)
        if prop == "verdict-only":  # compile: a program not both accept is not compared
            return CheckResult("invalid", kind="not accepted by both",
                               detail=c.comparison.signature or "rejected")
        res = result_of(c)
        res.seconds = time.perf_counter() - t0
        return res

    def _compile(self, c: Checked, t0: float) -> CheckResult:
        from gpusem.fuzz.exo.compile_property import check_compiled

        if not c.both_accept:
            return CheckResult("invalid", kind="not accepted by both",
                               detail=c.comparison.signature or "rejected")
        res = check_compiled(self.driver, self.harness, c)
        res.seconds = time.perf_counter() - t0
        return res

    def minimise(self, program: ExoProgram, res: CheckResult,
                 prop: str = "verdict", budget_s: float | None = None) -> CheckResult:
        """The GPU IR reducer (`fuzz/exo/shrink.py`) after hypothesis: delete and
        simplify statements while the finding's signature stays."""
        if prop != "verdict" or res.status != "finding":
            return res
        from gpusem.fuzz.exo.shrink import reduce_source

        try:
            smaller = reduce_source(self.driver, program.source(), program.defines(),
                                    res.signature,
                                    REDUCE_S if budget_s is None else budget_s)
        except GpusemError:
            return res
        if smaller is None:
            return res
        c = check_text(self.driver, smaller, program.defines())
        new = result_of(c)
        return new if new.signature == res.signature else res

    def finding_meta(self, result: CheckResult) -> dict:
        return {"versions": {"exo": f"{self.install.branch}@{self.install.commit[:12]}",
                             "exo-fingerprint": self.install.fingerprint},
                "exo": self.install.as_json(),
                "device": "none (checker)" if self.backend == "cpu" else "cuda"}

    def replay(self, files: dict[str, str], meta: dict) -> CheckResult:
        import json

        defines = json.loads(files.get("defines.json", "{}"))
        c = check_text(self.driver, files["program.gpuir"], defines)
        if c.unexpressible:
            return CheckResult("invalid", kind="unexpressible", detail=c.unexpressible)
        if meta.get("property") == "compile":
            return self._compile(c, time.perf_counter())
        return result_of(c)


@dataclass(frozen=True)
class ExoText:
    """A program read back from a bundle (text and sizes): what `check` and
    `minimise` take, as they take a generated `ExoProgram`."""

    text: str
    sizes: tuple[tuple[str, int], ...] = ()
    mutation: str = ""

    def source(self, name: str = "gen") -> str:
        return self.text

    def defines(self) -> dict[str, int]:
        return dict(self.sizes)
