"""Seeded faults of the CKernel emitter, off unless `GPUSEM_FAULT=name[,name]`.

They measure whether the `ckernel` target finds and shrinks a miscompilation (issue
23 item 5, the shrinking test): each is a mistake a person lowering C could make.
"""

from __future__ import annotations

import os

FAULTS: dict[str, str] = {
    "divc-pow2-mask":
        "emit: signed `a % 2^k` lowered as `a & (2^k - 1)` (wrong for negative a)",
    "drop-sync":
        "emit: `sync` emits no __syncthreads() (neighbour reads race their writes)",
}


def active_faults() -> tuple[str, ...]:
    names = [n.strip() for n in os.environ.get("GPUSEM_FAULT", "").split(",")]
    return tuple(n for n in names if n in FAULTS)


def fault_on(name: str) -> bool:
    return name in active_faults()
