"""Workers die with their parent (issue 32.5, compiler/backends/lifetime.py): a parent
killed with SIGKILL runs no cleanup, so each worker must notice by itself, through
PR_SET_PDEATHSIG or its parent-watch thread (the appyc worker's only way)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PARENT = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", '''
import os, sys, time
from gpusem.compiler.backends.lifetime import die_with_parent
die_with_parent(int(sys.argv[1]), sys.argv[2] == "1")
print("ready", flush=True)
while True:
    pass  # a worker busy in a kernel: it never reads its pipe again
''', str(os.getpid()), sys.argv[1]], stdout=subprocess.PIPE, text=True)
assert child.stdout.readline().strip() == "ready"
print(child.pid, flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("pdeathsig", ["1", "0"])
def test_a_worker_ends_when_its_parent_is_killed(pdeathsig) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    parent = subprocess.Popen([sys.executable, "-c", PARENT, pdeathsig], env=env,
                              stdout=subprocess.PIPE, text=True)
    worker = int(parent.stdout.readline())
    assert alive(worker)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(worker):  # do not leave it spinning if the test fails
        os.kill(worker, signal.SIGKILL)
        pytest.fail(f"worker {worker} outlived its parent (pdeathsig={pdeathsig})")
