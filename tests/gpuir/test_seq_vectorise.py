"""Vectorisation is invisible: on random loop nests over small arrays (affine and
quasi-affine indices, private and shared variables, reductions, guards, neighbour
reads), the vectorised sequential reading equals the one-statement-at-a-time reading
bit for bit, or both stop with the same kind of error."""

from __future__ import annotations

import itertools

import numpy as np
from gpusem.calculus.errors import GpusemError
from gpusem.calculus.gpuir import ast as A
from gpusem.interpreter.gpuir.sequential import run_sequential
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SIZE = 12
ARRAYS = ("X", "Y", "Z")


@st.composite
def index(draw, loop_vars: list[str]) -> A.CExpr:
    if not loop_vars or draw(st.integers(0, 4)) == 0:
        return A.CInt(draw(st.integers(0, SIZE - 1)))
    v = A.CVar(draw(st.sampled_from(loop_vars)))
    match draw(st.integers(0, 4)):
        case 0:
            return v
        case 1:
            return A.CBin("+", v, A.CInt(draw(st.integers(-1, 3))))
        case 2:
            return A.CBin("*", A.CInt(draw(st.integers(1, 3))), v)
        case 3:
            w = A.CVar(draw(st.sampled_from(loop_vars)))
            return A.CBin("+", A.CBin("*", v, A.CInt(draw(st.integers(1, 4)))), w)
    return A.CBin("%", v, A.CInt(draw(st.integers(1, 4))))


@st.composite
def value(draw, loop_vars, names, depth=2) -> A.DExpr:
    k = draw(st.integers(0, 3 if depth else 1))
    if k == 0:
        return A.DConst(float(draw(st.sampled_from([0.5, 1.0, -3.25, 1e-3, 7.0]))))
    if k == 1:
        n = draw(st.sampled_from(names))
        dims = 0 if n.startswith("p") else 2
        return A.DRead(n, tuple(A.WPoint(draw(index(loop_vars))) for _ in range(dims)))
    if k == 2:
        return A.DBin(draw(st.sampled_from(A.DATA_OPS)),
                      draw(value(loop_vars, names, depth - 1)),
                      draw(value(loop_vars, names, depth - 1)))
    return A.DNeg(draw(value(loop_vars, names, depth - 1)))


@st.composite
def block(draw, loop_vars, privates, counter, depth) -> tuple[A.Stmt, ...]:
    out: list[A.Stmt] = []
    privates = list(privates)
    for _ in range(draw(st.integers(1, 3))):
        names = list(ARRAYS) + privates
        k = draw(st.integers(0, 5 if depth else 3))
        if k <= 1:
            target = draw(st.sampled_from(names))
            dims = 0 if target.startswith("p") else 2
            idx = tuple(draw(index(loop_vars)) for _ in range(dims))
            cls = A.Assign if k == 0 else A.Reduce
            out.append(cls(target, idx, draw(value(loop_vars, names))))
        elif k == 2:
            name = f"p{next(counter)}"
            out.append(A.Alloc(name, A.DataType.F32, (), A.MemExpr("DRAM")))
            privates.append(name)
        elif k == 3:
            out.append(A.Fence("cuda_in_order", "cuda_in_order"))
        elif k == 4:
            var = f"i{next(counter)}"
            hi = draw(st.integers(1, 5))
            body = draw(block(loop_vars + [var], privates, counter, depth - 1))
            out.append(A.For(var, A.CInt(0), A.CInt(hi), A.LoopMode.SEQ, None, body))
        else:
            cond = A.BRel("<", draw(index(loop_vars)), A.CInt(draw(st.integers(0, 6))))
            out.append(A.If(cond, draw(block(loop_vars, privates, counter, depth - 1))))
    return tuple(out)


@st.composite
def programs(draw) -> A.Proc:
    counter = itertools.count()
    params = tuple(A.DataParam(n, A.DataType.F32, (A.CInt(SIZE), A.CInt(SIZE)),
                               A.MemExpr("DRAM")) for n in ARRAYS)
    return A.Proc("p", params, draw(block([], [], counter, 3)))


def _outcome(proc, inputs, vectorise):
    try:
        return run_sequential(proc, {}, inputs, vectorise=vectorise, max_steps=20000)
    except GpusemError as err:
        return type(err)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**32 - 1))
def test_vectorised_reading_equals_plain_reading(proc: A.Proc, seed: int) -> None:
    rng = np.random.default_rng(seed)
    inputs = {n: rng.standard_normal((SIZE, SIZE)).astype(np.float32) for n in ARRAYS}
    fast = _outcome(proc, inputs, True)
    slow = _outcome(proc, inputs, False)
    if isinstance(slow, dict) and isinstance(fast, dict):
        for n in ARRAYS:
            assert np.array_equal(fast[n], slow[n], equal_nan=True), n
    else:
        assert fast == slow
