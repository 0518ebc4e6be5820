"""Pass `place_sync`: where the barriers of partition / claim / lower go (Prism Sec. 5).

Naively every construct ends with its barrier (the `init; s; dec; wait` of the S-rules),
which is what `lower_data_perspectives` produced. Two rewrites, both semantics-
preserving, are applied here:

1. Always: a barrier with nothing after it before the end of the kernel is dropped (the
   end of a kernel orders everything), so grid-level partitions need no grid barrier.
2. With `sync_motion` (the default; `--no-sync-motion` turns it off): wait motion. A
   barrier is pushed down past statements that touch no shared or global memory (pure
   local computation cannot observe or disturb other threads), to just before the
   first statement that may; consecutive barriers of the same perspective instance
   merge into one; a barrier pushed to the end of the kernel disappears by rule 1.
   Barriers never move across a control-flow boundary (if / while / block end), which
   keeps every thread of the instance reaching the same barrier sequence.

The data-control-flow-graph classification (read vs write partitions) refines this
further in the paper; see errata.md ("sync placement") for what is and is not done.
"""

from __future__ import annotations

from dataclasses import replace

from . import kir as K
from .faults import active
from .traverse import bodies, exprs_of, map_bodies


def _touches_memory(s: K.KStmt, local_arrays: frozenset[str]) -> bool:
    """Conservatively: may `s` read or write memory another thread can see?"""
    if isinstance(s, K.KBlock) and active("wait-below-first-use"):
        return False  # the seeded fault: nested blocks are not looked into
    match s:
        case K.KComment() | K.KDecl() | K.KAssign() | K.KLocalArray():
            return any(_loads_shared(e, local_arrays) for e in exprs_of(s))
        case K.KStore(pointer=K.KVar(name)) if name in local_arrays:
            return any(_loads_shared(e, local_arrays) for e in exprs_of(s))
    return True


def _loads_shared(e: K.KExpr, local_arrays: frozenset[str]) -> bool:
    match e:
        case K.KLoad(pointer=K.KVar(name)):
            return name not in local_arrays
        case K.KLoad():
            return True
    return False


def _same_instance(a: K.KBarrier, b: K.KBarrier) -> bool:
    return a.persp == b.persp and a.p == b.p


def _sink(stmts: tuple, local_arrays: frozenset[str]) -> tuple:
    """Wait motion within one statement list (no crossing of control flow)."""
    out: list[K.KStmt] = []
    pending: K.KBarrier | None = None
    for s in stmts:
        if isinstance(s, K.KBarrier):
            if pending is not None and not _same_instance(pending, s):
                out.append(pending)
            pending = s if pending is None or not _same_instance(pending, s) else pending
            continue
        if isinstance(s, K.KLocalArray):
            local_arrays = local_arrays | {s.name}
        if pending is not None and _touches_memory(s, local_arrays):
            out.append(pending)
            pending = None
        out.append(map_bodies(s, lambda b: _sink(b, local_arrays)))
    if pending is not None:
        out.append(pending)
    return tuple(out)


def _drop_trailing(stmts: tuple, at_kernel_end: bool) -> tuple:
    """Rule 1: drop barriers followed by nothing up to the end of the kernel."""
    out = list(stmts)
    i = len(out) - 1
    while at_kernel_end and i >= 0:
        s = out[i]
        if isinstance(s, K.KBarrier):
            del out[i]
            i -= 1
            continue
        if isinstance(s, K.KComment):
            i -= 1
            continue
        if isinstance(s, (K.KBlock, K.KIf)):
            out[i] = map_bodies(s, lambda b: _drop_trailing(b, True))
        break
    return tuple(out)


def place_sync(prog: K.KProgram, sync_motion: bool = True) -> K.KProgram:
    def per_function(f: K.KFunction) -> K.KFunction:
        body = _sink(f.body, frozenset()) if sync_motion else f.body
        return replace(f, body=_drop_trailing(body, f.is_kernel))

    return replace(prog, functions=tuple(per_function(f) for f in prog.functions))


def barriers(stmts: tuple) -> list[K.KBarrier]:
    found: list[K.KBarrier] = []

    def visit(body):
        for s in body:
            if isinstance(s, K.KBarrier):
                found.append(s)
            for b in bodies(s):
                visit(b)

    visit(stmts)
    return found
