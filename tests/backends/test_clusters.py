"""Thread-block clusters on the cpu harness (issue 32.12): a cluster's CTAs run
together as fibres of one scheduler, each with its own shared memory, so the cluster
barrier, distributed shared memory (mapa), remote mbarrier arrives and the TMA
multicast mean what they mean on sm_90. The references are NumPy; the missing-barrier
twin must be caught on the forward schedule, where the design makes it certain (CTA 0's
threads all run before CTA 1's)."""

from __future__ import annotations

import numpy as np
import pytest
from gpusem.calculus.errors import BadInput
from gpusem.compiler.backends.kernel import Job, KernelSpec, ptr

from . import cases

SEEDS = (0, 1, 2, 3, 4)
POISON_WORD = 0xA5A5A5A5 - 2**32


def dsmem_spec(cluster=4) -> KernelSpec:
    return KernelSpec("cluster_dsmem", cases.source("cluster_dsmem"), 8, 64, 528,
                      (ptr("in", "int32", 128), ptr("out", "int32", 512)),
                      cluster=cluster)


def dsmem_expected(x: np.ndarray) -> np.ndarray:
    out = np.empty(512, dtype=np.int64)
    for b in range(8):
        rank, t = b % 4, np.arange(64)
        row = x[(b // 4) * 64 + 63 - t]
        out[b * 64:(b + 1) * 64] = ((rank + 1) % 4) * 1000 + t + row
    return out.astype(np.int32)


def test_cluster_barrier_dsmem_multicast_and_remote_arrive(cpu):
    x = np.random.default_rng(5).integers(-10**6, 10**6, 128).astype(np.int32)
    results = cpu.run([Job(dsmem_spec(), {"in": x}, s) for s in SEEDS])
    for seed, r in zip(SEEDS, results, strict=True):
        assert r.kind == "ok", (seed, r.message)
        np.testing.assert_array_equal(r.outputs["out"], dsmem_expected(x))


def test_a_missing_cluster_barrier_reads_poison(cpu):
    spec = KernelSpec("cluster_dsmem_nosync", cases.source("cluster_dsmem_nosync"), 2,
                      32, 128, (ptr("out", "int32", 64),), cluster=2)
    r = cpu.run([Job(spec, {}, 0)])[0]
    assert r.kind == "ok", r.message
    # forward order: CTA 0 reads CTA 1's array before CTA 1 has run at all
    assert (r.outputs["out"][:32] == POISON_WORD).all(), r.outputs["out"][:32]
    assert (r.outputs["out"][32:] == np.arange(32)).all()  # CTA 0 had written


def test_a_launch_without_the_kernels_cluster_dims_is_an_error(cpu):
    r = cpu.run([Job(dsmem_spec(cluster=2), {}, 0)])[0]
    assert r.kind == "runtime_error"
    assert "__cluster_dims__(4, 1, 1) differ from the launch's cluster (2, 1, 1)" \
        in r.message


def test_a_cluster_that_does_not_divide_the_grid_is_bad_input():
    with pytest.raises(BadInput, match="does not divide grid"):
        KernelSpec("k", "", 6, 64, cluster=4)


def test_a_cluster_barrier_missed_by_one_cta_is_a_deadlock(cpu):
    src = cases.source("cluster_dsmem_nosync").replace(
        "  gs_cluster_arrive();\n  gs_cluster_wait();\n",
        "  if (rank == 0) {\n    gs_cluster_arrive();\n    gs_cluster_wait();\n"
        "  } else {\n"
        "    gs_u64* bar = reinterpret_cast<gs_u64*>(smem + 128);\n"
        "    if (t == 0) gs_mbar_init(bar, 1);\n    __syncthreads();\n"
        "    gs_mbar_wait_parity(bar, 0);\n  }\n")
    spec = KernelSpec("cluster_dsmem_nosync", src, 2, 32, 144,
                      (ptr("out", "int32", 64),), cluster=2)
    r = cpu.run([Job(spec, {}, 0)])[0]
    assert r.kind == "deadlock", r.message
    assert "cluster of 2 blocks" in r.message
    assert "cluster barrier (barrier.cluster.wait) waited by threads [0,1,2,3,...]" \
        " (32 threads)" in r.message


@pytest.mark.gpu
def test_the_cluster_kernel_gives_the_same_answer_on_the_gpu():
    """The same text on an sm_90 GPU (`pytest -m gpu tests/backends/test_clusters.py`):
    the harness's cluster semantics are the hardware's on this kernel."""
    from gpusem.compiler.backends.cuda import CudaBackend

    x = np.random.default_rng(5).integers(-10**6, 10**6, 128).astype(np.int32)
    backend = CudaBackend()
    try:
        (r,) = backend.run([Job(dsmem_spec(), {"in": x}, 0)])
    finally:
        backend.close()
    assert r.kind == "ok", r.message
    np.testing.assert_array_equal(r.outputs["out"], dsmem_expected(x))
