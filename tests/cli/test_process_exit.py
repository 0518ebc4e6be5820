"""The `gpusem` command ends without the interpreter's teardown (cli/process_exit.py)
and loses nothing of what `sys.exit` would have done: its exit status, its non-daemon
threads' work, its atexit handlers, its buffered output."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusem.cli.process_exit import exit_status, run_then_exit, running_as_command

COMMAND = '''
import atexit, sys, threading, time
from pathlib import Path
from gpusem.cli.process_exit import run_then_exit

here = Path(sys.argv[1])
atexit.register(lambda: (here / "atexit").write_text("ran"))

def late():
    time.sleep(0.3)
    (here / "thread").write_text("ran")

def work():
    threading.Thread(target=late).start()
    sys.stdout.write("buffered, no newline")
    sys.exit({code!r})

run_then_exit(work)
raise AssertionError("run_then_exit returned in the command's process")
'''


@pytest.mark.parametrize(("code", "status"), [(None, 0), (1, 1), (4, 4), (300, 44),
                                              ("a message", 1)])
def test_the_command_exits_with_sys_exits_status_and_runs_what_it_would(
        tmp_path: Path, code: object, status: int) -> None:
    script = tmp_path / "gpusem"  # the console script's name: the command itself
    script.write_text(COMMAND.format(code=code))
    proc = subprocess.run([sys.executable, str(script), str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == status, proc.stderr
    assert proc.stdout == "buffered, no newline"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "thread").read_text() == "ran"
    if isinstance(code, str):
        assert proc.stderr.strip() == code


def test_a_caller_of_the_cli_keeps_its_interpreter() -> None:
    # pytest is __main__ here: the CLI inside it returns and raises as it did
    assert not running_as_command()
    with pytest.raises(SystemExit) as stop:
        run_then_exit(lambda: sys.exit(3))
    assert stop.value.code == 3
    assert exit_status(None) == 0 and exit_status(2) == 2 and exit_status(256) == 0



HELPERS = '''
import multiprocessing as mp, multiprocessing.forkserver as fs, sys
import multiprocessing.resource_tracker as rt
from gpusem.cli.process_exit import run_then_exit

def work():
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["json"])
    child = ctx.Process(target=int)
    child.start()
    child.join()
    print(fs._forkserver._forkserver_pid, rt._resource_tracker._pid, flush=True)

if __name__ == "__main__":
    run_then_exit(work)
'''


def test_the_command_leaves_no_helper_process_behind(tmp_path: Path) -> None:
    """The forkserver (Dask's workers fork from it) and the resource tracker are
    stopped and reaped before the command exits: before, they outlived it holding
    its stdout (a caller reading the output waited 0.25-1 s past its exit)."""
    script = tmp_path / "gpusem"
    script.write_text(HELPERS)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    helpers = []
    for pid in (proc.stdout.readline().split() if proc.stdout else []):
        try:
            os.kill(int(pid), 0)  # still there (running, or a zombie not reaped)
            helpers.append(int(pid))
        except ProcessLookupError:
            pass
    proc.communicate(timeout=60)
    assert helpers == [], helpers


HOLDER = '''
import multiprocessing as mp, os, sys, time
from pathlib import Path
from gpusem.cli.process_exit import run_then_exit

def child(where):
    pid = os.fork()  # a forked grandchild keeps every descriptor: the tracker's too
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    Path(where).write_text(str(pid))

def work():
    p = mp.get_context("spawn").Process(target=child, args=(sys.argv[1],))
    p.start()
    p.join()

if __name__ == "__main__":
    run_then_exit(work)
'''


def test_a_process_holding_the_trackers_pipe_does_not_hold_the_command(
        tmp_path: Path) -> None:
    """The resource tracker ends when every holder of its pipe has closed it; a
    process of the command's that outlived it (here a forked grandchild, sleeping)
    must not keep the command from exiting: it waits HELPER_WAIT_S at most."""
    from gpusem.cli.process_exit import HELPER_WAIT_S

    script, where = tmp_path / "gpusem", tmp_path / "grandchild"
    script.write_text(HOLDER)
    start = time.monotonic()
    with (tmp_path / "stderr").open("w") as err:  # not a pipe: the sleeper holds it
        proc = subprocess.Popen([sys.executable, str(script), str(where)],
                                stdout=subprocess.DEVNULL, stderr=err)
        status = proc.wait(timeout=60)
    took = time.monotonic() - start
    os.kill(int(where.read_text()), 9)
    assert status == 0, (tmp_path / "stderr").read_text()
    assert took < HELPER_WAIT_S + 8.0, took  # the sleeper lives 60 s
