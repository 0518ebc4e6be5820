"""What the iteration memo (interpreter/amir/memo.py) stores: the effect of one loop
iteration, and the recorder that watches a stepped iteration to find it.

The recorder hears every Record* of the iteration (`MachineState.observer`); those on
outside variables are the records a replay must make again. After the iteration it
scans the local state (the image after), and compares each outside record of task ι
with its state before: the blocks that rose and the p entries gained, which must be
the same for every record that was in the same state (lift is pointwise; if not, the
iteration is not stored).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from gpusem.calculus.amir import ast as A
from gpusem.interpreter.amir.ctrl import Box, Index
from gpusem.interpreter.amir.memo_image import (
    Coder,
    EncP,
    EncThreads,
    Image,
    NotMemoisable,
    OState,
    scan,
)
from gpusem.interpreter.amir.records import Levels, Rec
from gpusem.interpreter.amir.state import MachineState
from gpusem.interpreter.amir.store import Var, window_sets

# An outside access the dry walk met: statement, variable, window, box, thread mask.
Outside = tuple[A.AStmt, Var, Index, Box | None, int | None]
Blocks = tuple[tuple[EncThreads, Levels], ...]

@dataclass(slots=True)
class NewRec:
    """A record an iteration made in an outside variable: as made, and as at the
    iteration's end (blocks encoded; p entries relative to the entry bases)."""

    enc: tuple[int, str, EncThreads, Any, int]     # stmt, kind, threads, span, q
    made_blocks: Blocks
    made_p: tuple[EncP, ...]
    end_blocks: Blocks
    end_p: tuple[EncP, ...]
    end_state: int                                 # its group after (an id)


# What an iteration does to an outside record of one group: the group after, the
# blocks that changed (their new levels) and the p entries it gained.
Change = tuple[int, Blocks, tuple[EncP, ...]]


@dataclass(slots=True)
class Entry:
    """The effect of one iteration (see amir/memo.py's docstring)."""

    image: int                                     # the image after
    shift: dict[str, int]                          # base after - base before
    stats: tuple[int, int, int, int]
    exercised: frozenset[str]
    new: list[NewRec]
    events: list[tuple[int, str, int]]             # (outside access, attr, new rec)
    change: dict[int, Change]                      # by group before (an id)
    # Whether a replay must first find no record of a made record's statement and
    # threads in its window: an older one gained p entries in the iteration, so
    # record dominance, if they shared a cell, would read them (amir/records).
    guarded: bool = False


@dataclass(slots=True)
class Chain:
    """The state between iterations: its image (an id), the local barriers' bases,
    the live outside records of task ι by group (ids of `OState`s), and whether the
    machine's arrays hold the image (`physical`, with its records by label and each
    array's set ids by label) or not yet."""

    image: int
    bases: dict[str, int]
    cohorts: dict[int, list[Rec]]
    physical: bool
    local: tuple[str, ...]
    labels: list[Rec] = field(default_factory=list)
    held: int = -1                       # the image the arrays hold
    sids: dict[tuple[str, str], list[int]] = field(default_factory=dict)


