"""The Bundl target of `gpusem fuzz`: the oracle properties of DESIGN.md over
generated well-typed programs (`fuzz.strategies.bundl`).

Properties:
  compile     compiled CUDA (cpu harness or a GPU) ends in the interpreter's memory
  motion      the same with wait motion off (the unoptimised barrier placement)
  soundness   progress + preservation (Theorem 4.1) under a random schedule
  printparse  printing then parsing is the identity

A finding's signature is the property, the verdict kind and its class (the backend
result kind, the exception type, or the rule), so one bug class yields one bundle.
"""

from __future__ import annotations

import json
import os

from gpusem.calculus.bundl import ast as B
from gpusem.calculus.bundl.parser import parse_program
from gpusem.calculus.bundl.printer import print_program
from gpusem.fuzz.bundl.compile_property import (
    HARNESS_SEEDS,
    Verdict,
    check_program,
    reference,
)
from gpusem.fuzz.environment import device_name, tool_versions
from gpusem.fuzz.targets import CheckResult, Target, checked

PROPERTIES = ("compile", "motion", "soundness", "printparse", "teeth", "determinism",
              "bigsmall", "soundness-paper")


SHRINK_BUDGET_S = 60.0  # the AST reducer's default time cap per finding


def shrink_budget_s(default: float = SHRINK_BUDGET_S) -> float:
    """The reducer's time cap per finding: env GPUSEM_SHRINK_S, else `default`."""
    return float(os.environ.get("GPUSEM_SHRINK_S", default))


