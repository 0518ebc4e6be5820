"""The CKernel reducer: AST passes after hypothesis's shrinking, batched.

Every candidate costs a backend build, so candidates go to the backend a batch at a
time (one g++ library, one NVRTC batch: `target.prefetch`), and the smallest one that
still fails with the same signature becomes the next program. Passes (hypothesis's
naming: verbs), each giving candidates that stay well-formed (checked, never assumed):

  delete_chunk       drop a run of top-level statements (half, a quarter, ...)
  delete_statement   drop one statement, at any depth
  inline_branch      replace an `if` by one of its arms' statements
  unroll_once        a loop of one trip
  zero_expression    a statement's expression replaced by the literal 0 (or 0.0)
  inline_zero        a top-level `let` deleted, its uses replaced by 0
  shrink_launch      one block of 32 threads
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import fields, is_dataclass, replace

from gpusem.calculus.ckernel import ast as A
from gpusem.calculus.errors import IllTyped
from gpusem.fuzz.targets import CheckResult
from gpusem.typing_rules.ckernel.wellformed import check_kernel

BATCH = 48


def _chunks(block: A.Block) -> Iterator[A.Block]:
    """delete_chunk: runs of half, a quarter, ... of the statements dropped at once
    (delta debugging's first moves: big cuts while they still fail)."""
    stmts = block.stmts
    size = len(stmts) // 2
    while size >= 2:
        for i in range(0, len(stmts), size):
            yield replace(block, stmts=stmts[:i] + stmts[i + size:])
        size //= 2


def _edits(block: A.Block) -> Iterator[A.Block]:
    """Every block one edit smaller than `block` (at any depth)."""
    stmts = block.stmts
    for i, s in enumerate(stmts):
        yield replace(block, stmts=stmts[:i] + stmts[i + 1:])  # delete_statement
    for i, s in enumerate(stmts):
        def put(new: tuple[A.Stmt, ...], i: int = i) -> A.Block:
            return replace(block, stmts=stmts[:i] + new + stmts[i + 1:])
        match s:
            case A.If(cond, then, orelse):  # inline_branch
                yield put(then.stmts)
                yield put(orelse.stmts)
                for t in _edits(then):
                    yield put((replace(s, then=t),))
                for e in _edits(orelse):
                    yield put((replace(s, orelse=e),))
                if not isinstance(cond, A.Lit):
                    yield put((replace(s, cond=A.Lit("i32", 0)),))
            case A.For(trips=n, body=body):  # unroll_once
                if n > 1:
                    yield put((replace(s, trips=1),))
                for b in _edits(body):
                    yield put((replace(s, body=b),))
            case A.Let(expr=e) | A.Store(expr=e) | A.Atomic(expr=e) | A.Assign(
                    expr=e) if not isinstance(e, A.Lit):  # zero_expression
                yield put((replace(s, expr=A.Lit(e.ty, 0.0 if e.ty == "f32" else 0)),))


def _substitute(node: object, name: str, value: A.Expr) -> object:
    """`node` with every use of local `name` replaced by `value` (any AST node)."""
    if isinstance(node, A.Var):
        return value if node.name == name else node
    if isinstance(node, tuple):
        return tuple(_substitute(x, name, value) for x in node)
    if not is_dataclass(node) or isinstance(node, type):
        return node
    changes = {f.name: _substitute(getattr(node, f.name), name, value)
               for f in fields(node) if f.name != "span"}
    return replace(node, **changes)  # type: ignore[type-var]


def _inline_zero(block: A.Block) -> Iterator[A.Block]:
    """inline_zero: a top-level `let` deleted, its uses made the literal 0."""
    for i, s in enumerate(block.stmts):
        if isinstance(s, A.Let):
            zero = A.Lit(s.ty, 0.0 if s.ty == "f32" else 0)
            rest = _substitute(block.stmts[i + 1:], s.name, zero)
            yield replace(block, stmts=block.stmts[:i] + rest)  # type: ignore[operator]


def candidates(k: A.Kernel) -> Iterator[A.Kernel]:
    """Well-formed kernels one edit smaller than `k`, smallest edits last."""
    if (k.grid, k.block) != (1, 32):
        small = replace(k, grid=1, block=32)  # shrink_launch
        if _ok(small):
            yield small
    for body in (*_chunks(k.body), *_edits(k.body), *_inline_zero(k.body)):
        cand = replace(k, body=body)
        if _ok(cand):
            yield cand


def _ok(k: A.Kernel) -> bool:
    try:
        check_kernel(k)
    except IllTyped:
        return False
    return True


def reduce(k: A.Kernel, res: CheckResult,
           batch_check: Callable[[list[A.Kernel]], list[CheckResult]],
           budget_s: float = 60.0) -> tuple[A.Kernel, CheckResult]:
    """The smallest failing kernel found in `budget_s`: greedy, one batch a step."""
    start = time.monotonic()
    while time.monotonic() - start < budget_s:
        pool = list(dict.fromkeys(candidates(k)))
        pool.sort(key=lambda c: (A.statement_count(c.body), len(repr(c))))
        better = None
        for i in range(0, len(pool), BATCH):
            chunk = pool[i:i + BATCH]
            for cand, got in zip(chunk, batch_check(chunk), strict=True):
                if got.status == "finding" and got.signature == res.signature:
                    better = (cand, got)
                    break
            if better or time.monotonic() - start >= budget_s:
                break
        if better is None:
            break
        k, res = better
    return k, res
