"""The two public Exo-GPU branches as emit/read dialects, and the name tables between
gpusem's GPU IR and Exo's Python front end.

GPU IR (shared/spec/gpuir-syntax.md) follows the paper's examples, which are Exo-GPU's
own surface syntax, so most constructs map one to one. What differs:

  - the Await count of an mbarrier: the paper (and pldi26) writes `~lag` for
    "await-indexed" waits, GPU IR the same integer (`-1` is `~0`); endgame requires
    N = 0 on a *ring-buffered* mbarrier (`barrier[k @ ring_buffer_by(d)]`);
  - names: the paper's `cuda_generic_and_async` is Exo's `cuda_generic_and_async_proxy`;
    endgame split `CudaCommitGroup` into `Sm80_CommitGroup`, `Sm90_TmaCommitGroup` and
    `Sm90_WgmmaCommitGroup` and dropped `cuda_async_proxy(_wgmma)`;
  - instructions: each side has its own library (table `INSTR_TO_EXO`).

Branch commits and source fingerprints that were tested are in `KNOWN_BUILDS`
(docs/exo.md lists them for users).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Dialect = Literal["pldi26", "endgame"]
DIALECTS: tuple[Dialect, ...] = ("pldi26", "endgame")


@dataclass(frozen=True)
class Build:
    branch: str
    commit: str
    date: str


# Fingerprint (compiler/gpuir_exo/worker.py `_fingerprint`: sha256 over the package's
# .py/.cpp/.hpp files) -> the github exo-lang/exo commit it was built from.
KNOWN_BUILDS: dict[str, Build] = {
    "c13b515d9b6ef82a": Build("akeley98/pldi26",
                              "56e066e194d73222644e52e51d140584d33bcdc9", "2025-11-22"),
    "19ab4a7c94b1306b": Build("akeley98/endgame",
                              "7f58588dce9ebff56287750eab14badb825df26f", "2026-07-02"),
}

# Sync timelines (Figure 16 names -> Exo's names), per dialect. A name missing from a
# dialect's table cannot be emitted for it.
_COMMON_SYNC_TLS = {
    "empty_sync_tl": None,  # not a user-facing name in Exo
    "cpu_in_order": "cpu_in_order",
    "cuda_stream_sync": "cuda_stream_sync",
    "cuda_in_order": "cuda_in_order",
    "cuda_temporal": "cuda_temporal",
    "Sm80_cp_async": "Sm80_cp_async",
    "Sm80_generic": "Sm80_generic",
    "tma_to_smem_async": "tma_to_smem_async",
    "tma_to_gmem_async": "tma_to_gmem_async",
    "wgmma_async_smem": "wgmma_async_smem",
    "wgmma_fence_1": "wgmma_fence_1",
    "wgmma_fence_2": "wgmma_fence_2",
    "wgmma_async": "wgmma_async",
    "cuda_generic_and_async": "cuda_generic_and_async_proxy",
    "cuda_generic_and_async_proxy": "cuda_generic_and_async_proxy",
}
SYNC_TLS: dict[Dialect, dict[str, str | None]] = {
    "pldi26": {**_COMMON_SYNC_TLS, "cuda_async_proxy": "cuda_async_proxy",
               "cuda_async_proxy_wgmma": "cuda_async_proxy_wgmma"},
    "endgame": dict(_COMMON_SYNC_TLS),
}
# Exo's name -> the Figure 16 name (reading).
SYNC_TL_FROM_EXO: dict[str, str] = {
    "cuda_generic_and_async_proxy": "cuda_generic_and_async"} | {
    v: k for k, v in SYNC_TLS["pldi26"].items()
    if v is not None and k != "cuda_generic_and_async_proxy"
    and v != "cuda_generic_and_async_proxy"}

# Sync timelines that need `from exo.platforms.SmXX import *`.
SM80_NAMES = frozenset({"Sm80_cp_async", "Sm80_generic", "Sm80_cp_async_f32"})
SM90_NAMES = frozenset({"tma_to_smem_async", "tma_to_gmem_async", "wgmma_async_smem",
                        "wgmma_fence_1", "wgmma_fence_2", "wgmma_async",
                        "cuda_generic_and_async_proxy", "cuda_async_proxy",
                        "cuda_async_proxy_wgmma"})


def commit_group_memory(dialect: Dialect, arrive_tl: str) -> str:
    """The barrier memory a commit group of `arrive_tl` has in Exo."""
    if dialect == "pldi26":
        return "CudaCommitGroup"
    return {"Sm80_cp_async": "Sm80_CommitGroup", "tma_to_gmem_async":
            "Sm90_TmaCommitGroup", "wgmma_async": "Sm90_WgmmaCommitGroup"}.get(
                arrive_tl, "Sm80_CommitGroup")


# Memories whose name is the same on both sides (Figure 12 / Exo's cuda_memory.py).
SAME_MEMORIES = frozenset({
    "DRAM", "CudaGmemLinear", "CudaSmemLinear", "CudaRmem", "CudaGridConstant",
    "CudaMbarrier", "CudaClusterSync"})

# GPU IR library instruction -> how Exo spells it. `None`: no Exo instruction with
# that behaviour on the tested branches (the emitter writes a loop of assignments for
# the synchronous copy; the others are unexpressible, listed in docs/exo.md).
INSTR_TO_EXO: dict[str, str | None] = {
    "cuda_copy_f32": None,
    "Sm80_cp_async_f32": "Sm80_cp_async_f32",
}
# The stream-ordered host copies (calculus/gpuir/instructions_ext.py) carry Exo's own
# names, argument orders (sizes, dst, src) and ranks (1 and 2 on both branches).
HOST_COPIES: frozenset[str] = frozenset(
    [f"cudaMemcpyAsync_{way}_{rank}{ty}" for way in ("htod", "dtoh") for rank in (1, 2)
     for ty in ("f32", "i32")]
    + [f"cudaMemsetAsync0_{rank}{ty}" for rank in (1, 2) for ty in ("f32", "i32")])
INSTR_TO_EXO.update({name: name for name in HOST_COPIES})
