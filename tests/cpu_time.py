"""CPU seconds, for the tests that bound how long something takes (issue 32.11).

A wall-clock bound fails when the machine is loaded (8 engineers on 2 cores), not when
the code got slower; CPU time is what the code itself spends, whatever else runs. The
bounds keep their numbers, measured in CPU seconds instead of wall seconds.
"""

from __future__ import annotations

import resource
import time


def cpu_seconds() -> float:
    """This process's CPU time plus that of its children that have been waited for
    (g++, nvcc, worker processes after they are joined)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime
