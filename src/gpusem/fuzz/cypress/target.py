"""The `cypress` target of `gpusem fuzz`: our Cypress compiler (compiler/cypress_cuda,
seed 001 Sec. 4.2) and the legality rules under test against the sequential reading
and the event machine. A program is a `.cyp` text (fuzz/cypress/strategies.py: a tiled
GEMM under a drawn mapping); an illegal mapping is `invalid`, counted by its rule.

Properties:
  passes   each pass preserves meaning: after the dependence analysis, vectorisation,
           copy elimination, allocation and warp specialisation with pipelining (the
           mapping's `warpspecialize` and `pipeline`), the event IR is race-free and
           computes,
           under a random schedule, what seq computes, which
           is C = A @ B and X = A (seed 001 l.163: a mapping "can only affect
           performance, not correctness")
  mapping  the legality checker against the event machine: a mapping the checker
           accepts has seq = (A @ B, A) and a race-free dependence-analysis IR that
           computes it
  compiled the passes property, then the warp-specialised IR lowered to GPU IR
           (compiler/cypress_cuda/to_gpuir.py): AMIR's sync check accepts it and
           the kernel `gpuir_cuda` compiles, run on the campaign's backend (cpu
           harness or cuda), computes what seq computes (fuzz/cypress/compiled.py);
           an IR the lowering does not cover is invalid, `not-lowered`

Signatures are the pass and the kind (`cypress:copyelim:race`,
`cypress:lower:sync`), never the program.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.ast import Program
from gpusem.calculus.cypress.event_printer import print_events
from gpusem.calculus.cypress.inputs import header_inputs, make_inputs
from gpusem.calculus.cypress.machine import SHARED_BYTES_PER_BLOCK
from gpusem.calculus.cypress.reader import read_program
from gpusem.calculus.errors import GpusemError, IllTyped, Trap
from gpusem.compiler.cypress_cuda.allocate import allocate
from gpusem.compiler.cypress_cuda.copyelim import eliminate_copies
from gpusem.compiler.cypress_cuda.dependence import dependence_analysis
from gpusem.compiler.cypress_cuda.faults import FAULTS
from gpusem.compiler.cypress_cuda.vectorize import vectorize
from gpusem.compiler.cypress_cuda.warpspec import warp_specialise
from gpusem.compiler.gpuir_cuda.run import Case
from gpusem.fuzz.cypress.compiled import (
    GPUIR_FILE,
    Outcome,
    lower_and_check,
    run_cases,
)
from gpusem.fuzz.cypress.strategies import programs
from gpusem.fuzz.targets import CheckResult, Target, bundle_fault
from gpusem.interpreter.cypress.events import instantiate, orders, races, run_order
from gpusem.interpreter.cypress.seq import seq
from gpusem.interpreter.cypress.tree import check_tree, task_tree
from gpusem.typing_rules.cypress import check_program

PROPERTIES = ("passes", "mapping", "compiled")
FILE = "program.cyp"
Pass = Callable[[E.EventProgram, Program, int], E.EventProgram]
PASSES: tuple[tuple[str, Pass], ...] = (
    ("vectorize", lambda ir, p, lim: vectorize(ir)),
    ("copyelim", lambda ir, p, lim: eliminate_copies(ir, p)),
    ("allocate", lambda ir, p, lim: allocate(ir, p, limit=lim)),
    ("warpspec", lambda ir, p, lim: warp_specialise(ir, p, limit=lim)),
)


def active_faults() -> list[str]:
    return [f for f in os.environ.get("GPUSEM_FAULT", "").split(",") if f in FAULTS]


class CypressTarget(Target):
    name = "cypress"
    properties = PROPERTIES
    backends = ("cpu", "cuda")  # the event machine runs on cpu whatever is asked

    def __init__(self, backend: str = "cpu") -> None:
        super().__init__(backend)
        self._ready: dict[str, CheckResult] = {}  # prefetched compiled verdicts

    def strategy(self, prop: str) -> Any:
        return programs()

    def size(self, program: str) -> int:
        """Mapping lines: what a drawn case varies (the variants are fixed)."""
        return sum(1 for line in program.splitlines() if "TaskMapping(" in line)

    def program_files(self, program: str) -> dict[str, str]:
        return {FILE: program}

    def check(self, program: str, prop: str = "passes") -> CheckResult:
        if prop != "compiled":
            front = self._front(program, prop)
            assert isinstance(front, CheckResult)  # only `compiled` goes on to lower
            return front
        ready = self._ready.pop(program, None)
        return ready if ready is not None else self._compiled_round([program])[program]

    def prefetch(self, programs: list, prop: str) -> bool:
        """The compiled property for a whole round (`_compiled_round`)."""
        if prop != "compiled":
            return False
        self._ready = self._compiled_round(programs)
        return True

    def _compiled_round(self, programs: list[str]) -> dict[str, CheckResult]:
        """The compiled property's verdicts: every program up to its backend run,
        then one backend call for all (one build)."""
        out: dict[str, CheckResult] = {}
        waiting: list[tuple[str, E.EventProgram, Case]] = []
        for program in programs:
            front = self._front(program, "compiled")
            if isinstance(front, CheckResult):
                out[program] = front
                continue
            ir, p, arrays, want = front
            first = lower_and_check(ir, p, arrays, want)
            if isinstance(first, Outcome):
                out[program] = self._compiled(program, ir, first)
            else:
                waiting.append((program, ir, first))
        outs = run_cases([c for _, _, c in waiting], self.backend)
        for (program, ir, _), res in zip(waiting, outs, strict=True):
            out[program] = self._compiled(program, ir, res)
        return out

    def _front(self, program: str, prop: str) -> CheckResult | tuple[
            E.EventProgram, Program, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """The passes and mapping properties; for compiled, what they leave to
        lower (the warp-specialised IR, the program, its inputs, seq)."""
        size = self.size(program)
        try:
            p = read_program(program, FILE)
            arrays, scalars = make_inputs(header_inputs(program) or "")
        except GpusemError as err:
            return self._finding(program, "cypress:generator", "generator", str(err))
        rule = _illegal(p, arrays, scalars)
        if rule:
            return CheckResult("invalid", kind=f"illegal:{rule}", size=size)
        try:
            want, _ = seq(p, arrays, scalars)
        except IllTyped as err:  # the rules that watch the reading
            return CheckResult("invalid", kind=f"illegal:{err.rule}", size=size)
        if not (np.array_equal(want["C"], arrays["A"] @ arrays["B"])
                and np.array_equal(want["X"], arrays["A"])):
            return self._finding(program, "cypress:seq:mismatch", "seq",
                                 "seq differs from C = A @ B, X = A")
        schedule = f"random:{zlib.crc32(program.encode())}"
        ir = dependence_analysis(p, arrays, scalars)
        steps = [("dependence", ir)]
        verdict = _run(ir, p, arrays, want, schedule)
        if verdict:
            return self._finding(program, f"cypress:dependence:{verdict[0]}",
                                 verdict[0], verdict[1], print_events(ir))
        if prop == "mapping":
            return CheckResult("pass", size=size)
        limit = _smem(program)
        for name, run in PASSES:
            try:
                ir = run(ir, p, limit)
            except IllTyped as err:
                if err.rule == "Alloc-OutOfMemory":
                    return CheckResult("invalid", kind="alloc-oom", size=size)
                if err.rule == "Pipeline-OutOfMemory":
                    return CheckResult("invalid", kind="pipeline-oom", size=size)
                raise
            steps.append((name, ir))
            verdict = _run(ir, p, arrays, want, schedule)
            if verdict:
                before = print_events(steps[-2][1])
                return self._finding(program, f"cypress:{name}:{verdict[0]}",
                                     verdict[0], verdict[1], print_events(ir), before)
        if prop == "compiled":
            return ir, p, arrays, want
        return CheckResult("pass", size=size)

    def _compiled(self, program: str, ir: E.EventProgram, out: Outcome
                  ) -> CheckResult:
        if out.kind == "pass":
            return CheckResult("pass", size=self.size(program))
        if out.kind == "not-lowered":
            return CheckResult("invalid", kind="not-lowered", detail=out.detail,
                               size=self.size(program))
        result = self._finding(program, f"cypress:lower:{out.kind}", out.kind,
                               out.detail, print_events(ir))
        result.files[GPUIR_FILE] = out.gpuir
        return result

    def _finding(self, program: str, signature: str, kind: str, detail: str,
                 after: str = "", before: str = "") -> CheckResult:
        files = {FILE: program}
        if after:
            files["after.ir"] = after
        if before:
            files["before.ir"] = before
        return CheckResult("finding", signature=signature, kind=kind,
                           detail=detail[:300], files=files, size=self.size(program),
                           program_file=FILE)

    def replay(self, files: dict[str, str], meta: dict) -> CheckResult:
        """The bundle's verdict now; a bundle found under a seeded fault replays with
        that fault on, unless GPUSEM_FAULT is set."""
        with bundle_fault(meta):
            return self.check(files[FILE], meta.get("property", "passes"))

    def finding_meta(self, result: CheckResult) -> dict:
        return {"fault": ",".join(active_faults())} if active_faults() else {}


def _illegal(p: Program, arrays: dict[str, np.ndarray], scalars: dict[str, int]
             ) -> str:
    errors = check_program(p)
    if not errors:
        try:
            errors = check_tree(task_tree(p, arrays, scalars))
        except (IllTyped, Trap) as err:
            return err.rule
    return errors[0].rule if errors else ""


def _smem(program: str) -> int:
    m = re.search(r"^# smem: (\d+)$", program, re.M)
    return int(m[1]) if m else SHARED_BYTES_PER_BLOCK


def _run(ir: E.EventProgram, p: Program, arrays: dict[str, np.ndarray],
         want: dict[str, np.ndarray], schedule: str) -> tuple[str, str] | None:
    """("race", what) or ("mismatch", what), or None: race-free and = seq under one
    random schedule (race-free: every schedule computes the same, so one order is
    enough; the race check does not write the instance, so the run reuses it)."""
    inst = instantiate(ir, p, arrays)
    found = races(inst)
    if found:
        return "race", str(found[0])
    got = run_order(inst, orders(inst, schedule))
    for name, value in want.items():
        if not np.array_equal(got[name], value, equal_nan=True):
            return "mismatch", f"{name} differs from seq under {schedule}"
    return None
