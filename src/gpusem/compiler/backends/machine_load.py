"""How loaded this machine is, for the watchdogs that decide a `hang` (issue 24).

A case that times out is run once more with a longer limit before it is called a hang
(issues 15, 17). A fixed factor is not enough on a shared machine: the 2-hour APPy
campaign of stop 26 met a case that timed out at 20 s and again at 80 s under a load
average of ~20 on 2 cores, and that passes in 6.4 s on the quiet machine (its replay).
A watchdog counts wall seconds, and a process that gets 1/10 of a core for them has
done 1/10 of the work; so the retry's limit is stretched by the load per core measured
when it starts (the one-minute load average over the cores this process may run on),
capped so that a real hang still ends.
"""

from __future__ import annotations

import os

LOAD_CAP = 8.0  # a retry waits at most 8x its base limit for load (APPy: 20 s x 4 x 8)


def cores() -> int:
    """The cores this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def load_factor(cap: float = LOAD_CAP) -> float:
    """max(1, one-minute load average per core), at most `cap`; 1 where the load
    average cannot be read."""
    try:
        one_minute = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 1.0
    return min(cap, max(1.0, one_minute / cores()))


def idle_cores() -> int:
    """The cores of this process's affinity that the one-minute load average leaves
    idle (0 where it cannot be read: nothing is known to be idle)."""
    try:
        one_minute = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0
    return max(0, int(cores() - one_minute))
