"""Storage of the synchronization environment ρ (Definition 5.3 of Exo-GPU) for the AMIR
machine: per variable, dense NumPy arrays of interned record-set ids.

Conventions (paper -> Python):
  ρ(x, n).r, ρ(x, n).m   -> `Var.rd[n]`, `Var.mu[n]`: ids into `SetTable.sets`
  ρ(z, n).b = (a, w)      -> `Var.arr[n]`, `Var.awt[n]` (barriers only)
  W_{e#} (a window)       -> a NumPy index (ints and slices) and its key: a (lo, hi)
                             pair per dimension

Why arrays of set ids: a window access (a TMA tile, a wgmma operand) touches thousands
of cells that all receive the same record, so one NumPy fill records it; set ids are
interned so equal sets are one id, and set operations are memoised per id.

Uniform windows. Checks and records on a window first ask whether every cell holds
the same set (then one set is tested or extended). `Var.uc` remembers, per array,
pairwise disjoint windows known to hold one set id since they were last written, so
the common sequences (check, clear, record on one tile; a TMA write of a stage then
wgmma reads of its sub-tiles; a stage rewritten after its sub-tiles were read: known
pieces that tile it) skip the NumPy scan. Entries overlapping a later write are
dropped.
"""

from __future__ import annotations

import numpy as np
from gpusem.interpreter.amir.ctrl import Box, Index, Shape
from gpusem.interpreter.amir.records import Rec, VarKey, dominates

_UC_LIMIT = 16
_UC_BUCKETED_LIMIT = 128


class Var:
    """ρ restricted to one variable. `allocated` is False for a variable first met in an
    access (a procedure argument): its arrays then grow to fit."""

    __slots__ = ("name", "shape", "rd", "mu", "arr", "awt", "key", "allocated", "uc")

    def __init__(self, name: str, shape: Shape, barrier: bool, key: VarKey,
                 allocated: bool):
        self.name, self.shape, self.key, self.allocated = name, shape, key, allocated
        self.rd = np.zeros(shape, dtype=np.int32)
        self.mu = np.zeros(shape, dtype=np.int32)
        self.arr = np.zeros(shape, dtype=np.int64) if barrier else None
        self.awt = np.zeros(shape, dtype=np.int64) if barrier else None
        whole = tuple((0, n) for n in shape)
        self.uc = {"rd": Uniform(whole), "mu": Uniform(whole)}

    def grow(self, need: Shape) -> None:
        shape = tuple(max(n, 2 * o if n > o else o) for n, o in zip(need, self.shape))
        for attr in ("rd", "mu", "arr", "awt"):
            old = getattr(self, attr)
            if old is not None:
                new = np.zeros(shape, dtype=old.dtype)
                new[tuple(slice(0, n) for n in self.shape)] = old
                setattr(self, attr, new)
        self.shape = shape

    def known(self, attr: str, key: Box) -> int | None:
        """The one set id of window `key` of array `attr`, if known without a scan."""
        return self.uc[attr].known(key)

    def parts(self, attr: str, key: Box) -> list[tuple[Box, int]] | None:
        """Known uniform windows that tile window `key` exactly (the entries are
        pairwise disjoint, so contained volumes summing to key's volume tile it)."""
        return self.uc[attr].parts(key)

    def learn(self, attr: str, key: Box, sid: int) -> None:
        """A scan found window `key` uniform (nothing was written). Entries stay
        pairwise disjoint: a window overlapping a known one is not added."""
        self.uc[attr].learn(key, sid)

    def note(self, attr: str, key: Box, sid: int | None) -> None:
        """Window `key` of `attr` was just written: to one set id `sid`, or unevenly."""
        self.uc[attr].note(key, sid)


