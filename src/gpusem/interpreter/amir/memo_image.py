"""The iteration memo's image of the task-local state of the AMIR machine, and the way
back from an image to a state (interpreter/amir/memo.py uses both).

An image is ⟨σ, ι, ρ⟩ restricted to the *local* variables (those allocated since the
last InctaskID) and written relative to what shifts from one iteration (and one task)
to the next, so that two entry states that behave alike have equal images:

  - each array of record-set ids (ρ(x, n).r, ρ(x, n).m) as labels by first
    appearance in row-major order, each set as its records' labels in member order,
    each record as (statement, kind, threads, span, q, ∫, p);
  - threads of the current task ι as (SELF, mask), 𝔾 and other tasks as they are;
  - a local barrier's counts (a, w) less a base (its first cell's a); an observed
    arrive count p(z, n) less the same base, or SAT once it is at least `sat` below
    both counts of its cell.

Why SAT is exact: counts never fall, so an entry that is SAT stays SAT; Await asks
p(z, n) <= Max with Max = a - (n + 1) (n >= 0) or w + n + 1 (n < 0), which holds for
every SAT entry, and for the count a SAT entry is written back as (both counts less
sat), when sat >= n + 1 (n >= 0) and sat >= |n| - 1 (n < 0) for every Await of the
program (memo.saturation; at least 1); Arrive only asks
whether an entry exists; record dominance (amir/records.dominates) compares an old
record's entry with a new record's, which is a count of now, above every SAT entry.
No rule reads a SAT entry's value otherwise (errata "AMIR iteration memo").

Records (and record families) are compared by value: the rules read a record only
through its fields, and lift applies λ to each record alone (Definition B.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gpusem.interpreter.amir.records import ALL, Levels, Rec, Threads
from gpusem.interpreter.amir.state import MachineState

SELF = -2                 # the current task ι in an encoded thread set
SAT = None                # an arrive count far enough below its cell's counts

EncThreads = tuple[int, int]
# A p entry: (0, local barrier name, cell, count - base | SAT) or (1, var key, cell,
# count) for a barrier that is not local (its counts are not the iteration's to move).
EncP = tuple[Any, ...]
# A record's state as lifts see it: (q, ∫ as sorted blocks, p as sorted entries).
State = tuple[int, tuple[tuple[EncThreads, Levels], ...], tuple[EncP, ...]]
# An outside record's group (amir/memo.py's cohorts): (statement, threads, state).
OState = tuple[int, EncThreads, State]
# A local record: (statement, kind, threads, span, state).
EncRec = tuple[int, str, EncThreads, Any, State]


class NotMemoisable(Exception):
    """The state has something an image does not describe (a record family)."""


@dataclass(slots=True)
class Counts:
    """A local barrier's counts: base and (a, w) less the base."""

    base: int
    arr: np.ndarray
    awt: np.ndarray


class Coder:
    """Records to and from their encoding, at one state: task ι and the local
    barriers' counts."""

    def __init__(self, m: MachineState, counts: dict[str, Counts], sat: int):
        self.task, self.sat, self.counts = m.task, sat, counts
        self.keys = {m.vars[name].key: name for name in counts}
        self.vars = m.vars

    def threads(self, ts: Threads) -> EncThreads:
        return (SELF, ts[1]) if ts[0] == self.task and ts != ALL else ts

    def unthreads(self, ts: EncThreads) -> Threads:
        return (self.task, ts[1]) if ts[0] == SELF else ts

    def p_entry(self, key: Any, cell: tuple[int, ...], c: int) -> EncP:
        name = self.keys.get(key)
        if name is None:
            return (1, key, cell, c)
        k = self.counts[name]
        low = k.base + min(int(k.arr[cell]), int(k.awt[cell]))
        return (0, name, cell, SAT if c - low <= -self.sat else c - k.base)

    def exact_p(self, key: Any, cell: tuple[int, ...], c: int) -> EncP:
        """A p entry relative to its barrier's base, never SAT (what a replay adds
        must be the count the rule observed)."""
        name = self.keys.get(key)
        if name is None:
            return (1, key, cell, c)
        return (0, name, cell, c - self.counts[name].base)

    def un_p(self, e: EncP) -> tuple[Any, int]:
        if e[0] == 1:
            return (e[1], e[2]), e[3]
        _, name, cell, rel = e
        k = self.counts[name]
        if rel is SAT:
            rel = min(int(k.arr[cell]), int(k.awt[cell])) - self.sat
        return (self.vars[name].key, cell), k.base + rel

    def state(self, r: Rec) -> State:
        if r.own is not None:
            raise NotMemoisable("a record family")
        blocks = tuple(sorted((self.threads(ts), lv) for ts, lv in r.blocks.items()))
        p = tuple(sorted((self.p_entry(key, cell, c) for (key, cell), c in r.p.items()),
                         key=_p_order))
        return (r.q, blocks, p)

    def outside(self, r: Rec) -> OState:
        """An outside record as the memo groups them: statement, threads, state."""
        return (r.stmt, self.threads(r.who), self.state(r))

    def record(self, r: Rec) -> EncRec:
        return (r.stmt, r.kind, self.threads(r.who), r.origin, self.state(r))

    def make(self, e: EncRec) -> Rec:
        """A fresh record with the encoded fields."""
        stmt, kind, who, origin, (q, blocks, p) = e
        return Rec(q, {self.unthreads(ts): lv for ts, lv in blocks}, None,
                   dict(self.un_p(x) for x in p), kind, self.unthreads(who), stmt,
                   origin)


