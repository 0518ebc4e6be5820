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
        "soac: every reduction operator folds from the zero of its type (0, 0.0, "
        "false), not its identity (padding lanes of a block, empty arrays)",
    "fusion-illegal":
        "emit: fusion with VFUSE-CLUSTER as printed (errata F1: a producer may be "
        "scheduled after its consumer), trusted: no well-formedness check after it",
}


def active_faults() -> tuple[str, ...]:
    names = [n.strip() for n in os.environ.get("GPUSEM_FAULT", "").split(",")]
    return tuple(n for n in names if n in FAULTS)


def fault_on(name: str) -> bool:
    return name in active_faults()
