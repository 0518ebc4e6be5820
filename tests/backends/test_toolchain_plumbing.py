"""The toolchain matrix's GPU plumbing without a GPU (`fake_cupy/`, as
`test_cuda_plumbing.py`: its "NVRTC" is nvcc -c, its "GPU" the cpu harness): every
configuration runs in ONE worker, the worker's NVRTC builds `nvrtc` and
`no-restrict`, the host configurations' binaries are loaded into it, and the matrix
keeps each configuration's module apart."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest
from gpusem.compiler.backends import toolchain_build
from gpusem.compiler.backends.toolchain import CONFIGS, Matrix, config_of

from .test_toolchain_build import T1_EXPECTED, t1_job

FAKE = Path(__file__).parent / "fake_cupy"


@pytest.fixture
def fake_gpu(tmp_path, monkeypatch):
    sys.path.insert(0, str(FAKE))  # spawn hands sys.path to the worker only
    monkeypatch.setenv("GPUSEM_CACHE_DIR", str(tmp_path))
    built: list[str] = []

    def host_build(config, items):
        """What the fake CuPy loads: pickled {entry: (kernel name, source)}."""
        built.append(config)
        entries = {i: f"e{i}_{config}" for i, _, _ in items}
        binary = pickle.dumps({entries[i]: (name, src) for i, name, src in items})
        return {}, binary, entries

    monkeypatch.setattr(toolchain_build, "build", host_build)
    try:
        yield built
    finally:
        sys.path.remove(str(FAKE))


def test_every_config_runs_in_one_worker(fake_gpu):
    matrix = Matrix("cuda")
    try:
        runs = matrix.run([t1_job(0), t1_job(1)])
        gpu = matrix._gpu
        assert gpu is not None
        stats = dict(gpu.stats)
        workers = {id(gpu._worker)}
    finally:
        matrix.close()
    assert set(runs) == set(CONFIGS)
    for config, results in runs.items():
        assert [r.kind for r in results] == ["ok", "ok"], (config, results[0].message)
        assert all(r.outputs["g_out"].tolist() == T1_EXPECTED for r in results), config
    assert sorted(fake_gpu) == sorted(toolchain_build.HOST_CONFIGS)  # once each
    assert stats["builds"] == 6 and stats["loads"] == 4  # host binaries loaded
    assert stats.get("replaced", 0) == 0 and len(workers) == 1
    assert set(matrix.seconds) == set(CONFIGS)


def test_host_configs_are_built_here_and_loaded_later(fake_gpu):
    matrix = Matrix("cuda", configs=("ptxas-O0",))
    try:
        (results,) = matrix.run([t1_job()]).values()
        gpu = matrix._gpu
        assert gpu is not None
        tagged = "x\n// gpusem toolchain config: nvcc-G\n"
        status, reply, loaded = gpu.build_module("k", [(0, "bundl_main", tagged)])
        stats = dict(gpu.stats)
    finally:
        matrix.close()
    assert results[0].outputs["g_out"].tolist() == T1_EXPECTED
    assert (status, loaded) == ("ok", False) and reply[2] == {0: "e0_nvcc-G"}
    assert fake_gpu == ["ptxas-O0", "nvcc-G"] and stats["loads"] == 1


def test_the_worker_builds_nvrtc_and_no_restrict(fake_gpu):
    matrix = Matrix("cuda", configs=("nvrtc", "no-restrict"))
    try:
        runs = matrix.run([t1_job()])
    finally:
        matrix.close()
    assert fake_gpu == []  # no host build
    assert all(rs[0].outputs["g_out"].tolist() == T1_EXPECTED for rs in runs.values())
    assert config_of("x\n// gpusem toolchain config: no-restrict\n") == "no-restrict"
