"""Progress of a campaign as plain lines, for logs (issue 32.9).

The progress bar draws only on a terminal; in a CI log a campaign said nothing until
it ended, an hour later. `ProgressLines.tick(prop, summary)` (the same arguments as
the bar's) writes one line at most every `every_s` seconds (default 30;
`$GPUSEM_PROGRESS_EVERY_S`) and one for each property when it ends:

    progress bundl:compile: 1,234 programs, 2 findings, 412/min, 3m00s elapsed

The rate is over wall time since the property's first tick, and is not given under
one second of it (`summary.MIN_RATE_S`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

from gpusem.fuzz.summary import Summary, rate_per_min, rate_text

DEFAULT_EVERY_S = 30.0


def every_s_from_env() -> float:
    raw = os.environ.get("GPUSEM_PROGRESS_EVERY_S", "")
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_EVERY_S
    except ValueError:
        return DEFAULT_EVERY_S


class ProgressLines:
    """One line per property at most every `every_s` seconds (see the module doc)."""

    def __init__(self, target: str, stream: TextIO | None = None,
                 every_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.target = target
        self.stream = stream
        self.every_s = every_s_from_env() if every_s is None else every_s
        self.clock = clock
        self.started: dict[str, float] = {}  # prop -> its first tick
        self.last: dict[str, float] = {}  # prop -> when its last line was written
        self.latest: dict[str, Summary] = {}

    def tick(self, prop: str, s: Summary) -> None:
        now = self.clock()
        start = self.started.setdefault(prop, now)
        self.latest[prop] = s
        if now - self.last.get(prop, start) >= self.every_s:
            self._write(prop, s, now - start)
            self.last[prop] = now

    def close(self) -> None:
        """The last line of each property (its final counts)."""
        now = self.clock()
        for prop, s in self.latest.items():
            if self.last.get(prop) != now:
                self._write(prop, s, now - self.started[prop])

    def line(self, prop: str, s: Summary, elapsed: float) -> str:
        m, sec = divmod(int(elapsed), 60)
        rate = rate_per_min(s.programs - s.resumed, elapsed)
        return (f"progress {self.target}:{prop}: {s.programs:,} programs, "
                f"{s.finding_count} findings, {rate_text(rate)}, "
                f"{m}m{sec:02d}s elapsed")

    def _write(self, prop: str, s: Summary, elapsed: float) -> None:
        out = self.stream or sys.stderr
        out.write(self.line(prop, s, elapsed) + "\n")
        out.flush()
