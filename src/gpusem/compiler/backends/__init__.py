"""gpusem.compiler.backends: run CUDA C++ on the CPU SIMT harness or on a real GPU.

Contract for code generators (stable):
- emit one `.cu` text per program that starts with `#include "gpusem_rt.cuh"` and
  defines `extern "C" __global__ void <name>(...)`; use the `gs_*` helpers of
  `gpusem_rt.cuh` for exact arithmetic (gs_add_i32, gs_div_i32, gs_fadd, ...) and for
  synchronisation beyond `__syncthreads`/`__syncwarp` (gs_bar_sync, gs_mbar_*,
  gs_cp_async*); PTX with no CPU meaning goes through gs_wgmma_* / gs_tma_* or
  `GS_PTX_ONLY("what", stmt)`; avoid `#define` (prefer constexpr) and raw `asm`.
- describe the launch with `KernelSpec(name, source, grid, block, dynamic_smem,
  params=(ptr("out", "float32", n), scalar("n", "int32"), ...))`, then
  `get_backend("cpu" | "cuda").run([Job(spec, {"out": array, "n": 5}, seed)])`
  -> `[Result(kind, outputs, message, elapsed)]` with kind in
  ok | build_error | runtime_error | deadlock | timeout | unsupported | crash.
- `nvcc.compile_check([source, ...]) -> [None | error text]` (nvcc -c, sm_90a).
"""

from gpusem.compiler.backends.kernel import (
    RESULT_KINDS,
    Job,
    KernelSpec,
    Param,
    Result,
    ptr,
    scalar,
)
from gpusem.compiler.backends.registry import get_backend

__all__ = [
    "RESULT_KINDS",
    "Job",
    "KernelSpec",
    "Param",
    "Result",
    "get_backend",
    "ptr",
    "scalar",
]
