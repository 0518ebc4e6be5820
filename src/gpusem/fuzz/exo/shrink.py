"""A GPU IR-level reducer for Exo verdict findings: after hypothesis has shrunk the
generator's choices, delete and simplify statements of the program itself while the
finding's signature stays (Hypothesis's "one definition of simpler": fewer
statements, then smaller loops, then simpler expressions).

Passes (each a generator of candidate bodies, tried in order, first success kept):
  delete_statement   drop one statement at any depth (a `with`/`for`/`if` whole)
  unwrap_block       replace a CudaWarps or if block by its body
  shrink_loop        a seq or cuda_tasks loop runs once (`hi = lo + 1`)
  simplify_rhs       an assignment's right-hand side becomes one of its reads, or 1.0
  plain_assign       a reduce `x += e` becomes a write `x = e`
A candidate that no longer parses or that a checker rejects for another reason is
simply not kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, cast

from gpusem.calculus.errors import GpusemError
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.printer import print_proc
from gpusem.calculus.gpuir.walk import data_reads
from gpusem.compiler.gpuir_exo.driver import ExoDriver

Body = tuple[A.Stmt, ...]


REDUCE_S = 20.0  # the reducer's time cap per finding, unless the campaign gives one


def reduce_source(driver: ExoDriver, source: str, defines: dict[str, int],
                  signature: str, budget_s: float = REDUCE_S) -> str | None:
    """The smallest program found with the same finding signature (None: no
    smaller one)."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.fuzz.exo.checking import check_text

    def keeps(text: str) -> bool:
        try:
            return check_text(driver, text, defines).comparison.signature == signature
        except GpusemError:
            return False

    proc = parse_module(source, "program.gpuir").procs[-1]
    best = reduce_proc(proc, keeps, budget_s)
    return None if best == proc else print_proc(best)


def reduce_proc(proc: A.Proc, keeps: Callable[[str], bool],
                budget_s: float = 90.0) -> A.Proc:
    """Greedy: the first candidate of the first pass that `keeps` the finding is
    taken, then the passes start over, until none applies or the budget is spent."""
    deadline = time.monotonic() + budget_s
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for body in candidates(proc.body):
            if time.monotonic() >= deadline:
                break
            cand = replace(proc, body=body)
            if keeps(print_proc(cand)):
                proc, progress = cand, True
                break
    return proc


def candidates(body: Body) -> Iterator[Body]:
    yield from delete_statement(body)
    yield from unwrap_block(body)
    yield from shrink_loop(body)
    yield from simplify_rhs(body)
    yield from plain_assign(body)


def _inner(s: A.Stmt) -> Body | None:
    return getattr(s, "body", None)


def _with_body(s: A.Stmt, body: Body) -> A.Stmt:
    rebuilt: A.Stmt = cast(Any, replace)(s, body=body)
    return rebuilt


def _each(body: Body, edit: Callable[[A.Stmt], Iterator[Body]]) -> Iterator[Body]:
    """Apply `edit` (which yields replacements for one statement, as sequences) at
    every position, recursing into blocks."""
    for i, s in enumerate(body):
        for repl in edit(s):
            yield body[:i] + repl + body[i + 1:]
        inner = _inner(s)
        if inner:
            for sub in _each(inner, edit):
                if sub:
                    yield body[:i] + (_with_body(s, sub),) + body[i + 1:]


def delete_statement(body: Body) -> Iterator[Body]:
    def edit(s: A.Stmt) -> Iterator[Body]:
        yield ()

    yield from _each(body, edit)


def unwrap_block(body: Body) -> Iterator[Body]:
    def edit(s: A.Stmt) -> Iterator[Body]:
        if isinstance(s, (A.CudaWarps, A.If)):
            yield s.body

    yield from _each(body, edit)


def shrink_loop(body: Body) -> Iterator[Body]:
    def edit(s: A.Stmt) -> Iterator[Body]:
        if isinstance(s, A.For) and s.mode is not A.LoopMode.CUDA_THREADS:
            one = A.CBin("+", s.lo, A.CInt(1)) if not isinstance(s.lo, A.CInt) \
                else A.CInt(s.lo.value + 1)
            if s.hi != one:
                yield (replace(s, hi=one),)

    yield from _each(body, edit)


def simplify_rhs(body: Body) -> Iterator[Body]:
    def edit(s: A.Stmt) -> Iterator[Body]:
        if isinstance(s, (A.Assign, A.Reduce)) and not isinstance(s.rhs, A.DRead):
            for r in data_reads(s.rhs):
                yield (replace(s, rhs=r),)
            if not isinstance(s.rhs, A.DConst):
                yield (replace(s, rhs=A.DConst(1.0)),)

    yield from _each(body, edit)


def plain_assign(body: Body) -> Iterator[Body]:
    def edit(s: A.Stmt) -> Iterator[Body]:
        if isinstance(s, A.Reduce):
            yield (A.Assign(s.name, s.idx, s.rhs, s.span),)

    yield from _each(body, edit)