def _p_order(e: EncP) -> tuple[Any, ...]:
    return e[:3]


@dataclass(slots=True)
class Array:
    """One array of set ids as its labels' maximal runs in row-major order (run r
    holds label `runs[r]` from flat index `starts[r]` to the next start), and the
    labelled sets.

    Why runs: the arrays are blocky (a TMA tile, a wgmma sub-tile hold one set), so
    a few runs describe an array of 10^5 cells; maximal runs of labels are a
    canonical form of the labels (two labellings are equal iff their runs are), so
    the image's key holds the runs, not a copy of every cell."""

    starts: np.ndarray            # int64, starts[0] == 0 (empty for an empty array)
    runs: np.ndarray              # int32, the label of each run
    sets: tuple[tuple[int, ...], ...]
    counts: list[int]             # cells per label


@dataclass(slots=True)
class Image:
    """A canonical image (see the module docstring): `key` is what is compared."""

    key: tuple[Any, ...]
    arrays: dict[tuple[str, str], Array]
    counts: dict[str, Counts]
    recs: tuple[EncRec, ...]


def local_counts(m: MachineState, local: tuple[str, ...]) -> dict[str, Counts]:
    out = {}
    for name in local:
        v = m.vars[name]
        if v.arr is not None and v.awt is not None:
            base = int(v.arr.flat[0]) if v.arr.size else 0
            out[name] = Counts(base, v.arr - base, v.awt - base)
    return out


Sids = dict[tuple[str, str], list[int]]     # per local array, the set id of each label


def scan(m: MachineState, local: tuple[str, ...],
         sat: int) -> tuple[Image, list[Rec], Sids]:
    """The image of the machine's local state, its records by label and its arrays'
    set ids by label."""
    counts = local_counts(m, local)
    coder = Coder(m, counts, sat)
    label: dict[int, int] = {}
    recs: list[Rec] = []
    arrays: dict[tuple[str, str], Array] = {}
    held: Sids = {}
    key: list[Any] = []
    for name in local:
        v = m.vars[name]
        k = counts.get(name)
        key.append((name, v.shape, None if k is None else
                    (k.arr.tobytes(), k.awt.tobytes())))
        for attr in ("rd", "mu"):
            starts, runs, sids, n = _runs(getattr(v, attr))
            sets = []
            for sid in sids:
                members = m.sets.sets[sid]
                assert members is not None                # held by a cell
                one = []
                for r in members:
                    i = label.get(r.id)
                    if i is None:
                        i = label[r.id] = len(recs)
                        recs.append(r)
                    one.append(i)
                sets.append(tuple(one))
            arrays[name, attr] = Array(starts, runs, tuple(sets), n)
            held[name, attr] = sids
            key.append((starts.tobytes(), runs.tobytes(), arrays[name, attr].sets))
    encs = tuple(coder.record(r) for r in recs)
    return Image((tuple(key), encs), arrays, counts, encs), recs, held


