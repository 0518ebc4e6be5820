"""Ctrl-C and SIGTERM during a campaign, as a flag checked between programs (issue
32.5).

The handlers used to raise `KeyboardInterrupt` wherever the main thread happened to
be. Where that was inside a `__del__`, a weakref or garbage-collector callback (a
`Popen`, a temporary file, a ctypes handle being finalised), Python prints
"Exception ignored in ..." and drops it: SIGINT sent to a campaign's main process was
lost in 2 of 6 tries and the campaign ran on to exit 0. Now the handler only records
the signal; the campaign loop asks `raise_if_requested` before each program and each
round (and the shrinker's stop condition asks `stop_requested`), so the stop happens
at a point of gpusem's own choosing and cannot be swallowed. A second signal of the
same kind raises at once, for a check that does not come back.

Forked workers (the cpu harness's) inherit the handler: there SIGINT is ignored (the
campaign's process handles Ctrl-C for the whole group; a worker killed by it would
read as a crash finding) and SIGTERM kills as by default.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# the signals received since the handlers were installed, in order ("SIGINT", ...)
REQUESTED: list[str] = []
# > 0 while the main thread waits in gpusem's own blocking loop (`at_once`)
AT_ONCE: list[int] = [0]


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM while a campaign runs: raised by `raise_if_requested` (or by
    a second signal), caught by `Campaign.run`, which returns what it has. A
    KeyboardInterrupt, so hypothesis and every `except Exception` let it through."""

    def __init__(self, signal_name: str = "SIGINT") -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


def install_signal_handlers() -> None:
    """SIGTERM, and SIGINT unless it is ignored (a `--jobs` shard), set the flag;
    a fresh campaign starts with no signal recorded."""
    owner = os.getpid()
    REQUESTED.clear()

    def on_signal(signum: int, frame: Any) -> None:
        if os.getpid() != owner:  # a forked worker (the cpu harness's)
            if signum == signal.SIGTERM:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)
            return
        name = signal.Signals(signum).name
        again = name in REQUESTED  # the second one: do not wait for the check
        REQUESTED.append(name)
        if again or AT_ONCE[0]:
            raise Interrupted(REQUESTED[0])

    signal.signal(signal.SIGTERM, on_signal)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, on_signal)


def stop_requested() -> str:
    """The first signal received ("" when none)."""
    return REQUESTED[0] if REQUESTED else ""


def raise_if_requested() -> None:
    if REQUESTED:
        raise Interrupted(REQUESTED[0])


@contextmanager
def at_once() -> Iterator[None]:
    """Within: a signal raises at once (a wait on other processes, such as the Dask
    engine's for its next result, where no program boundary comes by)."""
    raise_if_requested()
    AT_ONCE[0] += 1
    try:
        yield
    finally:
        AT_ONCE[0] -= 1
