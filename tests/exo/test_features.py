"""The per-feature classification of Exo-GPU's emitted CUDA (compiler/gpuir_exo/
features.py) on text shaped as Exo emits it (`.cuh` sections opened by
`struct exo_CudaDeviceArgs<i>_<proc>`), and the compile census's steered mix drawing
the features it is steered at (from the GPU IR: no Exo needed)."""

from __future__ import annotations

from collections import Counter

from gpusem.compiler.gpuir_exo.features import features_of, kernel_features
from gpusem.fuzz.exo.census_tally import round_programs
from gpusem.fuzz.exo.pipelines import MbarPipeline, Pipeline

RING2 = """\
    // bar: barrier @ CudaMbarrier, ring=2, slice_count=1
      "mbarrier.init.shared::cta.b64 [%0], 64;"
"""
RING1 = RING2.replace("ring=2", "ring=1")
CP_ASYNC = '"cp.async.ca.shared.global [%0], [%1], 4;"\n"cp.async.wait_group 2;"\n'
CP_ASYNC0 = CP_ASYNC.replace("wait_group 2", "wait_group 0")
TMA = '"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx"\n'
WGMMA = '"wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "\n'
CLUSTER = "  exo_clusterDim_attr.id = cudaLaunchAttributeClusterDimension;\n"


def test_each_feature_from_its_text():
    assert features_of(RING2) == {"mbarrier", "mbarrier-stages"}
    assert features_of(RING1) == {"mbarrier"}
    assert features_of(CP_ASYNC) == {"cp-async-stages"}
    assert features_of(CP_ASYNC0) == frozenset()
    assert "tma" in features_of(TMA) and "cluster" in features_of(TMA)
    assert features_of(WGMMA) == {"wgmma"}
    assert features_of(CLUSTER) == {"cluster"}
    assert features_of("int main() { return 0; }") == frozenset()


def test_features_per_kernel_section():
    cuh = ("struct exo_win_2f32 {\n};\n"
           f"struct exo_CudaDeviceArgs0_k0\n{{\n}};\n{RING2}"
           f"struct exo_CudaDeviceArgs0_k1\n{{\n}};\n{CP_ASYNC}"
           f"struct exo_CudaDeviceArgs1_k1\n{{\n}};\n{CLUSTER}")
    got = kernel_features({"cuh": cuh, "cu": WGMMA})
    assert got == {"k0": {"mbarrier", "mbarrier-stages"},
                   "k1": {"cp-async-stages", "cluster"}}


def test_steered_mix_draws_rings_clusters_and_cp_async_pipelines():
    kinds: Counter = Counter()
    for k in round_programs(0, 0, steer=True):
        if isinstance(k, MbarPipeline):
            kinds["cluster" if k.cluster > 1 else "ring"] += 1
        elif isinstance(k, Pipeline):
            kinds["cp-async"] += 1
        else:
            kinds["other"] += 1
    # 2, 2 and 3 in 14 of 100 (hypothesis draws unevenly; TMA and wgmma:
    # test_emit_tma.py, test_emit_wgmma.py)
    assert kinds["ring"] >= 7 and kinds["cluster"] >= 7 and kinds["cp-async"] >= 12
