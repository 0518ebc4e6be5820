"""Attribution of Bundl findings (`fuzz/attribution.py` is the decision procedure):
what only the Bundl target knows, i.e. the program's launches, its reference memory,
the comparison of a launch's memory with it, and the second reference path.

The reference is the small-step machine (`compile_property.reference`: round-robin
and three more schedules, race freedom proved); the second path is the big-step
evaluator (`fast_reference.fast_reference`). Where they differ (kind, race verdict or
a cell's bits) the reference is wrong: verdict `gpusem`. Where big-step does not run
the program to its end, there is no second path (it is not evidence either way).
"""

from __future__ import annotations

import time
from typing import Any

from gpusem.calculus.bundl import ast as B
from gpusem.compiler.bundl_cuda.launch import as_bundl_values, first_difference, jobs_for
from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
from gpusem.fuzz.attribution import Case, attribute
from gpusem.fuzz.bundl.compile_property import HARNESS_SEEDS
from gpusem.interpreter.bundl.reference import (
    Reference,
    fast_reference,
    outcome_difference,
    reference,
)

LAUNCH_TIMEOUT_S = 5.0


def second_reference(prog: B.Program, full: Reference, prove_race_free: bool = True
                     ) -> str | None:
    """How big-step's outcome differs from small-step's (None: they agree, or big-step
    does not terminate: no second path). `prove_race_free` False: the program is
    race-free by construction, as its check took it (the z3 proof of a program of
    hundreds of statements took 8.8 s and decided nothing)."""
    fast = fast_reference(prog, prove_race_free=prove_race_free)
    if not fast.fast:
        return None
    return outcome_difference(fast, full)


def stored_second_reference(source: str, name: str = "program.bundl") -> str | None:
    """`second_reference` of a bundle's stored program, as today's reference decides
    it (`gpusem triage --redecide`, `fuzz/redecide.py`): None where the program is not
    compared today (stuck, racy: no second path to weigh). Recorded text cannot say
    whether a race verdict was only undecided (FINDINGS.md G1), so it is recomputed."""
    from gpusem.calculus.bundl.parser import parse_program

    prog = parse_program(source, name)
    full = reference(prog)
    if full.kind != "terminated" or full.racy:
        return None
    return second_reference(prog, full)


def case_of(prog: B.Program, sync_motion: bool, failing: str,
            kernel_source: str = "", prove_race_free: bool = True, sync: str = ""
            ) -> tuple[Case, Reference]:
    """The attribution case of a program whose compiled kernel disagreed with the
    reference on configuration `failing` (cuda: "nvrtc", cpu: "cpu")."""
    full = reference(prog, prove_race_free=prove_race_free)
    if full.kind != "terminated" or full.racy:
        env = f"the reference does not compare this program: {full.message[:160]}"
        return Case([], failing, lambda outputs: None, environment=env), full
    kernel = compile_program(prog, CompileOptions(sync_motion=sync_motion, sync=sync))
    if kernel_source and kernel.source != kernel_source:
        # the fault switched on then is not on now (GPUSEM_FAULT): say so, blame none
        env = "the kernel compiled now differs from the finding's (GPUSEM_FAULT?)"
        return Case([], failing, lambda outputs: None, environment=env), full
    jobs = jobs_for(prog, kernel, HARNESS_SEEDS, LAUNCH_TIMEOUT_S)

    def wrong_cell(outputs: dict) -> str | None:
        diff = first_difference(prog, full.globals, as_bundl_values(prog, outputs))
        if diff is None:
            return None
        name, i, expected, actual = diff
        return f"{name}[{i}] = {actual!r}, expected {expected!r}"

    return Case(jobs, failing, wrong_cell,
                second_reference(prog, full, prove_race_free)), full


def attribute_program(prog: B.Program, sync_motion: bool, backend: str,
                      matrix: Any, checker: Any = None, kernel_source: str = "",
                      prove_race_free: bool = True, sync: str = "") -> dict[str, Any]:
    """The `attribution.json` of a Bundl finding on `backend`; `seconds` counts the
    references too."""
    start = time.perf_counter()
    case, _ = case_of(prog, sync_motion, "nvrtc" if backend == "cuda" else "cpu",
                      kernel_source, prove_race_free, sync)
    found = attribute(case, matrix, checker)
    found["seconds"] = round(time.perf_counter() - start, 3)
    return found
