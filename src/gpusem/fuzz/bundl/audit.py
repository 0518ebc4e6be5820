"""How the compile oracle uses the fast reference (issue 19): the fuzzer's policy over
`interpreter/bundl/reference.py`, which computes both outcomes.

Only "agree" is taken from the fast outcome as it is: any other verdict is decided
again against the full reference from the same backend results
(`compile_property.check_batch(confirm=...)`; the full reference then takes the fast
one's proof of race freedom, the same z3 call on the same program, and runs the four
schedules: `BundlTarget._full_if_fast`). And every AUDIT_EVERY-th program (the
first included) is run both ways; a difference (kind, race verdict, or a cell's bits:
`reference.outcome_difference`) is an oracle bug (the interpreters or the race
analysis disagree) and becomes an `internal` finding; from then on this process audits
every program, so shrinking the finding reproduces it.

GPUSEM_REFERENCE=full switches the fast path off (the reference pipeline);
GPUSEM_REFERENCE_AUDIT=N sets the audit period (0: no audit). See errata ("the compile
oracle's fast reference").
"""

from __future__ import annotations

import os

AUDIT_EVERY = 64


def fast_enabled() -> bool:
    return os.environ.get("GPUSEM_REFERENCE", "fast") != "full"


def audit_every() -> int:
    return int(os.environ.get("GPUSEM_REFERENCE_AUDIT", AUDIT_EVERY))


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
