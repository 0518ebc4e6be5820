"""Pass `place_sync_prism`: Prism's own synchronisation scheme (seed 004, Sec. 5, l.612-623).

`--sync prism` (the third mode beside `naive`, a barrier at every construct's end, and
`motion`, `sync.py`'s conflict-driven wait motion). The paper builds a data-control-flow
graph whose nodes are partitions, with program-order edges from a parent to its child
and back edges through loops; each node is a *read* or a *write* (l.614: "whether the
partitioned variable ever appears as an lvalue"), and a synchronisation point goes
before the current node when

  rule 1 (l.616): its parent is a write, so it observes the most recent data; or
  rule 2 (l.617): it is itself a write, so all preceding reads have completed.

Unlike `motion`, the scheme never asks *which* memory two nodes touch: a write on
either side of an edge is enough. Our readings of what the text leaves open are in
`proofs_notes/errata.md` ("Prism: Sec 5 synchronisation scheme"): every statement that
touches shared or global memory is a node (not only partitions), a parent is the join
of the nodes since the last barrier, a loop body's last node is the parent of its first
(the back edge), and a read-only tail of a loop body hands its barrier to the code
after the loop.

Wait motion (l.623) is the placement itself: the barrier of a construct stays pending
past statements that touch no memory and goes just before the node that needs it.
Arrive motion (l.619, l.623): where a pending barrier has moved and its shape has no
cheaper special case it becomes a split barrier, arrive where the construct ended and
wait where the barrier went (`sync.place_barrier`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.accesses import Accesses, Roots, accesses
from gpusem.compiler.bundl_cuda.faults import active
from gpusem.compiler.bundl_cuda.paths import note
from gpusem.compiler.bundl_cuda.sync import drop_trailing, place_barrier, splittable
from gpusem.compiler.bundl_cuda.traverse import map_bodies


def is_write(acc: Accesses) -> bool:
    """A node is a write when it may store to shared or global memory (l.614); one of
    unknown accesses (a call, a primitive, a nested barrier) counts as a write."""
    return bool(acc.writes) or acc.unknown


def rule_1(parent_write: bool) -> bool:
    """Rule 1 (Sec. 5, l.616): the parent partition is a write."""
    return parent_write and not active("prism-drop-rule-1")


def rule_2(current_write: bool) -> bool:
    """Rule 2 (Sec. 5, l.617): the current partition is a write."""
    return current_write and not active("prism-drop-rule-2")


@dataclass
class _List:
    """The state of one statement list while it is placed."""

    threads: int
    in_kernel: bool
    out: list
    pending: K.KBarrier | None = None
    origin: int = 0
    parent_write: bool = False  # some node since the last barrier is a write
    last: Accesses | None = None  # the accesses of the statement just before

    def flush(self) -> None:
        if self.pending is not None:
            split = self.in_kernel and splittable(self.pending, self.threads)
            place_barrier(self.out, self.pending, self.origin, split)
        self.pending, self.parent_write = None, False

    def receive(self, b: K.KBarrier, parent_write: bool) -> None:
        """A construct's barrier arrives: it becomes (or merges into) the pending one."""
        if self.pending is not None and not _same(self.pending, b):
            self.flush()
        elif self.pending is not None:
            note("compile:place_sync:barriers merged")
        if self.pending is None:
            self.pending, self.origin = b, len(self.out)
        self.parent_write = self.parent_write or parent_write

    def node(self, s: K.KStmt, acc: Accesses) -> None:
        """The edge parent -> s: the two rules decide whether the pending barrier goes
        before s (wait motion stops here) or stays pending past it."""
        write = is_write(acc)
        if self.pending is not None:
            if rule_1(self.parent_write):
                note("compile:place_sync_prism:rule 1")
                self.flush()
            elif rule_2(write):
                note("compile:place_sync_prism:rule 2")
                self.flush()
            else:
                note("compile:place_sync_prism:read after read")
        self.out.append(s)
        self.parent_write = self.parent_write or write


def _same(a: K.KBarrier, b: K.KBarrier) -> bool:
    return a.persp == b.persp and a.p == b.p


def _head_writes(body: tuple, roots: Roots) -> bool:
    """Whether a node before the body's first barrier writes: the children of the back
    edge from the body's end."""
    scratch = Roots()
    scratch.of = dict(roots.of)
    for s in body:
        if isinstance(s, (K.KBarrier, K.KWait)):
            return False
        if is_write(accesses(s, scratch)):
            return True
    return False


def _prism(stmts: tuple, roots: Roots, threads: int, in_kernel: bool,
           loop: bool = False) -> tuple[tuple, K.KBarrier | None, bool]:
    """Place the barriers of one statement list. For a loop body (`loop`), a barrier
    still pending at the end whose back edge to the body's head needs none of the two
    rules is returned instead of placed (with whether its parent is a write): the code
    after the loop receives it."""
    st = _List(threads, in_kernel, [])
    for s in stmts:
        if isinstance(s, K.KBarrier):
            immovable = s.site.startswith("init/dec/wait") or s.site.endswith("(pinned)")
            if immovable:  # a hand-written init; dec; wait orders everything here
                st.flush()
                st.out.append(s)
                continue
            st.receive(s, st.last is not None and is_write(st.last))
            continue
        left, tail_write, synced = None, False, False
        if isinstance(s, K.KWhile):
            body, left, tail_write = _prism(s.body, roots, threads, in_kernel, True)
            synced = any(isinstance(x, (K.KBarrier, K.KWait)) for x in body)
            s = replace(s, body=body)
        else:
            s = map_bodies(s, lambda b: _prism(b, roots, threads, in_kernel)[0])
        acc = accesses(s, roots)
        st.last = acc
        if acc.empty:
            st.out.append(s)  # not a node: the pending barrier moves past it
            continue
        st.node(s, acc)
        if synced:  # the nodes before the loop are ordered by the body's barriers
            st.parent_write = tail_write or left is None and is_write(acc)
        if left is not None:
            note("compile:place_sync_prism:back edge read after read")
            st.receive(left, tail_write)
    if st.pending is None:
        return tuple(st.out), None, False
    if loop and not rule_1(st.parent_write) and not rule_2(
            _head_writes(tuple(st.out), roots)):
        pending, write = st.pending, st.parent_write
        st.pending = None
        return tuple(st.out), pending, write
    if loop:
        note("compile:place_sync_prism:back edge")
    st.flush()
    return tuple(st.out), None, False


def place_sync_prism(prog: K.KProgram) -> K.KProgram:
    def per_function(f: K.KFunction) -> K.KFunction:
        body, _, _ = _prism(f.body, Roots(), prog.threads, f.is_kernel)
        return replace(f, body=drop_trailing(body, f.is_kernel))

    return replace(prog, functions=tuple(per_function(f) for f in prog.functions))