def _runs(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    """The maximal runs of equal cells (row-major) labelled by first appearance: the
    runs' starts, their labels, the set id of each label and its cells.

    Why runs: the distinct values are found among the values of the runs of equal
    cells, a few thousand at most, not by sorting every cell."""
    flat = arr.ravel()
    if flat.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32), [], []
    first = int(flat[0])
    if (flat == first).all():
        return (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int32), [first],
                [int(flat.size)])
    starts = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    starts = np.concatenate(([0], starts)).astype(np.int64)
    vals = flat[starts]
    uniq, where, inv = np.unique(vals, return_index=True, return_inverse=True)
    order = np.argsort(where, kind="stable")
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    runs = rank[inv.ravel()]
    lengths = np.diff(np.append(starts, flat.size))
    counts = np.bincount(runs, weights=lengths, minlength=len(order))
    return starts, runs, [int(uniq[i]) for i in order], \
        [int(c) for c in counts.tolist()]


def _write_runs(arr: np.ndarray, a: Array, sids: list[int]) -> None:
    """arr's cells := the set ids of their labels (by runs)."""
    vals = np.array(sids, dtype=np.int32)[a.runs]
    if len(vals) <= _FEW_RUNS and arr.flags.c_contiguous:
        flat = arr.reshape(-1)                   # a view: arr is contiguous
        ends = a.starts[1:].tolist() + [arr.size]
        for lo, hi, x in zip(a.starts.tolist(), ends, vals.tolist()):
            flat[lo:hi] = x
        return
    lengths = np.diff(np.append(a.starts, arr.size))
    arr[...] = np.repeat(vals, lengths).reshape(arr.shape)


# Runs up to which an array is written run by run (a slice fill each) rather than
# by one np.repeat over every cell.
_FEW_RUNS = 32


def materialize(m: MachineState, image: Image, bases: dict[str, int], sat: int,
                was: Image, was_sids: Sids) -> tuple[list[Rec], Sids]:
    """Make the machine's local state the one `image` describes, with the local
    barriers' bases `bases`: fresh records, their sets, the arrays, the counts, the
    lift indexes. The arrays hold image `was` with set ids `was_sids` (so they are
    released without a scan); the local records they hold leave every cell (they
    die, and the lifts drop them as they drop any dead record). Returns the records
    by label and the arrays' set ids by label."""
    counts = {name: Counts(bases[name], k.arr, k.awt)
              for name, k in image.counts.items()}
    for name, k in counts.items():
        v = m.vars[name]
        assert v.arr is not None and v.awt is not None   # a local barrier
        v.arr[...] = k.base + k.arr
        v.awt[...] = k.base + k.awt
    coder = Coder(m, counts, sat)
    recs = [coder.make(e) for e in image.recs]
    for r in recs:
        m.lifts.register(r)
        for cell in r.p:
            m.lifts.index_barrier(cell, r)
    held: Sids = {}
    for (name, attr), a in image.arrays.items():
        v = m.vars[name]
        arr = getattr(v, attr)
        for sid, n in zip(was_sids[name, attr], was.arrays[name, attr].counts):
            m.sets.dec(sid, n)
        sids = [m.sets.intern(tuple(recs[i] for i in s)) for s in a.sets]
        held[name, attr] = sids
        uc = v.uc[attr]
        uc.clear()
        if not sids:
            continue
        _write_runs(arr, a, sids)
        for sid, n in zip(sids, a.counts):
            m.sets.inc(sid, n)
        if len(sids) == 1:
            uc.put(tuple((0, n) for n in v.shape), sids[0])
        else:
            _learn_slabs(uc, v.shape, a, sids)
    m.new_epoch()
    return recs, held


def _learn_slabs(uc: Any, shape: tuple[int, ...], a: Array, sids: list[int]) -> None:
    """Tell the array's uniform-window cache (amir/store.Uniform) which slabs (one
    index of every leading dimension: a stage of a ring buffer) hold one set, as the
    rules that wrote them would have: a later check of the whole array then reads
    the slabs instead of scanning every cell. Only what the labels show is told: a
    slab is uniform iff no run starts strictly inside it."""
    lead = uc.lead
    if lead == 0:
        return
    nrows = int(np.prod(shape[:lead]))
    size = int(np.prod(shape))
    if nrows == 0 or size == 0:
        return
    width = size // nrows
    row0 = np.arange(nrows, dtype=np.int64) * width
    at = np.searchsorted(a.starts, row0, side="right") - 1   # the run a row starts in
    nxt = np.append(a.starts, size)[at + 1]
    same = nxt >= row0 + width
    tail = tuple((0, n) for n in shape[lead:])
    for i in np.flatnonzero(same).tolist():
        pos = np.unravel_index(i, shape[:lead])
        uc.put(tuple((int(j), int(j) + 1) for j in pos) + tail,
               sids[int(a.runs[at[i]])])