class Uniform:
    """The known uniform windows of one array: pairwise disjoint boxes, each holding
    one set id, oldest first (the oldest is forgotten past the limit).

    Why buckets: the windows of a multi-stage buffer (As[cta, stage, rows, cols]) are
    points in their leading dimensions, and a query can only meet entries with the
    same leading points (or entries not points there, `wide`). Looking only at those
    lets an array remember many more windows (a stage's eight wgmma sub-tiles on
    every stage of both CTAs) without a longer scan per query, so fewer windows need
    a NumPy scan. Only which windows are remembered changes, never what a query
    answers: a known window is one the arrays hold uniformly, and every query
    answers as the scan would (issue 27.2)."""

    __slots__ = ("vals", "seq", "buckets", "wide", "lead", "limit", "count")

    def __init__(self, whole: Box) -> None:
        self.lead = len(whole) - 2 if len(whole) > 2 else 0
        self.limit = _UC_LIMIT if self.lead == 0 else _UC_BUCKETED_LIMIT
        self.vals: dict[Box, int] = {}           # the entries, oldest first
        self.seq: dict[Box, int] = {}            # insertion order, for `parts`
        self.buckets: dict[Box, dict[Box, None]] = {}
        self.wide: dict[Box, None] = {}
        self.count = 0
        self.put(whole, 0)

    def __bool__(self) -> bool:
        return bool(self.vals)

    def bucket(self, key: Box) -> Box | None:
        """Key's leading points, if its leading dimensions are all points."""
        lead = key[:self.lead]
        for lo, hi in lead:
            if hi - lo != 1:
                return None
        return lead

    def put(self, key: Box, sid: int) -> None:
        """Set an entry; a new one goes last (as a dict insertion does)."""
        if key not in self.vals:
            self.count += 1
            self.seq[key] = self.count
            b = self.bucket(key) if self.lead else None
            if b is None:
                self.wide[key] = None
            else:
                self.buckets.setdefault(b, {})[key] = None
        self.vals[key] = sid

    def drop(self, key: Box) -> None:
        del self.vals[key]
        del self.seq[key]
        if key in self.wide:
            del self.wide[key]
        else:
            b = self.bucket(key)
            assert b is not None                  # not wide: a bucket holds it
            group = self.buckets[b]
            del group[key]
            if not group:
                del self.buckets[b]

    def clear(self) -> None:
        self.vals.clear()
        self.seq.clear()
        self.buckets.clear()
        self.wide.clear()

    def near(self, key: Box, ordered: bool = False) -> list[Box]:
        """Every entry that can overlap or hold `key` (oldest first if `ordered`):
        for a non-empty key with leading points, its bucket's and the wide ones;
        else all. Non-empty entries are pairwise disjoint, so only `parts`, which
        may return several, needs the order."""
        if self.lead:
            lead = key[:self.lead]
            for lo, hi in lead:
                if hi - lo != 1:
                    return list(self.vals)
            for lo, hi in key:
                if lo >= hi:
                    return list(self.vals)
            group = self.buckets.get(lead)
            if not group:
                return list(self.wide)
            if not self.wide:
                return list(group)
            out = list(group) + list(self.wide)
            if ordered:
                out.sort(key=self.seq.__getitem__)
            return out
        return list(self.vals)

    def known(self, key: Box) -> int | None:
        sid = self.vals.get(key)
        if sid is not None or not key:
            return sid
        vals = self.vals
        for k in self.near(key):
            for (a, b), (lo, hi) in zip(k, key):
                if lo < a or hi > b:
                    break
            else:
                return vals[k]
        return None

    def parts(self, key: Box) -> list[tuple[Box, int]] | None:
        want, got = _volume(key), 0
        out: list[tuple[Box, int]] = []
        vals = self.vals
        for k in self.near(key, ordered=True):
            for (a, b), (lo, hi) in zip(k, key):
                if a < lo or b > hi:
                    break
            else:
                out.append((k, vals[k]))
                got += _volume(k)
        return out if got == want else None

    def learn(self, key: Box, sid: int) -> None:
        for k in self.near(key):
            if not _disjoint(k, key):
                return
        if len(self.vals) >= self.limit:
            self.drop(next(iter(self.vals)))
        self.put(key, sid)

    def note(self, key: Box, sid: int | None) -> None:
        # Note: an entry equal to a key empty in its first dimension stays where it
        # is (its value replaced), as the dict this replaced kept it.
        lo0, hi0 = key[0] if key else (0, 1)
        for k in self.near(key) if key else list(self.vals):
            if not _disjoint(k, key) or (k == key and not (hi0 <= lo0)):
                self.drop(k)
        if sid is not None:
            self.put(key, sid)
        if len(self.vals) > self.limit:
            self.drop(next(iter(self.vals)))


def _volume(key: Box) -> int:
    n = 1
    for lo, hi in key:
        n *= max(0, hi - lo)
    return n


def _index(key: Box) -> tuple[slice, ...]:
    return tuple(slice(lo, hi) for lo, hi in key)


def _disjoint(a: Box, b: Box) -> bool:
    for (alo, ahi), (blo, bhi) in zip(a, b):
        if bhi <= alo or ahi <= blo:
            return True
    return False


