"""Test-suite wide configuration.

Tests marked `gpu` need an NVIDIA GPU and CuPy, tests marked `exo` an installed
Exo-GPU (`GPUSEM_EXO_PYTHON`, or an `exo` with GPU support in this interpreter): the
default run deselects both (pyproject's addopts; CI has neither); `pytest -m gpu` on the
H100 and `GPUSEM_EXO_PYTHON=... pytest -m exo tests/exo` where Exo-GPU is installed run
them, and they fail where their resource is missing. No test passes by skipping: a skip
(a `skipif` whose dependency is missing: nvcc, appyc) is reported as a failure.
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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A test that takes pytest-benchmark's `benchmark` fixture is marked `benchmark`
    (before `-m` selects): the README's test command runs the rest on two workers
    (pytest-xdist, issue 32.11) and these alone after, on one, since pytest-benchmark
    times nothing under xdist and a timing needs a quiet core."""
    for item in items:
        if "benchmark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.benchmark)


def pytest_runtest_setup(item):
    """A test marked `gpu` or `exo` that is selected where its resource is missing
    fails: the default run deselects them (pyproject's addopts), `pytest -m gpu` on a
    GPU machine and `pytest -m exo` where Exo-GPU is installed run them; a selected
    test never passes by skipping."""
    # the marker, not the keyword: every test under tests/exo has the keyword `exo`
    if item.get_closest_marker("exo"):
        ok, why = exo_available()
        if not ok:
            pytest.fail(f"exo test selected without Exo-GPU: {why}", pytrace=False)
    if item.get_closest_marker("gpu"):
        ok, why = gpu_available()
        if not ok:
            pytest.fail(f"gpu test selected without a GPU: {why}", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A skipped test is a failed one: a missing dependency (nvcc, appyc) must not
    look like a passing suite."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(
            report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped, which this suite counts as failed: {reason}"
