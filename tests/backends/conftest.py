"""Fixtures for the backend tests: one cpu backend per session, its cache in a tmp dir.

With GPUSEM_RESULTS_JSON=path set, the outcome of every backend test (and the
properties tests record, such as kernel timings) is written there as JSON: the GPU
smoke run on the H100 commits that file under results/.
"""

from __future__ import annotations

import json
import os
import platform

import pytest
from gpusem.compiler.backends.cpu import CpuBackend

_OUTCOMES: list[dict] = []


@pytest.fixture(scope="session")
def cpu(tmp_path_factory):
    backend = CpuBackend(cache_dir=tmp_path_factory.mktemp("gpusem-cpu-cache"))
    yield backend
    backend.close()


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _OUTCOMES.append(
            {
                "test": report.nodeid,
                "outcome": report.outcome,
                "seconds": round(report.duration, 3),
                **{k: v for k, v in report.user_properties},
            }
        )


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("GPUSEM_RESULTS_JSON")
    if not path or not _OUTCOMES:
        return
    summary = {
        "command": os.environ.get("GPUSEM_RESULTS_COMMAND", ""),
        "device": os.environ.get("GPUSEM_RESULTS_DEVICE", ""),
        "host": platform.node(),
        "python": platform.python_version(),
        "exit_status": int(exitstatus),
        "counts": {
            o: sum(1 for r in _OUTCOMES if r["outcome"] == o)
            for o in ("passed", "failed", "skipped")
        },
        "tests": _OUTCOMES,
    }
    with open(path, "w") as f:
        json.dump(summary, f, indent=1)
