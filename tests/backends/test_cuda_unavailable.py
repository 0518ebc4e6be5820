"""Asking for the cuda backend where it cannot run (no CuPy, no driver, no GPU) is a
one-line error with exit status 2, never a worker's traceback."""

from __future__ import annotations

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
    env = dict(os.environ, PYTHONPATH=str(BROKEN))
    proc = subprocess.run([sys.executable, "-m", "gpusem.cli.main", "replay",
                           str(bundle)], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        ("the cuda backend cannot start here: ImportError: simulated: libcuda.so.1 "
         "not found")], proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
