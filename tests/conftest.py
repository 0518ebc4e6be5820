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
import os
import re
import sys
from pathlib import Path

import pytest

# Bytecode is written during the suite even where the environment says not to
# (PYTHONDONTWRITEBYTECODE=1, as on this machine, which CI's is like): the suite starts
# hundreds of Python processes (the CLI, the local engine's and the shrinker's spawned
# workers, the harness workers, Dask's), each importing gpusem's modules, and without
# __pycache__ every one compiled them again from source (all 457: 3.1-3.5 CPU-s, with
# bytecode 1.9), as each xdist worker did the rewritten test modules (about half of
# the 24 CPU-s of collecting the suite). Cold, -n 2, in turns on a loaded machine:
# tests/cli 91.3 / 85.3 CPU-s without, 83.1 / 74.7 with; tests/docs, appy and robust
# 247.4 / 255.2 without, 240.6 / 237.1 with. Set here, before any test module is imported, so
# pytest's assertion rewriter caches the rewritten modules too; processes the tests
# start inherit it.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False

SLOWEST = Path(__file__).with_name("slowest.txt")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s+(?:call|setup|teardown)\s+([^:\s]+)::")


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


def pytest_configure(config):
    """`-n N` distributes by `loadgroup`, not `load`: tests marked `xdist_group(name)`
    run on one worker, one after another (tests/fuzz/test_budget_kept.py's 20 s
    campaigns: on both workers at once, four campaigns on two cores); every other test
    as by `load`. Not in pyproject's addopts: any --dist but `no` makes
    pytest-benchmark time nothing, and the benchmarks run without -n."""
    if getattr(config.option, "dist", "no") == "load":  # the controller
        config.option.dist = "loadgroup"
    worker = getattr(config, "workerinput", None)  # a worker: xdist read the dist
    if worker is not None and not any(  # before this hook; the controller's argv
            a.startswith(("--dist", "-d")) for a in worker.get("mainargv", [])):
        config.option.loadgroup = True  # names a marked test's group in its node id


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A test that takes pytest-benchmark's `benchmark` fixture is marked `benchmark`
    (before `-m` selects): the README's test command runs the rest on two workers
    (pytest-xdist, issue 32.11) and these alone after, on one, since pytest-benchmark
    times nothing under xdist and a timing needs a quiet core. Then the files of
    tests/slowest.txt are moved to the front, slowest first."""
    for item in items:
        if "benchmark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.benchmark)
    # Slowest files first (issue 32): with two workers, a two-minute file drawn last
    # kept one busy while the other had nothing left to do. xdist's `load` scheduling
    # hands out the collection in this order (every worker sorts it the same way: the
    # table is read from the tree); `-m` deselects after, keeping the order.
    if SLOWEST.exists():
        items[:] = slowest_files_first(items, file_seconds(SLOWEST.read_text()))


def file_seconds(text: str) -> dict[str, float]:
    """The seconds a `--durations` block (tests/slowest.txt) gives each test file."""
    seconds: dict[str, float] = {}
    for line in text.splitlines():
        if (m := _DURATION.match(line)) is not None:
            seconds[m[2]] = seconds.get(m[2], 0.0) + float(m[1])
    return seconds


def slowest_files_first(items: list, seconds: dict[str, float]) -> list:
    """The files of tests/slowest.txt first, slowest first; each file's tests stay
    together and in their order (module fixtures are set up once), and every other
    file keeps its place after them."""
    def key(indexed: tuple[int, object]) -> tuple[float, int]:
        index, item = indexed
        path = item.nodeid.split("::", 1)[0]  # type: ignore[attr-defined]
        return (-seconds.get(path, 0.0), index)

    return [item for _, item in sorted(enumerate(items), key=key)]


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
