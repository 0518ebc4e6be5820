"""C-Vise as an optional engine of the CUDA reducer: used when `cvise` is on PATH,
never required (our passes are the default and run after it either way).

C-Vise runs a shell script in a copy of the file's folder; the script here calls back
into this Python with the test and the guards (pickled beside it), so any picklable
test works, the built-in ones included. C-Vise edits the file in place as it finds
smaller ones, so when the budget stops it the best text so far is kept.
"""

from __future__ import annotations

import os
import pickle
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpusem.fuzz.cuda_reduce.oracles import Guard, Interesting
from gpusem.fuzz.cuda_reduce.reducer import CudaReduction, NotInteresting, reduce_cuda
from gpusem.fuzz.cuda_reduce.sites import Pass
from gpusem.fuzz.cuda_reduce.tokens import count_lines

CVISE = "cvise"
_CALLBACK = """import pickle, sys
test, guards = pickle.load(open(sys.argv[1], "rb"))
text = open(sys.argv[2]).read()
sys.exit(0 if test(text) and all(g(text) is None for g in guards) else 1)
"""


def have_cvise() -> bool:
    return shutil.which(CVISE) is not None


def reduce_with_cvise(text: str, name: str, test: Interesting, guards: Sequence[Guard],
                      passes: Sequence[Pass], budget_s: float,
                      on_progress: Callable[[Any], None] | None,
                      command: str | None = None) -> CudaReduction:
    """C-Vise for most of the budget, then our passes (rename, shrink, format) on what
    it left. `command`: the shell test, run as is (no pickling) when given."""
    from gpusem.calculus.errors import BadInput

    if not have_cvise():
        raise BadInput("reduce: engine cvise: `cvise` is not on PATH (apt-get install "
                       "cvise), or use the default engine")
    t0 = time.monotonic()
    if not test(text):
        raise NotInteresting("the input is not interesting to the test")
    with tempfile.TemporaryDirectory(prefix="gpusem-cvise-") as tmp:
        work = Path(tmp)
        (work / name).write_text(text)
        script = work / "interesting.sh"
        script.write_text(_script(work, name, test, guards, command))
        script.chmod(0o755)
        argv = [CVISE, "--n", "1", "--timeout", "300", "--tidy", str(script),
                str(work / name)]
        _run_bounded(argv, work, max(1.0, 0.7 * budget_s))
        reduced = (work / name).read_text()
    left = max(1.0, budget_s - (time.monotonic() - t0))
    r = reduce_cuda(reduced, test, budget_s=left, guards=guards, passes=passes,
                    on_progress=on_progress)
    r.lines_before, r.seconds = count_lines(text), time.monotonic() - t0
    return r


def _script(work: Path, name: str, test: Interesting, guards: Sequence[Guard],
            command: str | None) -> str:
    """The interestingness script: the user's command as is, or the pickled test; then
    the guards (pickled)."""
    (work / "callback.py").write_text(_CALLBACK)
    with open(work / "oracle.pickle", "wb") as f:
        # with a shell command the test is the command itself: keep only the guards
        pickle.dump((_always if command else test, list(guards)), f)
    py = shlex.quote(sys.executable)
    pkg = shlex.quote(str(Path(__file__).resolve().parents[3]))
    check = (f"PYTHONPATH={pkg} {py} {shlex.quote(str(work / 'callback.py'))} "
             f"{shlex.quote(str(work / 'oracle.pickle'))} {shlex.quote(name)}")
    first = f"( {command} ) >/dev/null 2>&1 || exit 1\n" if command else ""
    return f"#!/bin/sh\n{first}{check}\n"


def _always(text: str) -> bool:
    return True


def _run_bounded(argv: list[str], cwd: Path, timeout_s: float) -> None:
    """Run C-Vise in its own process group; stop the whole group at the budget."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
