"""Test-suite wide configuration.

Tests marked `gpu` need an NVIDIA GPU and CuPy; where there is none they are skipped
with a reason (CI has no GPU; the H100 runs them with `pytest -m gpu`).
"""

from __future__ import annotations

import functools

import pytest


@functools.cache
def gpu_available() -> tuple[bool, str]:
    try:
        import cupy  # noqa: F401
    except Exception as err:  # ImportError, or a CUDA library that fails to load
        return False, f"CuPy not importable ({type(err).__name__})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:
        return False, f"no CUDA device ({type(err).__name__})"
    return (count > 0), "no CUDA device"


def pytest_collection_modifyitems(config, items):
    if not any("gpu" in item.keywords for item in items):
        return
    ok, why = gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