class BundlTarget(Target):
    name = "bundl"
    properties = PROPERTIES
    backends = ("cpu", "cuda")

    def __init__(self, backend: str = "cpu", max_blocks: int = 2, max_threads: int = 8):
        self.backend = backend
        self.max_blocks, self.max_threads = max_blocks, max_threads
        self._cache: dict = {}
        self.shrink_budget_s, self.shrink_max_tried = SHRINK_BUDGET_S, 400
        self.shrink_stats: dict[str, dict] = {}  # signature -> ShrinkStats, for meta

    def close(self) -> None:
        self._cache.clear()

    def strategy(self, prop: str):
        """Compiler properties mix kernel-shaped programs (race-free, observable) with
        the general well-typed generator (every statement form)."""
        from gpusem.fuzz.bundl.strategies.kernels import kernels
        from gpusem.fuzz.bundl.strategies.programs import programs
        from hypothesis import strategies as st

        general = programs(max_blocks=self.max_blocks, max_threads=self.max_threads)
        if prop in ("compile", "motion"):
            return st.one_of(kernels(max_blocks=4, max_threads=128), general)
        if prop == "determinism":  # small machines: exhaustive exploration stays cheap
            return st.one_of(kernels(max_blocks=2, max_threads=8), general)
        return general

    def prefetch(self, programs: list, prop: str) -> bool:
        """Batch-check a round's programs (one backend build for all of them); True
        when their verdicts are cached (the campaign then counts them directly)."""
        from gpusem.fuzz.bundl.compile_property import check_batch

        if prop not in ("compile", "motion"):
            return False
        self._cache.clear()
        todo = list(dict.fromkeys(programs))
        outcomes = [_reference(p) for p in todo]
        verdicts = check_batch(todo, self.backend, HARNESS_SEEDS, prop == "compile", outcomes)
        for program, verdict in zip(todo, verdicts, strict=True):
            self._cache[(prop, program)] = verdict
        return True

    def minimise(self, program: B.Program, res: CheckResult,
                 prop: str = "compile") -> CheckResult:
        """AST-level reduction after hypothesis's (`fuzz.bundl_shrink`): the kernel
        templates' parts hang together, which choice shrinking cannot undo. Capped by
        `shrink_budget_s` (env GPUSEM_SHRINK_S) and `shrink_max_tried` candidates."""
        from gpusem.fuzz.bundl.shrink import shrink
        from gpusem.fuzz.bundl.strategies import kernels as bundl_kernels

        if res.status != "finding":
            return res
        budget = shrink_budget_s(self.shrink_budget_s)
        _, small_res, stats = shrink(
            program, res.signature, lambda p: checked(self, p, prop),  # internal: too
            lambda ps: self.prefetch(ps, prop), budget, self.shrink_max_tried,
            (bundl_kernels.race_free_by_construction, bundl_kernels._remember))
        self.shrink_stats[res.signature] = stats.as_dict()
        return small_res if small_res is not None else res

    def size(self, program: B.Program) -> int:
        return B.statement_count(program)

    def check(self, program: B.Program, prop: str = "compile") -> CheckResult:
        match prop:
            case "compile" | "motion":
                return self._compile(program, sync_motion=prop == "compile")
            case "soundness":
                return self._soundness(program)
            case "printparse":
                return self._printparse(program)
            case "teeth" | "determinism" | "bigsmall" | "soundness-paper":
                from gpusem.fuzz.bundl import properties as bundl_properties

                return getattr(bundl_properties, prop.replace("-", "_"))(program)
        raise AssertionError(prop)

    # ------------------------------------------------------------------ properties

    def _compile(self, program: B.Program, sync_motion: bool) -> CheckResult:
        prop = "compile" if sync_motion else "motion"
        verdict = self._cache.get((prop, program))
        if verdict is None:
            verdict = check_program(program, self.backend, HARNESS_SEEDS, sync_motion,
                                    outcome=_reference(program))
        if verdict.kind in ("racy", "not-compared", "unsupported"):
            return CheckResult("invalid", kind=verdict.kind, detail=verdict.message)
        if verdict.agree:
            return CheckResult("pass")
        return self._finding(program, verdict, "compile" if sync_motion else "motion")

    def _finding(self, program: B.Program, v: Verdict, prop: str) -> CheckResult:
        klass = v.message.split(":", 1)[0] if v.message else v.kind
        files = {
            "program.bundl": print_program(program),
            "kernel.cu": v.kernel_source,
            "inputs.json": _inputs_json(program),
            "expected.json": json.dumps(v.expected, indent=1) + "\n",
            "actual.json": json.dumps(v.actual if v.actual is not None
                                      else {"error": v.message}, indent=1) + "\n",
            "trace.txt": (f"property {prop}; backend {self.backend}; harness schedule "
                          f"{v.schedule}\n{v.describe()}\n"),
        }
        return CheckResult("finding", signature=f"{prop}:{v.kind}:{klass}",
                           kind=f"{prop} {v.kind}", detail=v.describe(), files=files,
                           size=self.size(program))

    def _soundness(self, program: B.Program) -> CheckResult:
        from gpusem.interpreter.bundl.schedulers import run_program

        outcome = run_program(program, schedule="random:7", max_steps=200_000)
        if outcome.kind in ("terminated", "budget") or getattr(outcome, "trap", False):
            return CheckResult("pass")
        files = {"program.bundl": print_program(program),
                 "trace.txt": f"{outcome.kind} in {outcome.rule}: {outcome.message}\n"}
        return CheckResult("finding", signature=f"soundness:{outcome.kind}:{outcome.rule}",
                           kind=f"soundness {outcome.kind}",
                           detail=f"{outcome.rule}: {outcome.message}", files=files,
                           size=self.size(program))

    def _printparse(self, program: B.Program) -> CheckResult:
        text = print_program(program)
        try:
            back = parse_program(text, "<printed>")
        except Exception as err:  # noqa: BLE001 - any failure is the finding
            back, why = None, f"{type(err).__name__}: {err}"
        else:
            why = "" if back == program else "parse(print(p)) != p"
        if not why:
            return CheckResult("pass")
        return CheckResult("finding", signature=f"printparse:{why.split(':')[0]}",
                           kind="printparse", detail=why,
                           files={"program.bundl": text, "trace.txt": why + "\n"},
                           size=self.size(program))

    # --------------------------------------------------------------------- bundles

    def finding_meta(self, result: CheckResult) -> dict:
        meta = {"versions": tool_versions(self.backend), "device": device_name(self.backend),
                "fault": os.environ.get("GPUSEM_FAULT", "")}
        if result.signature in self.shrink_stats:
            meta["minimised"] = self.shrink_stats[result.signature]
        return meta

    def replay(self, files: dict[str, str], meta: dict) -> CheckResult:
        """Re-run the bundle's property; a finding made with a seeded fault is replayed
        with that fault on again (the bundle records it), unless one is already set."""
        program = parse_program(files["program.bundl"], "program.bundl")
        if meta.get("fault") and not os.environ.get("GPUSEM_FAULT"):
            os.environ["GPUSEM_FAULT"] = meta["fault"]
        return self.check(program, meta["property"])


def _reference(program: B.Program):
    """The interpreter's outcome; kernel-shaped programs are race-free by construction,
    the others must be proved race-free by the z3 analysis before they are compared."""
    from gpusem.fuzz.bundl.strategies.kernels import race_free_by_construction

    return reference(program, prove_race_free=not race_free_by_construction(program))


def _inputs_json(program: B.Program) -> str:
    from gpusem.compiler.bundl_cuda.launch import initial_globals

    arrays = {k: v.tolist() for k, v in initial_globals(program).items()}
    return json.dumps(arrays, indent=1) + "\n"