class SetTable:
    """Interned sets of records: id 0 is ∅. `union(sid, recs)` is memoised.

    `ref[sid]` counts the cells holding set sid; a record's `live` counts the sets with
    ref > 0 that contain it. A record with live == 0 is in no cell, so no judgment can
    observe it and lifts skip it (that keeps a Fence's work proportional to the
    records that exist, not to every record ever made)."""

    def __init__(self) -> None:
        self.sets: list[tuple[Rec, ...] | None] = [()]   # None: collected
        self.ids: dict[frozenset[int], int] = {frozenset(): 0}
        self.memo: dict[tuple[int, int], int] = {}
        self.ref: list[int] = [0]
        self.dead: list[int] = []

    def union(self, sid: int, key: int, recs: tuple[Rec, ...]) -> int:
        """The id of ρ(x, n).r ∪ R(...) (dominated records of the same statement and
        threads dropped, see amir/records.dominates)."""
        out = self.memo.get((sid, key))
        if out is None:
            old = self.sets[sid]
            if old:
                have = {r.id for r in old}
                stmts = {n.stmt for n in recs}
                # a record never dominates itself away: re-adding one the cell
                # already holds kept neither copy (dominates is reflexive; the cell
                # came out without it)
                kept = tuple(r for r in old if r.stmt not in stmts
                             or not any(n.id != r.id and dominates(r, n)
                                        for n in recs))
                merged = kept + tuple(r for r in recs if r.id not in have)
            else:
                merged = recs
            out = self.memo[(sid, key)] = self.intern(merged)
        return out

    def intern(self, recs: tuple[Rec, ...]) -> int:
        """The id of the set `recs` (made if new): `union`'s result, and the iteration
        memo rebuilding a state (amir/memo_image.py)."""
        ident = frozenset(r.id for r in recs)
        out = self.ids.get(ident)
        if out is None:
            out = self.ids[ident] = len(self.sets)
            self.sets.append(recs)
            self.ref.append(0)
            for r in recs:
                r.sids.append(out)
        return out

    def add_member(self, sid: int, r: Rec) -> None:
        """A family split: set sid now also holds r (its other part is already in)."""
        old = self.sets[sid]
        if old is None:
            return
        ident = frozenset(x.id for x in old)
        if self.ids.get(ident) == sid:
            del self.ids[ident]
        self.sets[sid] = old + (r,)
        self.ids.setdefault(ident | {r.id}, sid)

    def inc(self, sid: int, n: int) -> None:
        if sid:
            if self.ref[sid] == 0:
                members = self.sets[sid]
                assert members is not None    # a set some cell is about to hold
                for r in members:
                    r.live += 1
            self.ref[sid] += n

    def dec(self, sid: int, n: int) -> None:
        if sid:
            self.ref[sid] -= n
            if self.ref[sid] == 0:
                members = self.sets[sid]
                assert members is not None    # held by a cell until now
                for r in members:
                    r.live -= 1
                self.dead.append(sid)

    def collect(self) -> None:
        """Forget sets no cell holds any more. Only between epochs: `memo` (cleared
        with them) is the only other way to reach a set id."""
        self.memo.clear()
        sets, ids, ref = self.sets, self.ids, self.ref
        for sid in self.dead:
            members = sets[sid]
            if ref[sid] == 0 and members is not None:
                ident = frozenset(r.id for r in members)
                if ids.get(ident) == sid:
                    del ids[ident]
                sets[sid] = None
        self.dead.clear()

    def release(self, arr: np.ndarray, known: int | None = None) -> None:
        """The cells of `arr` stop holding their sets (cleared, or their variable
        dies)."""
        if arr.size == 0:
            return
        if known is not None:
            self.dec(known, arr.size)
            return
        first = arr.item(0)
        if (arr == first).all():
            self.dec(first, arr.size)
            return
        uniq, counts = _distinct(arr)
        for u, c in zip(uniq, counts):
            self.dec(u, c)


def release_var(sets: SetTable, v: Var, attr: str) -> None:
    """Every cell of `attr` of v releases its set (its variable dies): by the known
    uniform windows where they tile the array, else by a scan."""
    whole = tuple((0, n) for n in v.shape)
    known = v.known(attr, whole)
    if known is None:
        pieces = v.parts(attr, whole)
        if pieces is not None:
            for k, sid in pieces:
                sets.dec(sid, _volume(k))
            return
    sets.release(getattr(v, attr), known)


def add_to_window(sets: SetTable, v: Var, attr: str, idx: Index, key: Box | None,
                  hit: tuple[tuple[Rec, ...], int]) -> int:
    """RecordRead / RecordMutate on a window: ρ(x, n) ∪= R for every cell. Returns the
    number of cells (recorded accesses)."""
    recs, rkey = hit
    arr: np.ndarray = getattr(v, attr)
    if key is None:                                   # a single cell
        old = int(arr[idx])
        new = sets.union(old, rkey, recs)
        if new != old:
            arr[idx] = new
            sets.inc(new, 1)
            sets.dec(old, 1)
            uc = v.uc[attr]
            if uc:
                uc.clear()
        return 1
    sub: np.ndarray = arr[idx]
    size = sub.size
    if size == 0:
        return 0
    first = v.known(attr, key)
    if first is None:
        pieces = v.parts(attr, key)
        if pieces is not None:                        # known sub-windows tile it
            uc = v.uc[attr]
            for k, old in pieces:
                if (new := _add_uniform(sets, arr[_index(k)], old, rkey, recs)) != old:
                    uc.put(k, new)
            return size
        first = sub.item(0)
        if not (sub == first).all():
            _add_uneven(sets, sub, rkey, recs)
            v.note(attr, key, None)
            return size
    if (new := _add_uniform(sets, sub, first, rkey, recs)) != first:
        v.note(attr, key, new)
    return size


