"""Seeded faults of the lambda-cu compiler, off unless `GPUSEM_FAULT=name[,name]`.

They measure whether the `lambdacu` target finds and shrinks a miscompilation (issue
29 item 5): each is a mistake a person lowering lambda-cu after Sec 10 could make.
"""

from __future__ import annotations

import os

FAULTS: dict[str, str] = {
    "scan-exclusive":
        "soac: SCAN emitted as an exclusive scan (VCODE's, errata L10), not 6.2's "
        "inclusive one",
    "filter-off-by-one":
        "soac: FILTER/PARTITION scatter kept element i to u_i, not u_i - 1 (the "
        "inclusive count read as an exclusive one)",
    "reduce-identity":
        "soac: imax/fmax fold from identity 0, not INT_MIN / -inf (padding lanes and "
        "empty arrays)",
    "fusion-illegal":
        "soac: two MAPs of one size fused into one __global__ with no barrier between "
        "them, even when the consumer reads the producer's output at another index",
}


def active_faults() -> tuple[str, ...]:
    names = [n.strip() for n in os.environ.get("GPUSEM_FAULT", "").split(",")]
    return tuple(n for n in names if n in FAULTS)


def fault_on(name: str) -> bool:
    return name in active_faults()
