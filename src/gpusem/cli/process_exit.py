"""How the `gpusem` command ends: its work done, its process exits without tearing the
interpreter down.

Issue 31.1 times a command as the shell does, and the report's `seconds` run from the
process's fork (`fuzz/clock.py`) to the report. What came after the report was the
interpreter's finalisation: after the atexit handlers, CPython frees every module
and object of the process (~880 modules with Dask, hypothesis, z3 and NumPy loaded).
That took 0.40-0.55 s on an idle 2-core machine and over 1 s in a loaded suite run
(CI, stop 42: a 22.76 s command whose report said 21.72 s), so the command outlived
its report by more than its budget's own margin.

So the command, and only the command (a process whose `__main__` is the `gpusem`
script or `python -m gpusem`; a library caller's interpreter is its own), ends the
way `sys.exit` would up to the point where nothing observable is left to do: the
non-daemon threads joined, the atexit handlers run (logging flushed, Dask's clusters
and multiprocessing's children stopped, temporary folders removed), stdout and
stderr flushed; then `os._exit` with the code `sys.exit` was given. Every file gpusem
writes is closed where it is written (`with` blocks), so nothing buffered is lost.

And the command leaves no process of its own behind. The Dask engine forks its workers
from multiprocessing's forkserver (`fuzz/engines/dask_start.py`), a process that
imported Dask, NumPy and gpusem's targets, beside multiprocessing's resource tracker;
both outlived the command: they stop when they read the end of the command's pipe to
them, then the forkserver tore its interpreter down (0.25 s idle) holding the
command's stdout and stderr, so a caller reading the command's output (a pipe, `| tee`,
`subprocess.run(capture_output=True)`) waited that long past the command's exit: CI,
stop 46, a 20 s Dask campaign's output ended 1.01 s after its report's clock. Here the
forkserver, with nothing left to fork (the clusters closed by the atexit handlers at
the latest), is stopped by SIGTERM (no handler of its own: no teardown), and the
resource tracker is asked to stop and waited for (it still releases what a child
leaked, and warns).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path


def running_as_command() -> bool:
    """Whether this process is the `gpusem` command itself (the console script,
    `python -m gpusem`), not a program that calls gpusem's CLI inside it (a test's
    CliRunner, a caller of `main()`)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    script = Path(str(getattr(main, "__file__", "") or "")).stem
    return script == "gpusem" or getattr(spec, "name", "") == "gpusem.__main__"


def exit_status(code: object) -> int:
    """The process's exit status for `sys.exit(code)`, as the interpreter gives it:
    None is 0, an int itself, anything else printed to stderr and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def run_then_exit(work: Callable[[], None]) -> None:
    """Run `work` (the command); in the command's own process end it without the
    interpreter's teardown, elsewhere return or raise as `work` did."""
    if not running_as_command():
        work()
        return
    try:
        work()
        status = 0
    except SystemExit as stop:
        status = exit_status(stop.code)
    for t in threading.enumerate():  # what the interpreter waits for at exit too
        if t is not threading.main_thread() and not t.daemon:
            t.join()
    atexit._run_exitfuncs()  # the handlers sys.exit would have run (CPython)
    stop_helper_processes()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`gpusem ... | head`)
            pass
    os._exit(status)


HELPER_WAIT_S = 2.0  # the most the command waits for each helper to end


def stop_helper_processes() -> None:
    """multiprocessing's forkserver and resource tracker of this process stopped and
    reaped, where it started them (see the module docstring), each waited for at
    most HELPER_WAIT_S: the tracker ends when every process holding its pipe has
    closed it, and a process of ours that outlived the command's stops would else hold
    the command's exit with it. Their handles are CPython's own
    (`multiprocessing.forkserver._forkserver`, the tracker's `_fd` and `_pid`, which
    its `_stop` uses); where they are missing, the helpers keep running, as before."""
    forkserver = sys.modules.get("multiprocessing.forkserver")
    pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    if isinstance(pid, int):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        _reap(pid)
    tracking = sys.modules.get("multiprocessing.resource_tracker")
    tracker = getattr(tracking, "_resource_tracker", None)
    fd, pid = getattr(tracker, "_fd", None), getattr(tracker, "_pid", None)
    if isinstance(fd, int) and isinstance(pid, int):
        try:
            os.close(fd)  # its end of the pipe: the tracker stops at its end
        except OSError:
            pass
        _reap(pid)


def _reap(pid: int) -> None:
    """Wait for child `pid` to end, at most HELPER_WAIT_S."""
    until = time.monotonic() + HELPER_WAIT_S
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not ours, or reaped already
            return
        if done or time.monotonic() >= until:
            return
        time.sleep(0.005)


__all__ = ["exit_status", "run_then_exit", "running_as_command",
           "stop_helper_processes"]
