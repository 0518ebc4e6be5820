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

And a process gpusem kills on purpose (a shrinker at its deadline, a straggling
shard, a compiler past its timeout) is killed with everything it started (`kill_tree`,
`run_killing_tree`).
"""

from __future__ import annotations

import os
import signal
import subprocess
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

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # no prctl: the watch thread alone


STOPPED_WAIT_S = 0.05  # how long `kill_tree` waits for a process to stop


def kill_tree(pid: int) -> None:
    """SIGKILL process `pid` and every process under it. Killing a process alone
    leaves what it started running, orphaned: a killed shrinker's candidate build
    (g++ and its cc1plus) went on for seconds holding the command's stdout, and a g++
    killed at GXX_TIMEOUT_S left its cc1plus compiling. Each process is stopped
    (SIGSTOP) before its children are listed (Linux: /proc/PID/task/TID/children),
    so none starts another in between; the whole tree is then killed. Where /proc
    gives no children list, `pid` alone is killed, as before. The process group is
    left as it is: a kill of the campaign's group still reaches every one of them."""
    tree: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            os.kill(p, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        tree.append(p)
        _wait_stopped(p)
        todo.extend(_children(p))
    for p in tree:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _wait_stopped(pid: int) -> None:
    """Until `pid` is stopped (or gone), at most STOPPED_WAIT_S: SIGSTOP takes
    effect when the process next leaves the kernel, a fork in flight included."""
    until = time.monotonic() + STOPPED_WAIT_S
    while time.monotonic() < until:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            return
        if stat[stat.rindex(b")") + 2:][:1] in (b"T", b"t", b"Z", b"X"):
            return
        time.sleep(0.001)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return found


def run_killing_tree(cmd: list[str] | str, *, timeout: float | None = None,
                     input: str | bytes | None = None, capture_output: bool = False,
                     check: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """`subprocess.run`, except that past `timeout` the process is killed with what
    it started (`kill_tree`) before TimeoutExpired is raised: subprocess.run kills
    the process alone, and a compiler driver's own processes (g++'s cc1plus, as, ld;
    nvcc's cicc, ptxas) went on, orphaned, with a hung one running for good."""
    if capture_output:
        kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with subprocess.Popen(cmd, **kwargs) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except BaseException:  # the timeout, or an interrupt while waiting
            kill_tree(proc.pid)
            proc.communicate()
            raise
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done
