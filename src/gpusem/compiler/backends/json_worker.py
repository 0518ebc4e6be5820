"""A worker process that answers one JSON line per request (the APPy and Exo-GPU
drivers run the compiler under test in one, so a crash or a hang of that compiler
costs a restart, not the campaign): reading an answer under a timeout, and stopping
the process."""

from __future__ import annotations

import json
import selectors
import shutil
import signal
import subprocess
from typing import Self


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


def signal_name(code: int | None) -> str:
    """How a worker ended: the signal's name, or `exit N`."""
    if code is None:
        return "unknown"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit {code}"


class JsonWorkerDriver:
    """A pool of one worker process answering JSON requests, replaced when it crashes,
    hangs (no answer within `timeout`) or has served `recycle_after` requests. A
    subclass's `_start` launches it (setting `proc` and `served = 0`) in `workdir`,
    which `close` removes."""

    proc: subprocess.Popen | None
    workdir: str
    timeout: float
    served: int
    recycle_after: int

    def _start(self) -> None:
        raise NotImplementedError

    def _kill(self) -> None:
        if self.proc is not None:
            stop_worker(self.proc)
        self.proc = None

    def close(self) -> None:
        self._kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _read_line(self, timeout: float) -> dict | None:
        """One JSON answer, or None on timeout / EOF."""
        assert self.proc is not None
        return read_json_line(self.proc, timeout)

    def ask(self, request: dict) -> tuple[dict | None, str]:
        """Send one request; the answer, or None with `hang` / `crash:<signal>`."""
        if self.proc is None or self.proc.poll() is not None or (
                self.served >= self.recycle_after):
            self._kill()
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        answer = self._read_line(self.timeout)
        self.served += 1
        if answer is not None:
            if answer.get("fatal"):
                # The worker exits after a fatal answer (its CUDA context is gone).
                # Reap it now: asked before it is gone, the next request would meet a
                # dying process and be reported as a crash of *that* request.
                self._kill()
            return answer, ""
        try:  # EOF: the worker is dying, reap it; no EOF: it is still running
            code = self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self._kill()
            return None, "hang"
        self._kill()
        return None, f"crash:{signal_name(code)}"
