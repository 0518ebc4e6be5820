"""Visibility records of the AMIR machine: Definition 5.3 and Appendix B of Exo-GPU.

Encodes the record constructor R (Definition B.1), the witness W and augment A
(Definition B.3), and the pointwise application of λ that lift (Definition B.2) is.

Conventions (paper -> Python):
  g ∈ 𝔾 = 𝕀 × 𝕋 (global thread)     -> a thread set `Threads = (task, mask)`: the
                                       natural thread indices of task ι as the bits of
                                       `mask`; `ALL = (-1, -1)` is 𝔾 itself
  r = (τ_q, ∫, p) ∈ ℝ                -> `Rec` (q, blocks, p) + provenance
  ∫ : 𝔾 -> QualTL -> VL             -> `Rec.blocks`: {Threads: levels}, read as
                                       ∫(g, q) = max over blocks containing g of levels[q]
  p : 𝔹 -> ℤ^n -> P(ℕ)              -> `Rec.p`: {(barrier key, cell): set of counts}
  τ_q* (a set of timelines)          -> an int bit mask over QualTL.index

Note: `Rec` objects are mutated in place by lift. This is exact, not an approximation:
λ depends on the record alone, so every cell holding the same record gets the same
λ(r); sharing one object among all the cells of a window is what lets the machine
record whole windows in O(1) records (see interpreter/amir_machine.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count

from gpusem.calculus.gpuir.timelines import VL, QualTL
from gpusem.calculus.span import NO_SPAN, Span

Threads = tuple[int, int]
ALL: Threads = (-1, -1)
NQ = len(QualTL)
_FULL, _TEMP = int(VL.FULLY_ORDERED), int(VL.TEMPORALLY_ORDERED)
_UNORD, _ATOM = int(VL.UNORDERED), int(VL.ATOMIC_ONLY)


def qmask(quals) -> int:
    """A set of timelines as a bit mask."""
    m = 0
    for q in quals:
        m |= 1 << q.index
    return m


def overlaps(a: Threads, b: Threads) -> bool:
    """Do two thread sets share a thread (𝔾 overlaps every non-empty set)."""
    if a[0] == -1 or b[0] == -1:
        return a[1] != 0 and b[1] != 0
    return a[0] == b[0] and (a[1] & b[1]) != 0


def thread_list(ts: Threads, limit: int = 8) -> list[tuple[int, int]] | str:
    """(task, thread) pairs of a thread set, for reports (`"all"` for 𝔾)."""
    task, mask = ts
    if task == -1:
        return "all"
    out, t = [], 0
    while mask and len(out) < limit:
        if mask & 1:
            out.append((task, t))
        mask >>= 1
        t += 1
    return out


_ids = count(1)


@dataclass(eq=False, slots=True)
class Rec:
    """A visibility record (τ_q, ∫, p) with the provenance of the access that made it."""

    q: int                                   # QualTL.index of the access
    blocks: dict[Threads, list[int]]         # ∫ as blocks of levels (index: QualTL)
    vis: dict[Threads, int]                  # per block: timelines with level >= unordered
    p: dict[tuple, set[int]]                 # observed arrive counts per barrier cell
    kind: str                                # "read" | "mutate"
    who: Threads                             # the accessing threads
    origin: Span = NO_SPAN                   # GPU IR line of the access
    id: int = field(default_factory=lambda: next(_ids))
    tasks: set[int] = field(default_factory=set)  # task indexes it is registered in
    live: int = 0                            # live record sets (cells) holding it

    def level(self, g: Threads, q: int) -> int:
        """∫(g, q) for one thread g = (task, single-bit mask) or 𝔾."""
        best = 0
        for ts, lv in self.blocks.items():
            if lv[q] > best and (ts[0] == -1 or (ts[0] == g[0] and ts[1] & g[1])):
                best = lv[q]
        return best

    def cover(self, task: int, q: int, vl: int) -> int:
        """Threads of `task` with ∫(g, q) >= vl, as a mask (-1: every thread)."""
        m = 0
        for ts, lv in self.blocks.items():
            if lv[q] >= vl:
                if ts[0] == -1:
                    return -1
                if ts[0] == task:
                    m |= ts[1]
        return m

    def join(self, ts: Threads, levels: list[int]) -> bool:
        """∫ := ∫ ∨ (block ts with `levels`); True if anything rose."""
        top = self.blocks.get(ALL)
        if top is not None and all(a >= b for a, b in zip(top, levels)):
            return False                     # the block over all of 𝔾 dominates
        old = self.blocks.get(ts)
        if old is None:
            self.blocks[ts] = list(levels)
        else:
            new = [a if a >= b else b for a, b in zip(old, levels)]
            if new == old:
                return False
            self.blocks[ts] = new
        self.vis[ts] = sum(1 << i for i, v in enumerate(self.blocks[ts]) if v >= _UNORD)
        return True


def make_levels(full: int, temp: int) -> list[int]:
    """∫_aug's levels (Definition B.3 (ii)): fully on τ_q^full*, temporally on
    τ_q^temp* \\ τ_q^full*, invisible elsewhere."""
    return [_FULL if full >> i & 1 else _TEMP if temp >> i & 1 else 0
            for i in range(NQ)]


def new_records(vl: int, t: bool, q: int, atomic: int, p: dict, who: Threads,
                kind: str, origin: Span) -> list[Rec]:
    """R(τ_v, t, τ_q, τ_q*, E#, ρ, G) (Definition B.1).

    S_H(g', q') = max(atomic_only if q' ∈ τ_q*, τ_v if g' ∈ H and q' = τ_q): the atomic
    part holds for every thread of 𝔾, so it is one block over ALL.

    Note: for a CPU-scoped statement G = 𝔾 is infinite, so t = false (one record per
    thread) cannot be built; the CPU is a single agent and we make one record
    (errata "CPU-scoped records").
    """
    task, mask = who
    if t or task == -1:
        hs = [who]
    else:
        hs, bit = [], 1
        while bit <= mask:
            if mask & bit:
                hs.append((task, bit))
            bit <<= 1
    out = []
    for h in hs:
        blocks: dict[Threads, list[int]] = {}
        if atomic:
            blocks[ALL] = [_ATOM if atomic >> i & 1 else 0 for i in range(NQ)]
        own = list(blocks.get(h, [0] * NQ))
        own[q] = max(own[q], vl)
        blocks[h] = own
        rec = Rec(q, blocks, {}, {k: set(v) for k, v in p.items()}, kind, h, origin)
        for ts, lv in blocks.items():
            rec.vis[ts] = sum(1 << i for i, v in enumerate(lv) if v >= _UNORD)
        out.append(rec)
    return out


def witness(t: bool, exec_: Threads, pre: int, r: Rec) -> bool:
    """W(t, g^exec*, τ_q^pre*, r) (Definition B.3 (i)).

    t (transitive): some executing thread sees r at >= unordered on some pre timeline;
    otherwise r's own timeline must be in pre and some executing thread sees r on it.
    """
    if not t:
        if not (pre >> r.q) & 1:
            return False
        pre = 1 << r.q
    for ts, v in r.vis.items():
        if v & pre and overlaps(ts, exec_):
            return True
    return False


def augment(r: Rec, exec_: Threads, levels: list[int]) -> bool:
    """A(r, g^exec*, τ_q^full*, τ_q^temp*) = (τ_q, ∫ ∨ ∫_aug, p) (Definition B.3 (ii))."""
    return r.join(exec_, levels)
