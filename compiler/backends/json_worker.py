"""A worker process that answers one JSON line per request (the APPy and Exo-GPU
drivers run the compiler under test in one, so a crash or a hang of that compiler
costs a restart, not the campaign): reading an answer under a timeout, and stopping
the process."""

from __future__ import annotations

import json
import selectors
import subprocess


def read_json_line(proc: subprocess.Popen, timeout: float) -> dict | None:
    """The worker's next answer, or None on timeout or end of file."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            return None
        line = proc.stdout.readline()
    finally:
        sel.close()
    return json.loads(line) if line else None


def stop_worker(proc: subprocess.Popen) -> None:
    """Kill the worker, reap it and close its pipes (errors of an already dead process
    are ignored)."""
    try:
        proc.kill()
        proc.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        pass
    for stream in (proc.stdin, proc.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
