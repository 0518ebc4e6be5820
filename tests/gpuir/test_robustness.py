"""The front end and the sequential evaluator never crash: on any well-scoped tree
(most of them ill-typed) they return or raise a GpusemError (BadInput, IllTyped,
Trap, BudgetExhausted), never a Python exception."""

from __future__ import annotations

import numpy as np
from gpusem.calculus.errors import GpusemError
from gpusem.calculus.gpuir import ast as A
from gpusem.interpreter.gpuir.sequential import run_sequential
from gpusem.typing_rules.gpuir.frontend import analyse
from hypothesis import HealthCheck, given, settings

from .strategies import procs

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(procs())
def test_analyses_never_crash(p: A.Proc) -> None:
    defines = {c.name: 3 for c in p.ctrl_params}
    try:
        an = analyse(p, defines)
    except GpusemError:
        return
    assert all(isinstance(e, GpusemError) for e in an.errors)


@SETTINGS
@given(procs())
def test_sequential_reading_never_crashes(p: A.Proc) -> None:
    defines = {c.name: 3 for c in p.ctrl_params}
    try:
        with np.errstate(all="ignore"):
            run_sequential(p, defines, {}, max_steps=2000)
    except GpusemError:
        pass
