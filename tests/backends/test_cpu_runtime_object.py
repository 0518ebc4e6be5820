"""The cpu backend's runtime compiled once and linked into every library
(`CpuBackend._runtime_object`, simt_sched.h says why): kernels built that way give
their NumPy answers, their units leave the runtime's code out, and a runtime object
trimmed from the cache by another process is built again, never linked missing."""

from __future__ import annotations

from gpusem.compiler.backends import cpu_source
from gpusem.compiler.backends.cpu import CpuBackend

from . import cases


def test_libraries_link_one_runtime_object_and_a_trimmed_one_is_built_again(
        tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSEM_CACHE_DIR", str(tmp_path / "home"))  # where it lives
    backend = CpuBackend(cache_dir=tmp_path / "cache")
    try:
        first = cases.reduce_case("reduce_sync")
        [got] = backend.run([first.job])
        assert got.kind == "ok" and cases.matches(first, got.outputs), got.message
        [runtime] = (tmp_path / "home" / "cpu").glob("*_gs_rt.o")
        unit = cpu_source.translation_unit([(0, first.job.spec)], True)
        assert "::gs_rt_launch(" in unit and "::gs::launch(" not in unit
        alone = cpu_source.translation_unit([(0, first.job.spec)])  # a reproducer's
        assert "::gs::launch(" in alone and "::gs_rt_launch(" not in alone

        runtime.unlink()  # the cache's trim, run by another process
        second = cases.int_arith_case()  # not built yet: a new library, linked now
        [got] = backend.run([second.job])
        assert got.kind == "ok" and cases.matches(second, got.outputs), got.message
        assert runtime.exists()
    finally:
        backend.close()
