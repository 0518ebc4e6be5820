"""ctrl.compile_c, the closure the sequential reading evaluates control expressions
with, against ctrl.eval_c (Figure 6's C-Int, C-Read, C-Aff, the definition): on
generated expressions over ints and NumPy lanes, the same value, or the same error
(kind, message, span) for a missing definition or a division by zero."""

from __future__ import annotations

import random

import numpy as np
from gpusem.calculus.errors import GpusemError
from gpusem.calculus.gpuir.ast import CBin, CExpr, CInt, CVar
from gpusem.calculus.gpuir.ctrl import compile_c, eval_c
from gpusem.calculus.span import Span

NAMES = ("i", "j", "N", "missing")


def expr(rng: random.Random, depth: int) -> CExpr:
    line, col = rng.randint(1, 9), rng.randint(1, 9)
    span = Span("e.gpuir", line, col, line, col + 3)
    if depth == 0 or rng.random() < .25:
        if rng.random() < .5:
            # near the int32 edges too, where every operation must wrap
            return CInt(rng.choice([0, 1, 2, 3, 7, -5, 2**31 - 1, 2**31, -(2**31),
                                    2**33 + 5]), span)
        return CVar(rng.choice(NAMES), span)
    return CBin(rng.choice("+-*/%"), expr(rng, depth - 1), expr(rng, depth - 1), span)


def run(f) -> tuple:
    try:
        v = f()
    except GpusemError as err:
        return ("error", type(err).__name__, err.one_line(), err.rule)
    return ("value", np.asarray(v).dtype.kind, np.asarray(v).tolist())


def test_compiled_expressions_are_eval_c() -> None:
    rng = random.Random(5)
    lanes = {"i": np.arange(-3, 5, dtype=np.int64).reshape(8, 1),
             "j": np.arange(0, 4, dtype=np.int64).reshape(1, 4) * 7}
    kinds: set[str] = set()
    for n in range(3000):
        e = expr(rng, rng.randint(0, 4))
        for env in ({"i": 5, "j": -3, "N": 256}, {"i": 0, "j": 2**31 - 1, "N": 0},
                    {**lanes, "N": 64}):
            want = run(lambda e=e, env=env: eval_c(e, env))
            assert run(lambda e=e, env=env: compile_c(e)(env)) == want, (n, e, env)
            kinds.add(want[0] if want[0] == "value" else want[1])
    # every outcome met: values, a missing definition, a division by zero
    assert kinds == {"value", "BadInput", "Trap"}, kinds
