"""Each race analysis in a z3 context of its own, so that its verdict does not depend
on the terms the process built before.

z3's Python API builds every term in one process-wide context unless told otherwise.
Terms are hash-consed there, and their ids, hence the order z3's search meets them,
depend on every term the process built before; a pair close to its resource budget
(`race.RLIMIT_PAIR`) is then decided in one process and undecided in another. Measured
(stop 28, the H200 toolchain campaign): one program was proved race-free in a campaign
worker and compared, while a fresh process (and `gpusem replay`) declined it as
undecided, and attribution's second reference path, the same analysis run later in the
same process, called it racy, so the GPU's wrong answer (T1's class, nvvm) was blamed on
gpusem (results/toolchain/FINDINGS.md, "G1"). With a fresh context per analysis the
analysis no longer inherits the process's terms: G1's program gets one verdict and
the same units in every process (tests/fuzz/test_race_history.py). Not every bit of
history is gone: z3 keeps some state outside a context (its symbol table; some of its
hashing is by address), and the same 421 programs analysed in reverse order in one
process spent other units on 13 of them, by up to 3% (helper gencost2, stop 28), with
no verdict changed. A pair that close to its budget can still be decided in one
process and not in another; so "undecided" is never taken as contradicting a proof
(`interpreter/bundl/reference.outcome_difference`).

The API's functions take the default context from `z3.main_ctx()`, so the analysis
swaps that default for the duration of the call (race_accesses builds every term,
sorts included, at analysis time for this reason). One analysis at a time per process:
a lock keeps two threads from swapping under each other (a z3 context is not
thread-safe either).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import z3

_LOCK = threading.RLock()


@contextmanager
def _as_default(ctx: object) -> Iterator[object]:
    """`ctx` as z3's default context while the block runs, the previous one after."""
    with _LOCK:
        module = z3.z3  # where main_ctx() keeps the default (z3's own global)
        saved = module._main_ctx
        module._main_ctx = ctx
        try:
            yield ctx
        finally:
            module._main_ctx = saved


@contextmanager
def fresh_context() -> Iterator[object]:
    """A new z3 context as the default one while the block runs; the previous default
    is restored after (terms made inside must not outlive the block)."""
    with _as_default(z3.Context()) as ctx:
        yield ctx


class NeedsZ3(Exception):
    """A block run `without_context` reached for z3 (it would build a term)."""


class _Refused:
    """The default context while `without_context` runs: every use of it (z3's API
    asks the context for its `ref()` before it makes anything) raises NeedsZ3."""

    def __getattr__(self, name: str) -> object:
        raise NeedsZ3(name)


@contextmanager
def without_context() -> Iterator[None]:
    """No default z3 context while the block runs: whatever in it would build a term
    raises NeedsZ3 instead. A block that finishes made no z3 object at all, so what it
    leaves (closures that make terms when called) can go on in a fresh context as
    though it had run there, and no context is made for a block that needs none
    (`race.analyse`: most programs have no pair to decide)."""
    with _as_default(_Refused()):
        yield


# The analysis' constant terms, made in its own context when asked (one made at import
# would belong to the context of that moment, and z3 refuses to mix contexts).

def f32() -> z3.FPSortRef:
    """The float32 sort."""
    return z3.Float32()


def rne() -> z3.FPRMRef:
    """Round to nearest even: float32 arithmetic as numpy.float32 does it."""
    return z3.RNE()


def fma32() -> z3.FuncDeclRef:
    """Some function of three floats (the analysis does not model fma: see A.Fma)."""
    return z3.Function("fma32", f32(), f32(), f32(), f32())
