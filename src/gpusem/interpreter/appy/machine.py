"""APPy's abstract machine: a multi-vector processor (seed 003, Sections 2-3).

The parallel reading of a program, executed: a `parallel for` hands each iteration to a
worker, and the workers run in an arbitrary order (a seeded permutation, so any order can
be replayed); a `simd` loop runs in chunks of at most MVL lanes, each chunk in lockstep
(every lane executes statement k before any lane executes statement k+1). For a program
the legality checker accepts, the result must equal the sequential reading's (the
property `test_machine_agrees_with_sequential_reading`).

Rules, one function each:
  M-Host        statements outside parallel loops run in order on the host
  M-Workers     `parallel for [simd]`: one worker per iteration, order = permutation;
                scalars assigned by a worker are private (dropped after the loop)
  M-Reduction   `reduction(+:x)`: each worker accumulates into a private x from 0, the
                partial sums are added to x after the loop (in worker order)
  M-Sequential  `sequential for`: one worker runs every iteration in order
  M-Chunks      `simd`: chunks of <= width lanes, lockstep per top-level statement;
                a scalar carried across lanes (a reduction, Legal-SimdScalar) is
                lane-private from the identity and combined after each chunk
Note: a compound statement (`if`, an inner loop) inside a simd body runs whole per lane
(lockstep at the granularity of the body's top-level statements): the paper's machine
has vector instructions, not a rule for vector control flow; see proofs_notes/errata.md.
Note: `parallel for simd` runs as one worker per iteration: legality (Legal-Disjoint over
all iterations) makes the chunking unobservable.

Conventions: `st` (SeqState: mem, env, budget), `rng` (the worker-order generator).
"""

from __future__ import annotations

import dataclasses
from typing import assert_never

import numpy as np
from gpusem.calculus.appy import ast as A
from gpusem.calculus.errors import BadInput
from gpusem.interpreter.appy import sequential as S
from gpusem.typing_rules.appy.legality import lane_reduction, simd_shared

DEFAULT_MVL = 1024


