"""Worker processes die with the process that started them (issue 32.5).

A campaign killed with SIGKILL runs no `finally` and no atexit: its kernel workers
(the cpu harness's forked ones, the cuda backend's) and its `--jobs` shards were left
running, orphaned, each still holding its memory and, for the cuda worker, a GPU
context. A worker calls `die_with_parent` first thing; two mechanisms, because
neither suffices alone:

- Linux's `prctl(PR_SET_PDEATHSIG, SIGKILL)`: the kernel kills the worker when its
  parent goes, even while the worker runs a kernel in C that never returns to Python.
  It fires when the parent *thread* that forked the worker ends, so it is asked for
  only when that thread was the parent's main thread (the caller says so:
  `from_main_thread()` in the parent), else a worker started from a pool thread
  would die with the thread.
- a daemon thread in the worker that polls its parent pid and exits the worker when
  it changes (reparented: the parent is gone): portable, and covers the case above.
"""

from __future__ import annotations

import os
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_S = 0.5  # how often the watch thread looks at the parent pid


def from_main_thread() -> bool:
    """In the parent, before it starts a worker: whether PDEATHSIG is safe to ask."""
    return threading.current_thread() is threading.main_thread()


def die_with_parent(parent_pid: int, pdeathsig: bool = True) -> None:
    """In a worker: end when the process `parent_pid` ends (see the module doc)."""
    if pdeathsig and sys.platform.startswith("linux"):
        _linux_pdeathsig()
    if os.getppid() != parent_pid:  # the parent died before we got here
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(WATCH_S)
        os._exit(1)  # no cleanup: whoever reads our results is gone

    threading.Thread(target=watch, name="gpusem-parent-watch", daemon=True).start()


def _linux_pdeathsig() -> None:
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # no prctl: the watch thread alone
