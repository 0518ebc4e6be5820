"""Fixtures for the backend tests: one cpu backend per session, its cache in a tmp dir."""

from __future__ import annotations

import pytest

from gpusem.compiler.backends.cpu import CpuBackend


@pytest.fixture(scope="session")
def cpu(tmp_path_factory):
    backend = CpuBackend(cache_dir=tmp_path_factory.mktemp("gpusem-cpu-cache"))
    yield backend
    backend.close()
