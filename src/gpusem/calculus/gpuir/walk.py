"""Generic traversals of GPU IR syntax (Figures 1 and 2 of Exo-GPU, seed 000).

The walkers over `calculus.gpuir.ast`: the nested blocks of a statement (`sub_bodies`),
every statement of a body in pre-order (`walk`), and the reads of a data expression,
left to right (`data_reads`: T_e of Figure 17, as a list).
"""

from __future__ import annotations

from typing import Iterator

from gpusem.calculus.gpuir.ast import (
    CudaDeviceFunction,
    CudaWarps,
    DBin,
    DConst,
    DExpr,
    DNeg,
    DRead,
    For,
    If,
    Stmt,
)


def sub_bodies(stmt: Stmt) -> tuple[tuple[Stmt, ...], ...]:
    """The nested statement blocks of `stmt` (empty for simple statements)."""
    match stmt:
        case For(body=b) | CudaDeviceFunction(body=b) | CudaWarps(body=b) | If(body=b):
            return (b,)
        case _:
            return ()


def walk(body: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement of `body`, pre-order, including nested ones."""
    for stmt in body:
        yield stmt
        for inner in sub_bodies(stmt):
            yield from walk(inner)


def data_reads(e: DExpr) -> Iterator[DRead]:
    """The reads in a data expression, left to right (T_e of Figure 17, as a list)."""
    match e:
        case DConst():
            return
        case DRead():
            yield e
        case DBin(lhs=a, rhs=b):
            yield from data_reads(a)
            yield from data_reads(b)
        case DNeg(arg=a):
            yield from data_reads(a)
