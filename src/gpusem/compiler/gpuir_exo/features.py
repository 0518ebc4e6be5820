"""Which of Exo-GPU's async lowerings a kernel's emitted CUDA uses (issue 26, item 2): the
code differential says little about Exo's async code unless it counts, per feature,
the kernels that reached it. Read from the text Exo emits (its `.cuh` has one section
per proc: `struct exo_CudaDeviceArgs<i>_<proc>` opens it), never from the GPU IR, so a
feature counted is a feature compiled.

  tma               cp.async.bulk(.tensor) loads/stores or cp.reduce.async.bulk (TMA),
                    inline or as a call of pldi26's exo_Sm90_tma_to_smem/gmem helpers
                    (their PTX is in the shared utility section, not the proc's)
  wgmma             wgmma.mma_async, inline or as a call of pldi26's
                    exo_Sm90_mma_async_* helpers
  mbarrier          an mbarrier initialised (mbarrier.init)
  mbarrier-stages   an mbarrier ring of two or more slots (Exo's `ring=N` comment,
                    N >= 2): a pipeline of several stages
  cp-async-stages   cp.async with `cp.async.wait_group N`, N >= 1: several commit
                    groups in flight (the Sm80 pipeline)
  cluster           a launch with a cluster dimension (cudaLaunchAttributeCluster
                    Dimension) or a cluster-scope operation (barrier.cluster,
                    shared::cluster)
"""

from __future__ import annotations

import re
from collections.abc import Mapping

FEATURES = ("tma", "wgmma", "mbarrier", "mbarrier-stages", "cp-async-stages",
            "cluster")

_SECTION = re.compile(r"^struct exo_CudaDeviceArgs\d+_(\w+)\s*$", re.MULTILINE)
_RING = re.compile(r"@ CudaMbarrier, ring=(\d+)")
_WAIT_GROUP = re.compile(r"cp\.async\.wait_group (\d+)")


def features_of(text: str) -> frozenset[str]:
    """The features one kernel's CUDA text uses."""
    found = set()
    if re.search(r"cp\.async\.bulk|cp\.reduce\.async\.bulk|"
                 r"exo_CudaUtil::exo_Sm90_tma_to_(smem|gmem)", text):
        found.add("tma")
    if "wgmma.mma_async" in text or "exo_CudaUtil::exo_Sm90_mma_async_" in text:
        found.add("wgmma")
    if "mbarrier.init" in text:
        found.add("mbarrier")
    if any(int(n) >= 2 for n in _RING.findall(text)):
        found.add("mbarrier-stages")
    if any(int(n) >= 1 for n in _WAIT_GROUP.findall(text)):
        found.add("cp-async-stages")
    if re.search(r"cudaLaunchAttributeClusterDimension|barrier\.cluster|"
                 r"shared::cluster", text):
        found.add("cluster")
    return frozenset(found)


def kernel_features(code: Mapping[str, str]) -> dict[str, frozenset[str]]:
    """Per proc of one Exo compile (`code`: extension -> text), the features its
    sections of the `.cuh` use. A proc with several device functions has one
    section per function; they are merged."""
    cuh = code.get("cuh", "")
    marks = list(_SECTION.finditer(cuh))
    out: dict[str, set[str]] = {}
    for m, nxt in zip(marks, [*marks[1:], None], strict=True):
        end = nxt.start() if nxt is not None else len(cuh)
        out.setdefault(m[1], set()).update(features_of(cuh[m.start():end]))
    return {k: frozenset(v) for k, v in out.items()}