def add_to_fresh_window(sets: SetTable, v: Var, attr: str, idx: Index,
                        key: Box | None, hit: tuple[tuple[Rec, ...], int]) -> int:
    """`add_to_window` for a window the array's known windows do not cover (an
    iteration memo's replay of a record into a window that moves with the loop,
    interpreter/amir/memo.py): the same sets and counts, by a scan, and the array's
    known windows forgotten (what they know costs more to keep than it saves)."""
    if key is None:
        return add_to_window(sets, v, attr, idx, key, hit)
    recs, rkey = hit
    sub: np.ndarray = getattr(v, attr)[idx]
    size = sub.size
    if size == 0:
        return 0
    v.uc[attr].clear()
    first = sub.item(0)
    if not (sub == first).all():
        _add_uneven(sets, sub, rkey, recs)
    else:
        _add_uniform(sets, sub, first, rkey, recs)
    return size


def _add_uniform(sets: SetTable, sub: np.ndarray, old: int, rkey: int,
                 recs: tuple[Rec, ...]) -> int:
    """Every cell of `sub` holds set `old`: each gets old ∪ recs, whose id it returns
    (the cells' counts moved from the old set to the new)."""
    new = sets.union(old, rkey, recs)
    if new != old:
        sub.fill(new)
        sets.inc(new, sub.size)
        sets.dec(old, sub.size)
    return new


def _add_uneven(sets: SetTable, sub: np.ndarray, rkey: int,
                recs: tuple[Rec, ...]) -> None:
    vals, lengths = _runs(sub)
    uniq, inv = np.unique(vals, return_inverse=True)
    inv = inv.ravel()
    counts = np.bincount(inv, weights=lengths, minlength=len(uniq)).astype(np.int64)
    new = [sets.union(u, rkey, recs) for u in uniq.tolist()]
    sub[...] = np.repeat(np.asarray(new, dtype=np.int32)[inv], lengths) \
        .reshape(sub.shape)
    for u, n, c in zip(uniq.tolist(), new, counts.tolist()):
        sets.inc(n, c)
        sets.dec(u, c)


def _runs(sub: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The values and lengths of the maximal runs of equal cells of a non-empty
    `sub` (row-major).

    Why runs: rules write whole windows, so an array holds a few runs of equal set
    ids (a few thousand at most) however many cells; its distinct ids are found
    among the runs' values (sorted as np.unique sorts them) instead of by sorting
    every cell."""
    flat = sub.ravel()
    starts = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    starts = np.concatenate((np.zeros(1, dtype=starts.dtype), starts))
    return flat[starts], np.diff(np.append(starts, flat.size))


def _distinct(sub: np.ndarray) -> tuple[list[int], list[int]]:
    """np.unique(sub, return_counts=True), as lists, by runs (`_runs`)."""
    vals, lengths = _runs(sub)
    uniq, inv = np.unique(vals, return_inverse=True)
    counts = np.bincount(inv.ravel(), weights=lengths, minlength=len(uniq))
    return uniq.tolist(), [int(c) for c in counts.tolist()]


def clear_window(sets: SetTable, v: Var, attr: str, idx: Index,
                 key: Box | None) -> None:
    """ClearReads / ClearMutates: ρ(x, n).r (or .m) = ∅ on the window."""
    arr = getattr(v, attr)
    if key is None:
        old = int(arr[idx])
        if old:
            sets.dec(old, 1)
            arr[idx] = 0
            uc = v.uc[attr]
            if uc:
                uc.clear()
        return
    known = v.known(attr, key)
    if known == 0:
        return
    sub = arr[idx]
    if known is None and (pieces := v.parts(attr, key)) is not None:
        for k, old in pieces:
            sets.dec(old, _volume(k))
    else:
        sets.release(sub, known)
    sub.fill(0)
    v.note(attr, key, 0)


def window_sets(v: Var, attr: str, idx: Index, key: Box | None) -> list[int]:
    """The distinct set ids on the window (for the checks)."""
    arr = getattr(v, attr)
    if key is None:
        return [int(arr[idx])]
    known = v.known(attr, key)
    if known is not None:
        return [known]
    pieces = v.parts(attr, key)
    if pieces is not None:
        return list(dict.fromkeys(sid for _, sid in pieces))
    sub = arr[idx]
    if sub.size == 0:
        return []
    first = sub.item(0)
    if (sub == first).all():
        v.learn(attr, key, first)
        return [first]
    sids: list[int] = np.unique(_runs(sub)[0]).tolist()
    return sids
