"""The toolchain matrix's GPU plumbing without a GPU (`fake_cupy/`, as
`test_cuda_plumbing.py`: its "NVRTC" is nvcc -c, its "GPU" the cpu harness): every
configuration runs in ONE worker, the worker's NVRTC builds `nvrtc` and
`no-restrict`, the host configurations' binaries are loaded into it, and the matrix
keeps each configuration's module apart."""

from __future__ import annotations

import pickle
import sys
from dataclasses import replace
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


def _matrix_run(configs, jobs, share=True):
    matrix = Matrix("cuda", configs=configs, share=share)
    try:
        runs = matrix.run(jobs)
        launched = matrix._gpu.stats["launches"] if matrix._gpu else 0
        return runs, dict(matrix.shared), dict(matrix.counts), launched
    finally:
        matrix.close()


def test_a_config_whose_sass_is_another_configs_shares_its_launches(fake_gpu,
                                                                  monkeypatch):
    """Byte-identical machine code for a job's kernel: the job is launched once and
    the configurations share its results, the sharing recorded; a digest that
    differs (or none) launches again; share=False launches everything."""
    configs = ("nvrtc", "nvcc-O3", "ptxas-O0", "ptx-jit")
    jobs = [t1_job(0), t1_job(1)]
    same = {"nvrtc": "A", "nvcc-O3": "A", "ptxas-O0": "B"}  # ptx-jit: PTX, none

    def digests(binary):
        entry = next(iter(pickle.loads(binary)))  # the fake's "cubin": a pickle
        if "::" in entry:  # the fake worker's NVRTC: {"gs_k0::name": ...}
            return {0: same["nvrtc"]}
        config = entry.split("_", 1)[1]  # a host build's: {"e0_<config>": ...}
        return {0: same[config]} if config in same else {}

    monkeypatch.setattr(toolchain_build, "kernel_digests", digests)
    runs, shared, counts, _ = _matrix_run(configs, jobs)
    assert shared == {"nvcc-O3": {0: "nvrtc", 1: "nvrtc"}}
    assert runs["nvcc-O3"][1] is runs["nvrtc"][1]
    assert counts == {"shared": 2, "launched": 6}
    assert all(r.outputs["g_out"].tolist() == T1_EXPECTED
               for rs in runs.values() for r in rs)
    _, shared, counts, _ = _matrix_run(configs, jobs, share=False)
    assert shared == {} and counts == {"shared": 0, "launched": 8}


def test_no_restrict_of_a_kernel_without_restrict_is_nvrtcs_build(fake_gpu):
    plain = t1_job(0)
    plain = replace(plain, spec=replace(
        plain.spec, source=toolchain_build.strip_restrict(plain.spec.source)))
    runs, shared, _, _ = _matrix_run(("nvrtc", "no-restrict"),
                                          [plain, t1_job(1)])
    assert shared == {"no-restrict": {0: "nvrtc"}}  # job 1 has __restrict__
    assert runs["no-restrict"][0] is runs["nvrtc"][0]
    assert runs["no-restrict"][1] is not runs["nvrtc"][1]
