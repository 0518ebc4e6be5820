"""Test-suite wide configuration.

Tests marked `gpu` need an NVIDIA GPU and CuPy; where there is none they are skipped
with a reason (CI has no GPU; the H100 runs them with `pytest -m gpu`). Tests marked
`exo` need an installed Exo-GPU (`GPUSEM_EXO_PYTHON`, or an `exo` with GPU support in
this interpreter); CI has none, so they are skipped there with the reason
(`GPUSEM_EXO_PYTHON=... pytest -m exo tests/exo` runs them).
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


@functools.cache
def exo_available() -> tuple[bool, str]:
    from gpusem.calculus.errors import GpusemError
    from gpusem.compiler.gpuir_exo.driver import find_exo_python

    try:
        find_exo_python()
    except GpusemError as err:
        return False, err.message
    return True, ""


def pytest_collection_modifyitems(config, items):
    # the marker, not the keyword: every test under tests/exo has the keyword `exo`
    exo_items = [item for item in items if item.get_closest_marker("exo")]
    if exo_items:
        ok, why = exo_available()
        if not ok:
            skip = pytest.mark.skip(reason=f"exo test: {why}")
            for item in exo_items:
                item.add_marker(skip)
    if not any("gpu" in item.keywords for item in items):
        return
    ok, why = gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
