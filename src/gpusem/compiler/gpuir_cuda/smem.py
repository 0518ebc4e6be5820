"""Pass `assign_smem`: shared allocations -> pointers into dynamic shared memory.

Every GShared gets a 16-byte aligned offset; the kernel's dynamic shared memory is the
sum (dynamic, not static `__shared__`, because a Hopper tile easily exceeds the 48 KiB
static limit). Offsets are not reused between sibling scopes: a task body allocates
once per CTA, so the total is what the program holds at its deepest point or less.
"""

from __future__ import annotations

from dataclasses import replace

from gpusem.compiler.gpuir_cuda import kir as K

ALIGN = 16
SIZES = {"float": 4, "int": 4, "gs_u64": 8}


def assign_smem(kernel: K.GKernel) -> K.GKernel:
    offset = 0

    def rewrite(s: K.GStmt) -> tuple[K.GStmt, ...]:
        nonlocal offset
        if not isinstance(s, K.GShared):
            return (s,)
        at = offset
        offset += -(-s.count * SIZES[s.ctype] // ALIGN) * ALIGN
        return (K.GPrim(f"{s.ctype}* const {s.name} = reinterpret_cast<{s.ctype}*>"
                        f"(gs_smem + {at});  // {s.count} x {s.ctype} in shared memory",
                        s.span),)

    body = K.map_body(kernel.body, rewrite)
    return replace(kernel, body=body, smem_bytes=offset)
