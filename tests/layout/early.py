"""The layout checks' tools, started early (issue 32.11).

mypy over the whole package costs ~25 s of CPU in one process. The suite runs in one
pytest process, so on CI's 2 cores one core is mostly idle: `tests/layout/conftest.py`
starts mypy when collection ends, and `test_mypy_is_clean` collects its answer (the
same command, the same assertion) instead of starting it late in the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
TIMEOUT_S = 600

_started: dict[tuple[str, ...], tuple[subprocess.Popen, object, object]] = {}


def _command(name: str, args: list[str]) -> tuple[list[str], dict[str, str]]:
    exe = Path(sys.executable).parent / name
    return [str(exe), *args], dict(os.environ, PYTHONPATH=str(SRC))


def start(name: str, args: list[str]) -> None:
    """Start `name args` now, its output to temporary files (a pipe nobody reads
    would stall it)."""
    cmd, env = _command(name, args)
    out = tempfile.TemporaryFile(mode="w+")
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=err, text=True)
    _started[tuple(cmd)] = (proc, out, err)


def run(name: str, args: list[str]) -> subprocess.CompletedProcess:
    """The tool's result: from its early start if there was one, else run now."""
    cmd, env = _command(name, args)
    early = _started.pop(tuple(cmd), None)
    if early is None:
        return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    proc, out, err = early
    code = proc.wait(timeout=TIMEOUT_S)
    texts = []
    for f in (out, err):
        f.seek(0)  # type: ignore[attr-defined]
        texts.append(f.read())  # type: ignore[attr-defined]
        f.close()  # type: ignore[attr-defined]
    return subprocess.CompletedProcess(cmd, code, texts[0], texts[1])


def stop_all() -> None:
    """End what was started and never asked for (a run stopped early, -x)."""
    while _started:
        _, (proc, out, err) = _started.popitem()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        out.close()  # type: ignore[attr-defined]
        err.close()  # type: ignore[attr-defined]


MYPY_ARGS = ["--config-file", str(ROOT / "pyproject.toml"), "-p", "gpusem"]
