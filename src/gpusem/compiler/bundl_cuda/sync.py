"""Pass `place_sync`: where the barriers of partition / claim / lower go (Prism Sec. 5).

Naively every construct ends with its barrier (the `init; s; dec; wait` of the S-rules),
which is what `lower_data_perspectives` produced. Two rewrites, both semantics-
preserving, are applied here:

1. Always: a barrier with nothing after it before the end of the kernel is dropped (the
   end of a kernel orders everything), so grid-level partitions need no grid barrier.
2. With `sync_motion` (the default; `--no-sync-motion` turns it off): wait motion
   with the read/write classification of Prism's data-control-flow graph. A barrier
   ending a construct is pushed down, within its statement list, to just before the
   first statement that conflicts with what the construct accessed (reads what it
   wrote, or writes what it read or wrote; `accesses.py`): two read-only partitions in
   a row need no barrier between them, and neither does independent work. Consecutive
   barriers of the same perspective instance merge; a barrier pushed to the end of
   the kernel disappears by rule 1. A barrier never leaves its statement list (the
   body of a loop keeps its barrier: the loop's back-edge is a later use), so every
   thread of the instance meets the same barrier sequence.

3. With `sync_motion`, arrive motion: in a kernel, a moved barrier whose shape has no
   cheaper special case (not the whole block, not inside one warp) becomes a split
   barrier: the arrive stays where the construct ended, the wait goes where the
   barrier went, so a thread does independent work between them (Sec. 5).
"""

from __future__ import annotations

from dataclasses import replace

from gpusem.calculus.bundl.perspective import Level
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.accesses import Accesses, Roots, Scripts, accesses
from gpusem.compiler.bundl_cuda.faults import active
from gpusem.compiler.bundl_cuda.paths import note
from gpusem.compiler.bundl_cuda.traverse import bodies, map_bodies


def splittable(b: K.KBarrier, threads: int) -> bool:
    """Split barriers are for the shapes without a cheaper special case (Sec. 5: the
    whole block and single warps use __syncthreads / __syncwarp)."""
    n = b.persp.n
    return (b.persp.level == Level.THREAD and 1 < n < threads and 32 % n != 0
            and not b.site.startswith("init/dec/wait"))


def place_barrier(out: list, pending: K.KBarrier, origin: int, split: bool) -> None:
    """Put the pending barrier at the end of `out`; split it into arrive (where the
    construct ended) and wait (here) when other statements lie between (arrive
    motion)."""
    between = any(not isinstance(s, K.KComment) for s in out[origin:])
    if between:
        note("compile:place_sync:barrier moved")
    if not (split and between):
        out.append(pending)
        return
    note("compile:place_sync:split barrier")
    b = pending
    at = origin - 1 if active("arrive-above-last-use") and origin > 0 else origin
    out.insert(at, K.KArrive(b.persp, b.p, b.site, b.span))
    out.append(K.KWait(b.persp, b.p, b.site, b.span))


def _sink(stmts: tuple, roots: Roots, threads: int = 0, in_kernel: bool = False,
          memo: Scripts | None = None) -> tuple:
    """Wait motion within one statement list (barriers never leave their list).

    A pending barrier carries what the construct it ends accessed; it is placed just
    before the first later statement whose accesses conflict with that (a write to
    what it touched, or a read of what it wrote), or one of unknown accesses. A second
    barrier of the same instance merges into it; another instance's flushes it first.
    `memo`: the access walks recorded so far (each enclosing statement asks again).
    """
    memo = Scripts() if memo is None else memo
    out: list[K.KStmt] = []
    pending: K.KBarrier | None = None
    covered, origin = Accesses(), 0
    last = Accesses()  # the accesses of the statement just before a barrier

    def place(barrier: K.KBarrier) -> None:
        split = in_kernel and splittable(barrier, threads)
        place_barrier(out, barrier, origin, split)

    for s in stmts:
        if isinstance(s, K.KBarrier):
            if pending is not None and not _same_instance(pending, s):
                place(pending)
                pending, covered = None, Accesses()
            elif pending is not None:
                note("compile:place_sync:barriers merged")
            # A hand-written `init; dec; wait` orders everything before it: immovable.
            immovable = s.site.startswith("init/dec/wait") or s.site.endswith("(pinned)")
            ends = Accesses(unknown=True) if immovable else last
            pending, covered, origin = (pending or s), covered | ends, len(out)
            continue
        s = map_bodies(s, lambda b: _sink(b, roots, threads, in_kernel, memo))
        here = accesses(s, roots, memo)
        if active("wait-below-first-use") and isinstance(s, K.KBlock):
            here = Accesses()  # the seeded fault: nested blocks are not looked into
        if pending is not None and covered.conflicts(here):
            place(pending)
            pending, covered = None, Accesses()
        out.append(s)
        last = here
    if pending is not None:
        place(pending)
    return tuple(out)


def _same_instance(a: K.KBarrier, b: K.KBarrier) -> bool:
    return a.persp == b.persp and a.p == b.p


def drop_trailing(stmts: tuple, at_kernel_end: bool) -> tuple:
    """Rule 1: drop barriers followed by nothing up to the end of the kernel."""
    out = list(stmts)
    i = len(out) - 1
    while at_kernel_end and i >= 0:
        s = out[i]
        if isinstance(s, (K.KBarrier, K.KWait)):
            note("compile:place_sync:barrier dropped at kernel end")
            site = s.site
            del out[i]
            if isinstance(s, K.KWait):  # its arrive goes too
                out = [x for x in out if not (isinstance(x, K.KArrive) and x.site == site)]
                i = len(out)
            i -= 1
            continue
        if isinstance(s, K.KComment):
            i -= 1
            continue
        if isinstance(s, (K.KBlock, K.KIf)):
            out[i] = map_bodies(s, lambda b: drop_trailing(b, True))
        break
    return tuple(out)


def place_sync(prog: K.KProgram, sync_motion: bool = True) -> K.KProgram:
    def per_function(f: K.KFunction) -> K.KFunction:
        body = (_sink(f.body, Roots(), prog.threads, f.is_kernel) if sync_motion
                else f.body)
        return replace(f, body=drop_trailing(body, f.is_kernel))

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
