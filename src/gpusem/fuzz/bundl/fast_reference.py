"""The compile oracle's fast reference path (issue 19): the big-step evaluator in place
of four small-step runs, for the programs that are race-free.

`compile_property.reference` runs the small-step machine (the living definition,
Appendix A.3) under four schedules (rr, greedy, greedy-reverse, random:1) and, where
the generator does not vouch for race freedom, has the z3 analysis prove it first: ~20
ms of a generated program's ~35 ms on the cpu backend (scripts/profile_stages.py). For
a race-free program every schedule ends in one memory (no two threads make conflicting
unordered accesses, so the order of the steps does not change what is read or written
last), and the lockstep big-step evaluator ends in that memory too: it agrees with
small-step round-robin on race-free programs (tests/bundl/test_big_small.py, over the
general generator and the compile property's kernel-shaped one). So for those programs
the big-step memory (~0.5 ms) is the reference memory. Everything else takes the full
path, with the full path's verdict and message:

  - big-step does not terminate (stuck, trap, deadlock, budget);
  - big-step used more than 1/STEP_MARGIN of the small-step budget (small-step takes
    at most ~5 steps per big-step lane-statement on generated programs; a program near
    the small-step budget must end as the small-step run ends);
  - not proven race-free: the `racy` verdict, with `reference`'s message.

Only "agree" is taken from the fast outcome as it is: any other verdict is decided
again against the full reference from the same backend results
(`compile_property.check_batch(confirm=...)`). And every AUDIT_EVERY-th program (the
first included) is run both ways; a difference (kind, race verdict, or a cell's bits)
is an oracle bug (the interpreters or the race analysis disagree) and becomes an
`internal` finding; from then on this process audits every program, so shrinking the
finding reproduces it.

GPUSEM_REFERENCE=full switches the fast path off (the reference pipeline);
GPUSEM_REFERENCE_AUDIT=N sets the audit period (0: no audit). See errata ("the compile
oracle's fast reference").
"""

from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING

from gpusem.fuzz.bundl.compile_property import (
    Reference,
    reference,
    unproven_race_freedom,
)

if TYPE_CHECKING:
    from gpusem.calculus.bundl import ast as B

MAX_STEPS = 2_000_000  # compile_property.reference's small-step budget
STEP_MARGIN = 20  # big-step lane-statements x this must stay under MAX_STEPS
AUDIT_EVERY = 64


def fast_enabled() -> bool:
    return os.environ.get("GPUSEM_REFERENCE", "fast") != "full"


def audit_every() -> int:
    return int(os.environ.get("GPUSEM_REFERENCE_AUDIT", AUDIT_EVERY))


def fast_reference(prog: B.Program, prove_race_free: bool) -> Reference:
    """The reference outcome by the fast path where it applies, else the full one."""
    from gpusem.interpreter.bundl.big_step import run_big_step

    big = run_big_step(prog, max_steps=MAX_STEPS // STEP_MARGIN)
    if big.kind != "terminated":
        return reference(prog, MAX_STEPS, prove_race_free)
    if prove_race_free and (why := unproven_race_freedom(prog)) is not None:
        return Reference(big, True, why, fast=True)
    return Reference(big, fast=True)


def outcome_difference(fast: Reference, full: Reference) -> str | None:
    """What differs between a fast and a full outcome as far as a verdict can tell: the
    kind, the race verdict, or a cell's bits (floats compared as binary32 bit
    patterns, as the comparison with the backend does). None when they agree."""
    if fast.kind != full.kind:
        return f"kind: big-step {fast.kind}, small-step {full.kind}"
    racy = fast.racy, full.racy
    if racy[0] != racy[1]:
        return (f"race verdict: fast {'racy' if racy[0] else 'race-free'}, full "
                f"{'racy' if racy[1] else 'race-free'} ({full.message[:120]})")
    if fast.kind != "terminated" or racy[0]:
        return None  # not compared either way
    for name, cells in full.globals.items():
        mine = fast.globals.get(name)
        if mine is None or len(mine) != len(cells):
            return f"memory: {name} missing or of another size"
        for i, (a, b) in enumerate(zip(mine, cells, strict=True)):
            if _bits(a) != _bits(b):
                return f"memory: {name}[{i}] is {a!r} by big-step, {b!r} by small-step"
    return None


def _bits(x: object) -> object:
    """A float as its binary32 bit pattern (a NaN's payload survives the round trip
    through a Python float), anything else as it is."""
    return struct.pack("<f", x) if isinstance(x, float) else x


class Auditor:
    """Chooses the programs run both ways (every `every`-th, the first included; every
    program once a difference was seen) and remembers the differences."""

    def __init__(self, every: int | None = None) -> None:
        self.every = audit_every() if every is None else every
        self.count = 0
        self.sticky = False

    def due(self) -> bool:
        n, self.count = self.count, self.count + 1
        return self.sticky or (self.every > 0 and n % self.every == 0)

    def seen(self) -> None:
        self.sticky = True
