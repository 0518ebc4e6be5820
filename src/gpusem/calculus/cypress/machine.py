"""The machine model of seed 001, Fig. 2 (an image; reconstructed from l.168-174).

Processor levels from the host down to a thread (l.168: "the host that launches GPU
kernels down to the individual threads"; the warpgroup level of l.168 is the group of
128 threads that issues a Tensor Core operation, l.160). Memories and which levels see
them (l.172): global is visible to all processors, shared to a block and below, the
register file to a thread only. NONE (l.395) is no memory: a tensor mapped there is
never materialised at that level, so every level "sees" it.

Note: the capacities below (4 warps per warpgroup, 32 threads per warp, 227 KiB of
shared memory per block) are the H100's, as the paper's evaluation machine (l.711);
Fig. 2 itself is not in the text. proofs_notes/errata.md, "Cypress machine model".
"""

from __future__ import annotations

from enum import Enum


class Processor(Enum):
    """A processor level; `value` is the depth (HOST outermost)."""

    HOST = 0
    BLOCK = 1
    WARPGROUP = 2
    WARP = 3
    THREAD = 4


class Memory(Enum):
    GLOBAL = "GLOBAL"
    SHARED = "SHARED"
    REGISTER = "REGISTER"
    NONE = "NONE"


PROCESSORS = {p.name: p for p in Processor}
MEMORIES = {m.name: m for m in Memory}

# l.172: which processor levels can access each memory.
VISIBLE: dict[Memory, frozenset[Processor]] = {
    Memory.GLOBAL: frozenset(Processor),
    Memory.SHARED: frozenset({Processor.BLOCK, Processor.WARPGROUP, Processor.WARP,
                              Processor.THREAD}),
    Memory.REGISTER: frozenset({Processor.THREAD}),
    Memory.NONE: frozenset(Processor),
}

# How many units of the next level one unit holds (None: as many as launched).
CAPACITY: dict[Processor, int | None] = {
    Processor.HOST: None,        # blocks of a grid
    Processor.BLOCK: 8,          # 1024 threads / 128 per warpgroup
    Processor.WARPGROUP: 4,      # l.158: exactly four warps issue a Tensor Core op
    Processor.WARP: 32,          # l.156: 32 threads
    Processor.THREAD: 0,
}

SHARED_BYTES_PER_BLOCK = 227 * 1024  # H100 (l.711): the opt-in dynamic maximum

# Element types of `tensor[rank, dtype]` and their sizes in bytes (the shared-memory
# bound counts the declared type; the sequential reading computes in float32/int32).
DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i32": 4}
FLOAT_DTYPES = frozenset({"f16", "bf16", "f32"})


def below(p: Processor) -> Processor | None:
    """The next level down, or None under a thread."""
    return Processor(p.value + 1) if p is not Processor.THREAD else None