class Recorder:
    """Watches one stepped iteration (see the module docstring)."""

    def __init__(self, m: MachineState, chain: Chain, outs: list[Outside],
                 coder: Coder, sat: int, group: Callable[[OState], int]):
        self.m, self.chain, self.coder, self.sat = m, chain, coder, sat
        self.group = group
        st = m.stats
        self.stats0 = (st.statements, st.recorded_accesses, st.records, st.lifts)
        self.exercised: frozenset[str] = frozenset()
        self.before = [(s, r, dict(r.blocks), set(r.p))
                       for s, recs in chain.cohorts.items() for r in recs]
        # the outside records the iteration makes in ρ (into an attribute no rule
        # examines, the machine stores none: Machine._rule_record_unseen)
        self.slots = [j for j, o in enumerate(outs)
                      if isinstance(o[0], (A.RecordRead, A.RecordMutate))
                      and (o[1].name, "rd" if isinstance(o[0], A.RecordRead)
                           else "mu") not in m.unseen]
        self.local = frozenset(chain.local)
        self.made: list[Rec] = []
        self.made_at: list[tuple[Blocks, tuple[EncP, ...]]] = []
        self.events: list[tuple[int, str, int]] = []
        self.bad = False
        self.clash = False
        self.after: Chain | None = None

    def observe(self, v: Var, attr: str, idx: Index, box: Box | None, r: Rec,
                created: bool) -> None:
        if v.name in self.local:
            return
        k = len(self.events)
        if k >= len(self.slots) or r.own is not None:
            self.bad = True
            return
        for sid in window_sets(v, attr, idx, box):
            for x in self.m.sets.sets[sid] or ():
                self.clash |= x.stmt == r.stmt and x.who == r.who and x is not r
        if created:
            self.made.append(r)
            self.made_at.append((self._blocks(r, None), self._p(r, set())))
            i = len(self.made) - 1
        else:
            i = next((n for n, x in enumerate(self.made) if x is r), -1)
            if i < 0:
                self.bad = True                  # from before the iteration
                return
        self.events.append((self.slots[k], attr, i))

    def _blocks(self, r: Rec, old: dict[Any, Levels] | None) -> Blocks:
        th = self.coder.threads
        return tuple(sorted((th(ts), lv) for ts, lv in r.blocks.items()
                            if old is None or old.get(ts) != lv))

    def _p(self, r: Rec, old: set[Any]) -> tuple[EncP, ...]:
        ex = self.coder.exact_p
        return tuple(sorted((ex(key, cell, c) for (key, cell), c in r.p.items()
                             if (key, cell) not in old), key=lambda e: e[:3]))

    def finish(self, intern: Callable[[Image], int]) -> Entry | None:
        """The iteration's effect, or None if it cannot be replayed exactly: an
        outside record died (a dominated record left its cells), two records made
        by one statement for the same threads, or an older record of a statement
        and threads the iteration records gained p entries (record dominance, which
        a replay evaluates on the states before the iteration, would read them)
        while one such record was in a window recorded."""
        m, chain = self.m, self.chain
        if self.bad or len(self.events) != len(self.slots) or m.rec_cache \
                or m.check_memo or m.sets.memo or m.sets.dead:
            return None
        writers = {(r.stmt, r.who) for r in self.made}
        if len(writers) != len(self.made):
            return None
        try:
            image, labels, sids = scan(m, chain.local, self.sat)
            out = Coder(m, image.counts, self.sat)
            change: dict[int, Change] = {}
            cohorts: dict[int, list[Rec]] = {}
            guarded = False
            for g, r, blocks, p in self.before:
                if r.live <= 0:
                    return None
                ch = (self.group(out.outside(r)), self._blocks(r, blocks),
                      self._p(r, p))
                guarded |= bool(ch[2]) and (r.stmt, r.who) in writers
                if change.setdefault(g, ch) != ch:
                    return None                  # not pointwise: never expected
                cohorts.setdefault(ch[0], []).append(r)
            new = []
            for r, (blocks0, p0) in zip(self.made, self.made_at):
                end = self.group(out.outside(r))
                made_p = {e[:3] for e in p0}
                end_p = tuple(e for e in self._p(r, set()) if e[:3] not in made_p)
                enc = (r.stmt, r.kind, self.coder.threads(r.who), r.origin, r.q)
                new.append(NewRec(enc, blocks0, p0, self._blocks(r, None), end_p, end))
                cohorts.setdefault(end, []).append(r)
        except NotMemoisable:
            return None
        if guarded and self.clash:
            return None
        st = m.stats
        now = (st.statements, st.recorded_accesses, st.records, st.lifts)
        bases = {n: k.base for n, k in image.counts.items()}
        shift = {n: bases[n] - chain.bases[n] for n in bases}
        d = (now[0] - self.stats0[0], now[1] - self.stats0[1], now[2] - self.stats0[2],
             now[3] - self.stats0[3])
        entry = Entry(intern(image), shift, d, self.exercised, new, self.events, change,
                      guarded)
        self.after = Chain(entry.image, bases, cohorts, True, chain.local, labels,
                           entry.image, sids)
        return entry