class Machine:
    def __init__(self, seed: int = 0, mvl: int = DEFAULT_MVL):
        self.rng = np.random.default_rng(seed)
        self.mvl = mvl

    def run(self, fn: A.Function, arrays: dict[str, np.ndarray],
            scalars: dict[str, int | float],
            max_steps: int = S.DEFAULT_MAX_STEPS) -> dict[str, np.ndarray]:
        mem = {k: np.array(v, copy=True) for k, v in arrays.items()}
        env: dict[str, object] = {}
        for p in fn.params:
            if not p.is_array:
                if p.name not in scalars:
                    raise BadInput(f"missing input: scalar '{p.name}'")
                env[p.name] = scalars[p.name]
        st = S.SeqState(mem, env, budget=max_steps)
        with np.errstate(all="ignore"):
            try:
                self.block(fn.body, st)
            except S.Returned:
                pass  # M-Host: `return` ends the host code (Legal-Return: top level)
        return mem

    # ------------------------------------------------------------------ M-Host
    def block(self, body: tuple[A.Stmt, ...], st: S.SeqState) -> None:
        for s in body:
            self.stmt(s, st)

    def stmt(self, s: A.Stmt, st: S.SeqState) -> None:
        match s:
            case A.For(directive=A.ParallelFor()):
                self.workers(s, st)
            case A.For(directive=A.Simd()):
                self.chunks(s, st)
            case A.For(directive=A.SequentialFor() | None):
                self.sequential(s, st)
            case A.For():  # unreachable: the three directives above
                raise AssertionError(f"unknown loop directive: {s.directive}")
            case A.If(cond=c, body=body, orelse=orelse):
                self.block(body if bool(S.eval_expr(c, st)) else orelse, st)
            case A.Assign() | A.Return():
                S.exec_stmt(s, st)  # M-Host: an ordinary (vector) statement
            case _:
                assert_never(s)

    # --------------------------------------------------------- M-Sequential
    def sequential(self, s: A.For, st: S.SeqState) -> None:
        for v in S.loop_range(s, st):
            st.env[s.var] = v
            self.block(s.body, st)

    # ------------------------------------------------- M-Workers, M-Reduction
    def workers(self, s: A.For, st: S.SeqState) -> None:
        iters = list(S.loop_range(s, st))
        outer = st.env
        red = s.directive.reduction if isinstance(s.directive, A.ParallelFor) else ()
        partials = []
        for k in self.rng.permutation(len(iters)):
            st.env = dict(outer)  # private scalars: a fresh register file per worker
            st.env[s.var] = iters[k]
            for x in red:
                st.env[x] = 0
            self.block(s.body, st)
            partials.append([st.env[x] for x in red])
        st.env = outer
        for j, x in enumerate(red):
            for p in partials:
                outer[x] = outer[x] + p[j]

    # ------------------------------------------------------------- M-Chunks
    def chunks(self, s: A.For, st: S.SeqState) -> None:
        assert isinstance(s.directive, A.Simd)
        width = s.directive.width or self.mvl
        iters = list(S.loop_range(s, st))
        carried = _carried(s, st.env)
        outer = st.env
        for c0 in range(0, len(iters), width):
            lanes = []
            for v in iters[c0:c0 + width]:
                env = dict(outer)
                env[s.var] = v
                for x, op in carried.items():
                    env[x] = _identity(op, outer[x])
                lanes.append(env)
            for stmt in s.body:  # lockstep: statement by statement across the lanes
                self.lockstep(s, stmt, lanes, st)
            st.env = outer
            for x, op in carried.items():
                for env in lanes:
                    outer[x] = _combine(op, outer[x], env[x])


    def lockstep(self, loop: A.For, stmt: A.Stmt, lanes: list[dict[str, S.Value]],
                 st: S.SeqState) -> None:
        """One statement on every lane of a chunk: a vector store evaluates all lanes'
        values before any lane stores (a vector instruction reads, then writes)."""
        vector_store = (isinstance(stmt, A.Assign) and isinstance(stmt.target, A.Subscript)
                        and not stmt.atomic and not lane_reduction(loop, stmt))
        if not vector_store:  # scalars, reductions, compound statements: lane by lane
            for env in lanes:
                st.env = env
                self.stmt(stmt, st)
            return
        assert isinstance(stmt, A.Assign) and isinstance(stmt.target, A.Subscript)
        values = []
        for env in lanes:
            st.env = env
            v = S.eval_expr(stmt.value, st)
            if stmt.op is not None:
                v = S.binop(stmt.op, S.eval_expr(stmt.target, st), v, stmt)
            values.append(v)
        plain = dataclasses.replace(stmt, op=None)
        for env, v in zip(lanes, values, strict=True):
            st.env = env
            S.store(stmt.target, v, plain, st)


def _carried(s: A.For, env: dict[str, S.Value]) -> dict[str, str]:
    """Scalars the lanes carry (read before assigned in the body: Legal-SimdScalar)
    and reduce -> their operator; the others are lane-private."""
    out: dict[str, str] = {}
    shared = simd_shared(s)
    for st in A.walk_stmts(s.body):
        if isinstance(st, A.Assign) and isinstance(st.target, A.Name) and (
                st.target.id in shared):
            x = st.target.id
            match st:
                case A.Assign(op="+") | A.Assign(value=A.BinOp(op="+")):
                    out[x] = "+"
                case A.Assign(value=A.Call(func=("maximum" | "minimum") as f)):
                    out[x] = f
                case _:
                    raise BadInput(f"loop-carried scalar: {st.span}: '{x}' is not a "
                                   "reduction (Legal-SimdScalar)")
    return out


def _identity(op: str, like: S.Value) -> int | float:
    is_float = np.issubdtype(np.asarray(like).dtype, np.floating)
    if op == "+":
        return 0
    big = float("inf") if is_float else int(np.iinfo(np.int32).max)
    return -big if op == "maximum" else big


def _combine(op: str, a: S.Value, b: S.Value) -> S.Value:
    if op == "+":
        return a + b
    return np.maximum(a, b) if op == "maximum" else np.minimum(a, b)


def run_machine(fn: A.Function, arrays: dict[str, np.ndarray],
                scalars: dict[str, int | float], *, seed: int = 0,
                mvl: int = DEFAULT_MVL) -> dict[str, np.ndarray]:
    """The parallel reading under the worker order drawn from `seed`."""
    return Machine(seed, mvl).run(fn, arrays, scalars)
