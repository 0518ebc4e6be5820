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


def process_state(pid: int) -> str:
    """The process's state letter (/proc/PID/stat), "" when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2]

def gone_within(pid: int, seconds: float) -> bool:
    """Whether process `pid` is gone (or a zombie: dead, not yet reaped) within
    `seconds`."""
    until = time.monotonic() + seconds
    while process_state(pid) not in ("", "Z") and time.monotonic() < until:
        time.sleep(0.02)
    return process_state(pid) in ("", "Z")


def test_kill_tree_kills_a_process_and_what_it_started(tmp_path) -> None:
    """`kill_tree`: a process two levels deep (a shell that started a shell that
    started sleep, as g++ starts cc1plus) dies with the one killed; `Popen.kill`
    killed the first alone."""
    from gpusem.compiler.backends.lifetime import kill_tree

    pids = tmp_path / "pids"
    script = f"sh -c 'sleep 120 & echo $! > {pids}; wait' & wait"
    for kill in ("tree", "popen"):
        pids.unlink(missing_ok=True)
        proc = subprocess.Popen(["sh", "-c", script])
        until = time.monotonic() + 10
        while not pids.exists() or not pids.read_text().strip():
            assert time.monotonic() < until
            time.sleep(0.01)
        grandchild = int(pids.read_text())
        if kill == "tree":
            kill_tree(proc.pid)
        else:
            proc.kill()
        proc.wait(timeout=10)
        gone = gone_within(grandchild, 5.0)
        if kill == "tree":
            assert gone
        else:  # the old way leaves it running: the check above can fail
            assert not gone
            os.kill(grandchild, signal.SIGKILL)


def test_run_killing_tree_is_subprocess_run_with_the_tree_killed(tmp_path) -> None:
    from gpusem.compiler.backends.lifetime import run_killing_tree

    pid_file = tmp_path / "pid"
    with pytest.raises(subprocess.TimeoutExpired):
        run_killing_tree(f"sleep 120 & echo $! > {pid_file}; wait", shell=True,
                         timeout=0.5)
    child = int(pid_file.read_text())
    assert gone_within(child, 5.0)
    done = run_killing_tree(["cat"], input="in", capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "in")
    with pytest.raises(subprocess.CalledProcessError):
        run_killing_tree(["false"], check=True)


def test_a_g_plus_plus_past_its_timeout_is_killed_with_what_it_runs(
        tmp_path, monkeypatch) -> None:
    from gpusem.compiler.backends import cpu

    monkeypatch.setattr(cpu, "GXX_TIMEOUT_S", 0.5)
    pid_file = tmp_path / "pid"
    with pytest.raises(cpu.BuildHung, match="did not finish in 0.5 s"):
        cpu._gxx(["sh", "-c", f"sleep 120 & echo $! > {pid_file}; wait"],
                 capture_output=True)
    child = int(pid_file.read_text())
    assert gone_within(child, 5.0)
    done = cpu._gxx(["sh", "-c", "echo out; echo err >&2; exit 3"],
                    capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
