"""lift(ρ, λ) for Fence, Arrive and Await (Exo-GPU Figure 22, Definition B.2), over the
indexes that let a lift visit only the records it can change.

lift applies λ pointwise to every record of ρ. Most records cannot be changed by a
given lift: W needs some executing thread to see the record (a block over a thread of
task ι, or over all of 𝔾), a non-transitive W needs the record's own timeline in the
pre set, an Await changes only records registered with its barrier cell, and a record
in no cell is unobservable. `Lifts` keeps those indexes:

  task_recs[ι][q]  records with a block (or a family member) in task ι, on timeline q
  all_recs         records with a visible block over all of 𝔾
  bar_recs[cell]   records with an observed arrive count for a barrier cell

Conventions: as in interpreter/amir/records.py (g -> `Threads`, τ_q* -> bit masks).
"""

from __future__ import annotations

from gpusem.interpreter.amir.records import (
    ALL,
    NQ,
    BarrierCell,
    Levels,
    Rec,
    Threads,
    VarKey,
    augment,
    below,
    passing,
    reach,
)
from gpusem.interpreter.amir.store import SetTable

_ALLQ = (1 << NQ) - 1


class Lifts:
    def __init__(self, sets: SetTable, strict: bool = False) -> None:
        self.sets = sets
        self.strict = strict                 # W without temporal witnesses (fixed)
        self.task_recs: dict[int, list[list[Rec]]] = {}
        self.all_recs: list[Rec] = []
        self.bar_recs: dict[BarrierCell, dict[int, Rec]] = {}

    # ------------------------------------------------------------------ the lifts

    def fence(self, t: bool, g: Threads, pre: int, levels: Levels) -> None:
        """Fence: λ(r) = A(r, g, full*, temp*) if W(t, g, pre*, r) else r."""
        task, gm = g
        lvl = 3 if self.strict else 1            # the level W asks of a witness
        for r in self.candidates(g, pre, t):
            if task != -1 and not reach(r, task, lvl, pre if t else 1 << r.q) & gm:
                continue                         # W fails: g has no witness in r
            mine = r.blocks.get(g)
            if mine is not None and below(levels, mine):
                continue                         # λ(r) = r whether or not W holds
            part = passing(t, g, pre, r, self.strict)
            if part:
                r = r if part == -1 else self.split(r, part)
                if augment(r, g, levels) and g[0] not in r.tasks:
                    self.register(r)

    def arrive(self, t: bool, g: Threads, pre: int,
               counts: dict[BarrierCell, int]) -> None:
        """Arrive: λ adds the arrive count a(z, n) to r.p(z, n) for every accessed
        barrier cell when W(t, g, pre*, r).

        Note: only min p(z, n) matters to Await (∃i ∈ p(z, n). i <= Max) and counts
        only grow, so an existing entry already holds the minimum."""
        cells = counts.keys()
        task, gm = g
        lvl = 3 if self.strict else 1            # the level W asks of a witness
        for r in self.candidates(g, pre, t):
            if cells <= r.p.keys():              # a set test, not a Python loop
                continue                         # λ(r) = r whether or not W holds
            if task != -1:
                # reach(r, ...) with its cache hit inlined: this test runs for every
                # record of the task on every thread's arrive
                ra, rp = r.reach_at, pre if t else 1 << r.q
                m = ra[4] if ra[0] == r.ver and ra[1] == task and ra[3] == rp \
                    and ra[2] == lvl else reach(r, task, lvl, rp)
                if not m & gm:
                    continue                     # W fails: g has no witness in r
            part = passing(t, g, pre, r, self.strict)
            if part:
                r = r if part == -1 else self.split(r, part)
                for cell, a in counts.items():
                    if cell not in r.p:
                        r.p[cell] = a
                        r.ver += 1
                        self.index_barrier(cell, r)

    def await_(self, cell: BarrierCell, top: int, g: Threads, levels: Levels) -> None:
        """Await: λ(r) = A(r, g, full*, temp*) if some i ∈ r.p(z, n) has i <= Max."""
        regs = self.bar_recs.get(cell)
        if not regs:
            return
        for rid in [rid for rid, r in regs.items() if r.live <= 0]:
            del regs[rid]
        for r in list(regs.values()):
            first = r.p.get(cell)
            if first is not None and first <= top and augment(r, g, levels) \
                    and g[0] not in r.tasks:
                self.register(r)

    def forget_barrier(self, key: VarKey) -> None:
        """A barrier's lifetime ended: its cells' registrations go."""
        for k in [k for k in self.bar_recs if k[0] == key]:
            del self.bar_recs[k]

    # --------------------------------------------------------------- the indexes

    def register(self, r: Rec) -> None:
        """Index r under every task one of its blocks (or a family member) is in, by
        its timeline; under `all_recs` if it has a visible block over all of 𝔾."""
        tasks = {ts[0] for ts, vis in r.vis.items() if ts[0] != -1 or vis}
        if r.own is not None:
            tasks.add(r.who[0])
        for task in tasks - r.tasks:
            r.tasks.add(task)
            if task == -1:
                self.all_recs.append(r)
            else:
                byq = self.task_recs.get(task)
                if byq is None:
                    byq = self.task_recs[task] = [[] for _ in range(NQ)]
                byq[r.q].append(r)

    def index_barrier(self, cell: BarrierCell, r: Rec) -> None:
        self.bar_recs.setdefault(cell, {})[r.id] = r

    def split(self, r: Rec, part: int) -> Rec:
        """Members `part` of family r leave it (a lift separated them), into every
        record set that holds r."""
        twin = r.split(part)
        for sid in twin.sids:
            self.sets.add_member(sid, twin)
        self.register(twin)
        for cell in twin.p:
            self.index_barrier(cell, twin)
        return twin

    def candidates(self, g: Threads, pre: int, t: bool) -> list[Rec]:
        """The live records a lift by threads g can change: those with a block (or a
        family member) that g overlaps, and for a non-transitive lift only those on a
        pre timeline (W fails for every other). Dead records leave the indexes."""
        qs = range(NQ) if t else [q for q in range(NQ) if pre >> q & 1]
        tasks = list(self.task_recs) if g[0] == -1 else [g[0]]
        out: list[Rec] = []
        for task in tasks:
            byq = self.task_recs.get(task)
            if byq is None:
                continue
            for q in qs:
                lst = byq[q]
                if lst:
                    lst[:] = [r for r in lst if r.live > 0]
                    out += lst
        self.all_recs[:] = [r for r in self.all_recs
                            if r.live > 0 and not _saturated(r)]
        out += [r for r in self.all_recs if t or pre >> r.q & 1]
        if g[0] == -1:                   # once each, in order of first appearance
            first: dict[int, Rec] = {}
            for r in out:
                first.setdefault(r.id, r)
            out = list(first.values())
        return out


def _saturated(r: Rec) -> bool:
    """A record fully visible to all of 𝔾 on every timeline: no lift can change it."""
    top = r.blocks.get(ALL)
    return top is not None and top[3] == _ALLQ
