"""The circuit breaker of a campaign's shard: it stops fuzzing when one internal
error is systematic, so a broken environment or a gpusem bug on a common path does
not spend the rest of the budget re-finding it (issue 23: a GPU campaign whose
machine lacked z3 ran its 500 s into 13,235 `internal:ModuleNotFoundError` findings
of one signature out of 30,560 programs).

Rule (docs/reports.md): after at least MIN_PROGRAMS programs checked by this run, one
internal signature met at least max(MIN_HITS, SHARE x programs) times trips it. Each
shard keeps its own count (a shard is where programs are checked; a systematic
error trips every shard at about the same program count); the campaign keeps what it
found, reports why it stopped in one line, and exits 3.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MIN_PROGRAMS = 200  # no verdict on fewer: a few early crashes are not a pattern
MIN_HITS = 50
SHARE = 0.2


@dataclass
class CircuitBreaker:
    hits: dict[str, int] = field(default_factory=dict)  # internal signature -> times

    def hit(self, signature: str) -> None:
        self.hits[signature] = self.hits.get(signature, 0) + 1

    def tripped(self, programs: int) -> str:
        """Why the shard stops, after `programs` programs checked by this run ("" to
        go on): `internal error SIG in 41% of 1,200 programs`."""
        if programs < MIN_PROGRAMS or not self.hits:
            return ""
        signature, n = max(self.hits.items(), key=lambda kv: (kv[1], kv[0]))
        if n < max(MIN_HITS, SHARE * programs):
            return ""
        return (f"internal error {signature} in {100 * n / programs:.0f}% of "
                f"{programs:,} programs")


__all__ = ["MIN_HITS", "MIN_PROGRAMS", "SHARE", "CircuitBreaker"]
