"""Visibility records of the AMIR machine: Definition 5.3 and Appendix B of Exo-GPU.

Encodes the record constructor R (Definition B.1), the witness W and augment A
(Definition B.3), and the pointwise application of λ that lift (Definition B.2) is.

Conventions (paper -> Python):
  g ∈ 𝔾 = 𝕀 × 𝕋 (global thread)     -> a thread set `Threads = (task, mask)`: the
                                       natural thread indices of task ι as the bits of
                                       `mask`; `ALL = (-1, -1)` is 𝔾 itself
  r = (τ_q, ∫, p) ∈ ℝ                -> `Rec` (q, blocks [+ own], p) + provenance
  ∫ : 𝔾 -> QualTL -> VL             -> `Rec.blocks`: {Threads: Levels}, read as
                                       ∫(g, q) = max over blocks containing g
  a map QualTL -> VL ("levels")      -> `Levels = (m1, m2, m3, m4)`: mi is the mask of
                                       timelines at level >= i (1 atomic_only ..
                                       4 fully_ordered); the join ∨ is a bitwise or
  p : 𝔹 -> ℤ^n -> P(ℕ)              -> `Rec.p`: {(barrier key, cell): min count}; only
                                       the least observed count matters (Await asks
                                       ∃i ∈ p(z, n). i <= Max), so only it is kept
  τ_q* (a set of timelines)          -> an int bit mask over QualTL.index

Record families. R with t = false makes one record per thread g of G, each with
S_{g}. They differ only in that diagonal block, and every later operation treats them
alike unless it separates the threads of G, so a `Rec` with `own is not None` stands
for the whole family {r_g | g ∈ who}: member g has ∫_g = blocks ∨ {g: own}. When a lift
passes some members and not others, the machine splits the family (`split`).

Note: `Rec` objects are mutated in place by lift. This is exact, not an approximation:
λ depends on the record alone, so every cell holding the same record gets the same
λ(r); sharing one object among all the cells of a window is what lets the machine
record whole windows in O(1) records (see interpreter/amir/machine.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import count

from gpusem.calculus.gpuir.timelines import VL, QualTL
from gpusem.calculus.span import NO_SPAN, Span

Threads = tuple[int, int]
ALL: Threads = (-1, -1)
VarKey = tuple[str, int]                 # a variable's lifetime: (name, Alloc count)
BarrierCell = tuple[VarKey, tuple[int, ...]]  # a barrier cell (z, n)
NQ = len(QualTL)
_ATOM = int(VL.ATOMIC_ONLY)


def qmask(quals: Iterable[QualTL]) -> int:
    """A set of timelines as a bit mask."""
    m = 0
    for q in quals:
        m |= 1 << q.index
    return m


Levels = tuple[int, int, int, int]
NONE: Levels = (0, 0, 0, 0)


def levels_at(qm: int, vl: int) -> Levels:
    """Level vl on the timelines of qm, invisible elsewhere."""
    return tuple(qm if vl > i else 0 for i in range(4))  # type: ignore[return-value]


def level_of(lv: Levels, q: int) -> int:
    """The VL of timeline q in `lv`."""
    return sum(m >> q & 1 for m in lv)


def ge(lv: Levels, vl: int) -> int:
    """The timelines on which `lv` is at least vl."""
    return lv[vl - 1] if vl > 0 else -1


def join_levels(a: Levels, b: Levels) -> Levels:
    return (a[0] | b[0], a[1] | b[1], a[2] | b[2], a[3] | b[3])


def below(b: Levels, a: Levels) -> bool:
    """b <= a pointwise (joining b into a changes nothing)."""
    return not (b[0] & ~a[0] or b[1] & ~a[1] or b[2] & ~a[2] or b[3] & ~a[3])


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
    out: list[tuple[int, int]] = []
    t = 0
    while mask and len(out) < limit:
        if mask & 1:
            out.append((task, t))
        mask >>= 1
        t += 1
    return out


_ids = count(1)


@dataclass(eq=False, slots=True)
class Rec:
    """A visibility record (τ_q, ∫, p), or a family of them, with the provenance of the
    access that made it."""

    q: int                                   # QualTL.index of the access
    blocks: dict[Threads, Levels]            # ∫ as blocks of levels
    own: Levels | None                       # a family's diagonal block, else None
    p: dict[BarrierCell, int]                # min observed arrive count, per cell
    kind: str                                # "read" | "mutate"
    who: Threads                             # the accessing threads (family members)
    stmt: int = 0                            # the Record* statement that made it
    origin: Span = NO_SPAN                   # GPU IR line of the access
    id: int = field(default_factory=lambda: next(_ids))
    vis: dict[Threads, int] = field(default_factory=dict)
    tasks: set[int] = field(default_factory=set)  # task indexes it is registered in
    live: int = 0                            # live record sets (cells) holding it
    sids: list[int] = field(default_factory=list)  # record sets that contain it
    # bumped by every in-place change of q, blocks, own, p or who (join, split, the
    # Arrive lift, the iteration memo): symbolic_state.Fingerprinter's reuse test
    ver: int = 0
    # `reach`'s cache: (ver, task, i, pre, mask) of the last question asked
    reach_at: tuple[int, int, int, int, int] = (-1, 0, 0, 0, 0)

    def __post_init__(self) -> None:
        for ts, lv in self.blocks.items():
            self.vis[ts] = lv[1]

    def cover(self, task: int, q: int, vl: int) -> int:
        """Threads of `task` with ∫(g, q) >= vl by the shared blocks (-1: every one)."""
        if vl <= 0:
            return -1
        m, i = 0, vl - 1
        for ts, lv in self.blocks.items():
            if lv[i] >> q & 1:
                if ts[0] == -1:
                    return -1
                if ts[0] == task:
                    m |= ts[1]
        return m

    def join(self, ts: Threads, levels: Levels) -> bool:
        """∫ := ∫ ∨ (block ts with `levels`); True if anything rose."""
        top = self.blocks.get(ALL)
        if top is not None and below(levels, top):
            return False                     # the block over all of 𝔾 dominates
        old = self.blocks.get(ts)
        if old is None:
            new = levels
        else:
            if below(levels, old):
                return False
            new = join_levels(old, levels)
        self.blocks[ts] = new
        self.vis[ts] = new[1]
        self.ver += 1
        return True

    def split(self, part: int) -> "Rec":
        """Members `part` of this family leave it as a new family (same state)."""
        task, mask = self.who
        twin = Rec(self.q, dict(self.blocks), self.own,
                   dict(self.p), self.kind, (task, part),
                   self.stmt, self.origin)
        twin.live, twin.sids = self.live, list(self.sids)
        self.who = (task, mask & ~part)
        self.ver += 1
        return twin


def reach(r: Rec, task: int, i: int, pre: int) -> int:
    """The threads of `task` that W(t, g, pre*, r) can find as witnesses: those in a
    block of r at level index i (1: >= unordered, W; 3: fully_ordered, strict W) on
    a timeline of `pre` (the pre set `passing` tests, r's own timeline alone for a
    non-transitive lift), and r's members (its accessing threads); -1 for every
    thread (a block over all of 𝔾).

    W needs an executing thread in such a block (the `overlaps` tests of `passing`)
    or among r's members (`part = who & exec`), so a lift whose threads of `task`
    miss `reach` passes no member of r: the lifts skip r without running W (one
    thread's arrive otherwise tests every record of its task, and most are other
    threads' records that this one sees only temporally). Cached under r.ver, which
    every change of blocks or who bumps."""
    ver, t, ci, cpre, m = r.reach_at
    if ver == r.ver and t == task and cpre == pre and ci == i:
        return m
    who = r.who
    m = who[1] if who[0] == task else -1 if who[0] == -1 else 0
    for ts, lv in r.blocks.items():
        if lv[i] & pre:
            if ts[0] == -1:
                m = -1
                break
            if ts[0] == task:
                m |= ts[1]
    r.reach_at = (r.ver, task, i, pre, m)
    return m


def make_levels(full: int, temp: int) -> Levels:
    """∫_aug's levels (Definition B.3 (ii)): fully on τ_q^full*, temporally on
    τ_q^temp* \\ τ_q^full*, invisible elsewhere."""
    both = full | temp
    return (both, both, both, full)


def new_records(vl: int, t: bool, q: int, atomic: int, p: dict[BarrierCell, int],
                who: Threads, kind: str, stmt: int, origin: Span) -> Rec:
    """R(τ_v, t, τ_q, τ_q*, E#, ρ, G) (Definition B.1), as one record (t = true) or one
    family (t = false).

    S_H(g', q') = max(atomic_only if q' ∈ τ_q*, τ_v if g' ∈ H and q' = τ_q): the atomic
    part holds for every thread of 𝔾, so it is one block over ALL.

    Note: for a CPU-scoped statement G = 𝔾 is infinite, so t = false (one record per
    thread) cannot be built; the CPU is a single agent and we make one record
    (errata "CPU-scoped records").
    """
    blocks: dict[Threads, Levels] = {}
    if atomic:
        blocks[ALL] = levels_at(atomic, _ATOM)
    own = levels_at(1 << q, vl)
    family = not t and who[0] != -1 and (who[1] & (who[1] - 1)) != 0
    if not family:
        blocks[who] = join_levels(blocks.get(who, NONE), own)
    return Rec(q, blocks, own if family else None, dict(p), kind, who, stmt, origin)


def passing(t: bool, exec_: Threads, pre: int, r: Rec, strict: bool = False) -> int:
    """W(t, g^exec*, τ_q^pre*, r) (Definition B.3 (i)), as the members of r it holds
    for: -1 all of them, 0 none, else a mask of family members.

    t (transitive): some executing thread sees r at >= unordered on some pre timeline;
    otherwise r's own timeline must be in pre and some executing thread sees r on it.

    Note: `strict` (`--rules fixed`) is W without temporal witnesses: an executing
    thread must see r fully_ordered, or be one of the threads that made r (R's level,
    >= unordered, on r's own timeline: how a thread fences its own asynchronous
    access). temporally_ordered means the order of a barrier whose memory fence may
    be elided (Section 3): a later fence cannot pass on a write its threads never
    observed (errata "The witness W and temporal visibility"; Exo-GPU endgame's
    synchronizes_with takes vis_flag_issue | vis_flag_full).
    """
    if not t:
        if not (pre >> r.q) & 1:
            return 0
        pre = 1 << r.q
    if strict:
        return _passing_strict(exec_, pre, r)
    for ts, v in r.vis.items():
        if v & pre and overlaps(ts, exec_):
            return -1
    if r.own is None or exec_[0] != r.who[0] and exec_[0] != -1:
        return 0
    if not r.own[1] & pre:
        return 0
    if exec_[0] == -1:
        return -1
    part = r.who[1] & exec_[1]
    return -1 if part == r.who[1] else part


def _passing_strict(exec_: Threads, pre: int, r: Rec) -> int:
    for ts, lv in r.blocks.items():
        if lv[3] & pre and overlaps(ts, exec_):
            return -1
    if not pre >> r.q & 1:
        return 0
    if r.own is None:                # R's block is blocks[who]: its accessing threads
        return -1 if overlaps(r.who, exec_) else 0
    if exec_[0] != r.who[0] and exec_[0] != -1:
        return 0
    if exec_[0] == -1:
        return -1
    part = r.who[1] & exec_[1]
    return -1 if part == r.who[1] else part


def augment(r: Rec, exec_: Threads, levels: Levels) -> bool:
    """A(r, g^exec*, τ_q^full*, τ_q^temp*) = (τ_q, ∫ ∨ ∫_aug, p) (Def. B.3 (ii))."""
    return r.join(exec_, levels)


def dominates(old: Rec, new: Rec) -> bool:
    """Can `old` be dropped from a cell that also holds `new`? Both come from the same
    statement and threads, so ∫_old >= ∫_new (blocks only grow); if old's earliest
    observed arrive counts are no later than new's on every barrier cell new has,
    every later λ keeps old at least as visible as new: a check that fails on old
    fails on new (errata "record dominance")."""
    if old.stmt != new.stmt or old.who != new.who or old.q != new.q \
            or (old.own is None) != (new.own is None):
        return False
    for cell, first in new.p.items():
        mine = old.p.get(cell)
        if mine is None or mine > first:
            return False
    return True
