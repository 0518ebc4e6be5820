"""Seeded faults of our Cypress compiler: deliberate mistakes, off unless
`GPUSEM_FAULT=name[,name]` (as compiler/bundl_cuda/faults.py). Each is a mistake a
person writing the pass could make; the event machine must find each one (issue 30
item 6: a dropped `[:]`, a missing backward write-after-read edge, an over-eager
spill elimination)."""

from __future__ import annotations

import os

FAULTS: dict[str, str] = {
    "cypress-drop-broadcast":
        "vectorize: a use `ev[:]` of a flattened loop's events waits on processor 0's "
        "event only (a dropped [:])",
    "cypress-eager-spill":
        "copyelim: spill elimination elides the copy-out's synchronisation with the "
        "copy (its users wait on nothing instead of on the spilled tensor's users)",
    "cypress-alias-no-war":
        "allocate: tensors aliased onto one buffer get no write-after-read edges",
    "cypress-no-carried-war":
        "allocate: a loop's next iteration does not wait for the previous one's "
        "readers of a reused buffer (the missing backward WAR edge)",
    "cypress-ws-no-backward-war":
        "warpspec: a pipelined buffer's writer in iteration k does not wait for its "
        "readers of iteration k - P (Fig. 12's dashed backward edges dropped)",
    "cypress-ws-early-release":
        "warpspec: a consumer releases a pipelined buffer when it starts, not when it "
        "is done (the backward edge waits on the reader's preconditions)",
    "cypress-lower-no-full-wait":
        "to_gpuir: the compute warps do not wait for the stage the DMA warp filled "
        "(the dropped Await on full[k % P]; without a DMA warp, the Fence after the "
        "copies)",
    "cypress-lower-stage":
        "to_gpuir: the compute reads pipeline stage (k + 1) % P instead of k % P",
}


def active(name: str) -> bool:
    assert name in FAULTS, name
    return name in os.environ.get("GPUSEM_FAULT", "").split(",")
