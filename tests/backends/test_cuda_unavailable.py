"""Asking for the cuda backend where it cannot run (no CuPy, no driver, no GPU) is a
one-line error with exit status 2, never a worker's traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpusem.calculus.errors import BadInput
from gpusem.compiler.backends.cuda import CudaBackend

from . import cases

BROKEN = Path(__file__).parent / "broken_cupy"
ROOT = Path(__file__).resolve().parents[2]
# the broken CuPy first, then this checkout (not whichever gpusem is installed)
PATH = os.pathsep.join([str(BROKEN), str(ROOT / "src")])


def test_the_backend_raises_bad_input(monkeypatch):
    monkeypatch.syspath_prepend(str(BROKEN))  # spawn hands sys.path to the worker
    backend = CudaBackend()
    try:
        with pytest.raises(BadInput, match="cuda backend cannot start here: "
                                           "ImportError: simulated"):
            backend.run([cases.reduce_case().job])
    finally:
        backend.close()


def test_replaying_a_cuda_bundle_says_so_in_one_line():
    bundle = next((ROOT / "results" / "faults" / "bundles_cuda").glob("floor-division/*/"))
    env = dict(os.environ, PYTHONPATH=PATH)
    proc = subprocess.run([sys.executable, "-m", "gpusem.cli.main", "replay",
                           str(bundle)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    # issue 32.3: a bundle that cannot run here cannot test the bug: 125, which
    # `git bisect run` skips (it was 2, which bisect reads as "bad")
    assert proc.returncode == 125, proc.stdout + proc.stderr
    sig = json.loads((bundle / "bundle.json").read_text())["signature"]
    assert proc.stdout.strip().splitlines() == [
        (f"cannot test: {sig}: cannot run here: the cuda backend cannot start here: "
         "ImportError: simulated: libcuda.so.1 not found")], proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_exec_on_cuda_without_a_gpu_is_still_bad_input():
    """Only replay reads "cannot run here" as "cannot test"; to the other verbs it
    stays bad input (exit 2, one line)."""
    env = dict(os.environ, PYTHONPATH=PATH)
    proc = subprocess.run([sys.executable, "-m", "gpusem.cli.main", "exec",
                           str(ROOT / "examples" / "bundl" / "map_double.bundl"),
                           "--backend", "cuda"], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "the cuda backend cannot start here: "), proc.stderr
