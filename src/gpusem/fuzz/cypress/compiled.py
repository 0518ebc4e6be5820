"""The `compiled` property of the cypress target (issue 30): a mapping's
warp-specialised IR lowered to GPU IR (compiler/cypress_cuda/to_gpuir.py) is
accepted by AMIR's sync check (Exo-GPU Sec. 4), its GPU IR sequential reading is
the Cypress sequential reading, and the kernel `gpuir_cuda` compiles from it, run
on the campaign's backend (the cpu harness, or a GPU), ends with every output
bit-identical to it. The inputs are the Cypress target's small integers, so every
sum is exact in any order: a difference is a wrong value, never rounding.

An IR the lowering does not cover is `not lowered: <reason>` (counted as invalid,
never a finding: the lowering's coverage is not its correctness).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gpusem.calculus.cypress import ast as A
from gpusem.calculus.cypress import events as E
from gpusem.calculus.errors import BadInput, BudgetExhausted, IllTyped
from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.cypress_cuda.gemm_plan import NotLowered
from gpusem.compiler.cypress_cuda.to_gpuir import lower_gemm
from gpusem.compiler.gpuir_cuda.run import Case, check_batch, prepare
from gpusem.interpreter.amir.synccheck import synccheck_proc
from gpusem.interpreter.gpuir.sequential import run_sequential

GPUIR_FILE = "lowered.gpuir"


@dataclass(frozen=True)
class Outcome:
    """`pass`, `not-lowered` (detail: the reason), or a finding's stage:
    `sync` (the sync check rejects), `seq` (the GPU IR reading differs from the
    Cypress reading), `compiled` (the backend differs from the reading)."""

    kind: str
    detail: str = ""
    gpuir: str = ""


def lower_and_check(ir: E.EventProgram, program: A.Program,
                    arrays: dict[str, np.ndarray], want: dict[str, np.ndarray]
                    ) -> Outcome | Case:
    """Everything before the backend: the lowering, the sync check, the GPU IR
    reading against the Cypress one, the compilation; a Case ready to run, or the
    outcome that ends the check before it."""
    try:
        text = lower_gemm(ir, program, arrays)
    except NotLowered as err:
        return Outcome("not-lowered", str(err))
    proc = parse_module(text, GPUIR_FILE).procs[-1]
    m, n = arrays["C"].shape
    defines = {"M": m, "N": n, "K": arrays["A"].shape[1]}
    try:
        verdict = synccheck_proc(proc, defines).verdict
    except (IllTyped, BadInput, BudgetExhausted) as err:
        return Outcome("sync", f"the GPU IR front end rejects it: {err}", text)
    if not verdict.accepted:
        return Outcome("sync", str(getattr(verdict.violation, "message",
                                           verdict.violation)), text)
    inputs = {p.name: arrays[p.name].copy() for p in proc.data_params}
    reading = run_sequential(proc, defines, inputs)
    for name, value in want.items():
        if name in reading and not np.array_equal(reading[name], value):
            return Outcome("seq", f"{name}: the GPU IR reading differs from the "
                           "Cypress reading", text)
    case = Case(proc, defines, inputs, source=text, file=GPUIR_FILE)
    prepare(case)
    if case.verdict is not None:
        return Outcome("compiled", case.verdict.describe(), text)
    return case


def run_cases(cases: list[Case], backend: str) -> list[Outcome]:
    """The prepared cases on the backend, in one call (one g++ build or NVRTC
    module for a whole round): the GPU IR reading is the Cypress one already, so
    agreement with it is agreement with seq."""
    runs = check_batch(cases, backend, seeds=(0,)) if cases else []
    return [Outcome("pass") if run.agree else
            Outcome("compiled", run.describe(), case.source)
            for case, run in zip(cases, runs, strict=True)]
