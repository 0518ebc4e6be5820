"""The machine's state up to renaming, the loop invariant's equality (step 3 of
interpreter/amir/symbolic_proof.py; errata "Symbolic sizes: the state up to
renaming"): `fingerprint` computes it from scratch, `Fingerprinter` computes the same
value at every iteration of one run, redoing only what changed since its last call.

The proof snapshots the state at the start of every iteration (1,728 snapshots for
the 32 generated programs of tests/amir/test_symbolic_sizes.py), and `fingerprint`
re-describes every record of every cell each time: 55 of that test's 67 s. Between
two iterations most records and most cells stay as they were, so `Fingerprinter`
keeps, across calls of one run:
  - per record (by its unique id), the part of its description that does not depend
    on barrier counts, with the fields it was computed from (q, who, own, a copy of
    blocks: the machine mutates records in place, records.py's note), reused while
    they compare equal; the p part (relative to the current counts) is recomputed;
  - per variable and array (rd / mu), the NumPy unique/inverse of the set ids, reused
    while the array's bytes are the same;
  - per variable and array, the sorted descriptions and the index bytes, reused while
    the array's bytes are the same, its cells' record sets are the same objects
    holding records of the same versions (`Rec.ver`, bumped by every in-place
    change of a record), and, where a record has a p part, the counts and floors
    are equal.
Every reuse is guarded by an equality with what the value was computed from, so the
result is `fingerprint`'s; tests/amir/test_symbolic_state.py checks it snapshot by
snapshot on generated programs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gpusem.calculus.amir import ast as A
from gpusem.interpreter.amir.machine import Machine

Snapshot = tuple[tuple[Any, ...], dict[Any, int]]


def fingerprint(m: Machine) -> Snapshot:
    """The machine's ρ up to renaming: per live variable its shape and, per cell, the
    set of its records' contents (Rec identity dropped); barrier counts relative to
    the cell's arrive count a: the await count as w - a, each record's observed count
    as p - a, or "passed" when p is at most the least Max any Await on the cell can
    have from now on (a and w never decrease, so every later Await lifts the record
    whichever such p it holds: errata "Symbolic sizes: the state up to renaming").
    Also returns the absolute arrive counts (for the shift check)."""
    counts, floor = _barriers(m)
    recs: dict[int, tuple[Any, ...]] = {}

    def rec(r: Any) -> tuple[Any, ...]:
        got = recs.get(r.id)
        if got is None:
            got = recs[r.id] = (r.q, r.kind, r.who, r.stmt, r.own or (),
                                tuple(sorted(r.blocks.items())),
                                _seen_p(r, counts, floor))
        return got

    out: list[tuple[Any, ...]] = []
    for name in sorted(m.vars):
        v = m.vars[name]
        part: list[Any] = [name, v.key, v.shape, v.allocated]
        for arr in (v.rd, v.mu):
            uniq, inv = np.unique(arr, return_inverse=True)
            descs = [tuple(sorted({rec(r) for r in (m.sets.sets[int(u)] or ())}))
                     for u in uniq]
            order = sorted(set(descs))
            index = {d: i for i, d in enumerate(order)}
            part.append(tuple(order))
            part.append(np.array([index[d] for d in descs],
                                 dtype=np.int64)[inv].tobytes())
        if v.arr is not None and v.awt is not None:
            part.append((v.awt - v.arr).tobytes())
        out.append(tuple(part))
    return tuple(out), counts


class Fingerprinter:
    """`fingerprint` of one machine, called again and again as it runs (see the
    module docstring for what is kept between calls and why that is exact)."""

    def __init__(self) -> None:
        # record id -> (q, who, own, blocks copy, description with no p, without p)
        self._recs: dict[int, tuple[Any, ...]] = {}
        # (variable, array) -> (shape, bytes, unique ids, inverse)
        self._uniq: dict[tuple[str, int], tuple[Any, bytes, Any, Any]] = {}
        # (variable, array) -> (the record sets per unique id, their records'
        # versions, whether any record has a p part, the counts and floors read,
        # sorted order, index bytes)
        self._parts: dict[tuple[str, int], tuple[Any, ...]] = {}

    def __call__(self, m: Machine) -> Snapshot:
        counts, floor = _barriers(m)
        cache = self._recs
        recs: dict[int, tuple[Any, ...]] = {}

        def rec(r: Any) -> tuple[Any, ...]:
            got = recs.get(r.id)
            if got is None:
                old = cache.get(r.id)
                if old is None or old[0] != r.q or old[1] != r.who \
                        or old[2] != r.own or old[3] != r.blocks:
                    base = (r.q, r.kind, r.who, r.stmt, r.own or (),
                            tuple(sorted(r.blocks.items())))
                    old = cache[r.id] = (r.q, r.who, r.own, dict(r.blocks),
                                         (*base, ()), base)
                # without barrier observations the description is complete
                got = recs[r.id] = (old[4] if not r.p else
                                    (*old[5], _seen_p(r, counts, floor)))
            return got

        sets = m.sets.sets
        out: list[tuple[Any, ...]] = []
        for name in sorted(m.vars):
            v = m.vars[name]
            part: list[Any] = [name, v.key, v.shape, v.allocated]
            for which, arr in enumerate((v.rd, v.mu)):
                key = (name, which)
                raw = arr.tobytes()
                had = self._uniq.get(key)
                if had is not None and had[0] == arr.shape and had[1] == raw:
                    uniq, inv = had[2], had[3]
                else:
                    uniq, inv = np.unique(arr, return_inverse=True)
                    self._uniq[key] = (arr.shape, raw, uniq, inv)
                members = [sets[u] for u in uniq.tolist()]
                stamp = [tuple([r.ver for r in ms]) if ms else () for ms in members]
                last = self._parts.get(key)
                if last is not None and had is not None and had[1] == raw \
                        and last[0] == members and last[1] == stamp \
                        and (not last[2] or (last[3] == counts and last[4] == floor)):
                    # the same cells hold the same sets of the same (unchanged)
                    # records, and what their p parts read is unchanged
                    order, index_bytes = last[5], last[6]
                else:
                    descs = [tuple(sorted({rec(r) for r in (ms or ())}))
                             for ms in members]
                    order = tuple(sorted(set(descs)))
                    index = {d: i for i, d in enumerate(order)}
                    index_bytes = np.array([index[d] for d in descs],
                                           dtype=np.int64)[inv].tobytes()
                    has_p = any(r.p for ms in members for r in (ms or ()))
                    self._parts[key] = (members, stamp, has_p, counts, floor, order,
                                        index_bytes)
                part.append(order)
                part.append(index_bytes)
            if v.arr is not None and v.awt is not None:
                part.append((v.awt - v.arr).tobytes())
            out.append(tuple(part))
        return tuple(out), counts


def _barriers(m: Machine) -> tuple[dict[Any, int], dict[Any, float]]:
    """Per barrier cell: its arrive count a, and the least Max any Await on it can
    have from now on (the "passed" floor of `fingerprint`)."""
    counts: dict[Any, int] = {}
    floor: dict[Any, float] = {}
    for v in m.vars.values():
        if v.arr is not None and v.awt is not None:
            lags = _lags(m.prog, v.name)
            for idx in np.ndindex(*v.shape):
                a, w = int(v.arr[idx]), int(v.awt[idx])
                counts[(v.key, idx)] = a
                floor[(v.key, idx)] = min(
                    [a - (n + 1) if n >= 0 else w + n + 1 for n in lags],
                    default=math.inf)
    return counts, floor


def _seen_p(r: Any, counts: dict[Any, int], floor: dict[Any, float]
            ) -> tuple[Any, ...]:
    """The record's observed counts relative to the cells' arrive counts."""
    out = []
    for cell, n in r.p.items():
        if cell not in counts:
            out.append((cell, 2, n))
        elif n <= floor[cell]:            # every later Await on it passes: "passed"
            out.append((cell, 0, 0))
        else:
            out.append((cell, 1, n - counts[cell]))
    return tuple(sorted(out))


_LAGS: dict[tuple[int, str], list[int]] = {}


def _lags(prog: A.AProc, name: str) -> list[int]:
    """The n of every Await on barrier `name` in `prog` (memoised per program)."""
    key = (id(prog), name)
    got = _LAGS.get(key)
    if got is None:
        got = _LAGS[key] = [s.n for s in A.walk(prog.body)
                            if isinstance(s, A.Await) and s.barrier.name == name]
        if len(_LAGS) > 4096:
            _LAGS.clear()
            _LAGS[key] = got
    return got
