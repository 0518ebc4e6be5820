"""Seeded faults of the GPU IR compiler: deliberate miscompilations, off unless
`GPUSEM_FAULT=name[,name]` names them (issue 5 measures whether the seq = par oracle
finds them). Each is a mistake a person writing this compiler could make, planted at
the pass where it would live. Names start with `gpuir-`; other names in the variable
belong to the other compilers and are ignored here.
"""

from __future__ import annotations

import os

FAULTS: dict[str, str] = {
    "gpuir-fence-dropped":
        "sync: a Fence lowers to no barrier at all",
    "gpuir-cta-fence-as-syncwarp":
        "sync: a CTA-wide Fence lowers to __syncwarp() instead of __syncthreads()",
    "gpuir-mbar-wait-dropped":
        "sync: Await on an mbarrier does not wait (the parity still flips)",
    "gpuir-mbar-parity-stuck":
        "sync: the per-thread mbarrier parity is never flipped after a wait",
    "gpuir-cp-async-wait-dropped":
        "sync: Await on a cp.async commit group (wait_group) is not emitted",
    "gpuir-fma-contraction":
        "cexpr: f32 a * b + c is emitted as one fused multiply-add",
    "gpuir-thread-guard-dropped":
        "from_gpuir: a cuda_threads loop narrower than its collective runs on every "
        "thread of the collective",
}


def active(name: str) -> bool:
    """Whether the fault `name` is switched on in this process."""
    assert name in FAULTS, name
    return name in enabled()


def enabled() -> set[str]:
    raw = os.environ.get("GPUSEM_FAULT", "")
    names = {n.strip() for n in raw.split(",") if n.strip().startswith("gpuir-")}
    unknown = names - FAULTS.keys()
    if unknown:
        from gpusem.compiler.gpuir_cuda.errors import CompileError

        raise CompileError(f"unknown fault: {', '.join(sorted(unknown))} (known: "
                           f"{', '.join(FAULTS)})")
    return names
