"""Mutators that make a legal APPy program illegal, to test the legality checker.

Each mutator breaks exactly one rule of `typing_rules/appy/legality.py`, in a way that the rule
must catch whenever the mutated loop runs at least two iterations (the property only
counts mutants whose loops do; a one-iteration loop has no second worker to race with):

  collapse-store   `C[i] = e` in a parallel loop -> `C[0] = e`     (Legal-Disjoint)
  drop-atomic      `#pragma atomic` removed from `S[0] += e`      (Legal-Disjoint)
  drop-reduction   `reduction(+:acc)` removed from its loop        (Legal-Private)
"""

from __future__ import annotations

import dataclasses
from typing import cast

from gpusem.calculus.appy import ast as A
from gpusem.fuzz.appy.strategies import AppyProgram


def _trips(prog: AppyProgram, loop: A.For) -> bool:
    """Whether `loop` surely runs >= 2 iterations on the program's sizes."""
    sizes = dict(prog.scalars)

    def val(e):
        match e:
            case A.Const(value=v):
                return v
            case A.Name(id=n):
                return sizes.get(n, 0)
            case A.BinOp(op="+", left=a, right=b):
                return val(a) + val(b)
            case A.BinOp(op="-", left=a, right=b):
                return val(a) - val(b)
        return 0

    lo, hi, step = val(loop.start), val(loop.stop), val(loop.step) or 1
    return len(range(int(lo), int(hi), int(step))) >= 2


def collapse_store(s: A.Stmt):
    match s:
        case A.For(directive=A.ParallelFor(), body=body) if body and isinstance(
                body[-1], A.Assign) and isinstance(body[-1].target, A.Subscript) and len(
                body[-1].target.indices) == 1 and not body[-1].atomic:
            st = body[-1]
            tgt = dataclasses.replace(cast(A.Subscript, st.target),  # (the guard)
                                      indices=(A.Const(0),))
            return dataclasses.replace(s, body=body[:-1] + (
                dataclasses.replace(st, target=tgt, op=None),))
    return None


def drop_atomic(s: A.Stmt):
    # Only an update of one fixed cell (`S[0] += e`) surely races without its atomic;
    # an indirect one (`H[idx[i]] += e`) races only where two indices coincide.
    match s:
        case A.For(directive=A.ParallelFor(), body=(A.Assign(
                atomic=True, target=A.Subscript(indices=ix)) as st,)) if all(
                isinstance(i, A.Const) for i in ix):
            return dataclasses.replace(s, body=(dataclasses.replace(st, atomic=False),))
    return None


def drop_reduction(s: A.Stmt):
    match s:
        case A.For(directive=A.ParallelFor(reduction=red) as d) if red:
            return dataclasses.replace(s, directive=dataclasses.replace(d, reduction=()))
    return None


MUTATORS = {"collapse-store": collapse_store, "drop-atomic": drop_atomic,
            "drop-reduction": drop_reduction}


def mutants(prog: AppyProgram) -> list[AppyProgram]:
    out = []
    for name, f in MUTATORS.items():
        for k, s in enumerate(prog.fn.body):
            if isinstance(s, A.For) and _trips(prog, s) and f(s) is not None:
                body = prog.fn.body[:k] + (f(s),) + prog.fn.body[k + 1:]
                fn = dataclasses.replace(prog.fn, body=body)
                out.append(dataclasses.replace(prog, fn=fn, mutated=name))
    return out
