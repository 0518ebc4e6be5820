"""The AMIR store's known uniform windows (interpreter/amir/store.py `Uniform`, issue
27.2): bucketed by leading points, they must answer every query as a scan of the array
would, and as a look at every entry (the dict it replaced) would. Random writes,
clears and checks on a four-dimensional buffer (a multi-stage ring: points and ranges
in the leading dimensions, sub-tiles, empty windows)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from gpusem.calculus.span import NO_SPAN
from gpusem.interpreter.amir.records import new_records
from gpusem.interpreter.amir.store import (
    SetTable,
    Var,
    _distinct,
    add_to_window,
    clear_window,
    window_sets,
)

SHAPE = (2, 3, 8, 8)


def random_box(rng: random.Random) -> tuple[tuple[int, int], ...]:
    box = []
    for d, n in enumerate(SHAPE):
        if d < 2 and rng.random() < .7:
            lo = rng.randrange(n)
            box.append((lo, lo + 1))                 # a point: bucketed
        else:
            lo = rng.randrange(n + 1)
            hi = rng.randint(lo, n) if rng.random() < .95 else lo  # sometimes empty
            box.append((lo, hi))
    return tuple(box)


def every_entry_known(vals: dict, key) -> int | None:
    """The query as the unbucketed dict answered it: the first entry holding key."""
    sid = vals.get(key)
    if sid is not None or not key:
        return sid
    for k, s in vals.items():
        if all(a <= lo and hi <= b for (a, b), (lo, hi) in zip(k, key)):
            return s
    return None


def every_entry_sets(vals: dict, key) -> list[int]:
    """window_sets on an empty window as the unbucketed dict answered it: the entry
    holding it, else the entries it holds, in order (an empty window holds the empty
    entries a clear of an empty window leaves)."""
    sid = every_entry_known(vals, key)
    if sid is not None:
        return [sid]
    inside = [s for k, s in vals.items()
              if all(lo <= a and b <= hi for (a, b), (lo, hi) in zip(k, key))]
    return list(dict.fromkeys(inside))


@pytest.mark.parametrize("seed", range(12))
def test_known_windows_agree_with_the_arrays(seed):
    rng = random.Random(seed)
    sets, v = SetTable(), Var("x", SHAPE, False, ("x", 1), True)
    recs = [new_records(1, True, 0, 0, {}, (0, 1 << i), "read", i, NO_SPAN)
            for i in range(4)]
    for _ in range(400):
        key = random_box(rng)
        idx = tuple(slice(lo, hi) for lo, hi in key)
        op = rng.random()
        if op < .5:
            r = rng.choice(recs)
            add_to_window(sets, v, "rd", idx, key, ((r,), r.id))
        elif op < .65:
            clear_window(sets, v, "rd", idx, key)
        else:
            before = every_entry_sets(dict(v.uc["rd"].vals), key)
            got = window_sets(v, "rd", idx, key)
            if v.rd[idx].size:
                assert sorted(got) == np.unique(v.rd[idx]).tolist()
            else:                        # an empty window: what the entries say
                assert got == before
        cache = v.uc["rd"]
        for k, sid in cache.vals.items():
            win = v.rd[tuple(slice(lo, hi) for lo, hi in k)]
            assert win.size == 0 or (win == sid).all(), (k, sid)
        probe = random_box(rng)
        assert cache.known(probe) == every_entry_known(cache.vals, probe)
        if all(lo < hi for lo, hi in probe):
            pieces = cache.parts(probe)
            if pieces is not None:
                win = v.rd[tuple(slice(lo, hi) for lo, hi in probe)]
                assert sorted({s for _, s in pieces}) == np.unique(win).tolist()
    assert len(cache.vals) > 16          # it remembered more than the old limit
    # every set's count is the cells that hold it (uneven adds and clears included)
    ids, cells = np.unique(v.rd, return_counts=True)
    held = {s: n for s, n in zip(ids.tolist(), cells.tolist()) if s}
    assert held == {s: n for s, n in enumerate(sets.ref) if n}


@pytest.mark.parametrize("seed", range(6))
def test_runs_count_what_unique_counts(seed):
    """store._distinct (and the uneven add, the release and window_sets, which read
    an array by its runs of equal cells) gives np.unique's ids and counts over every
    cell: arrays of one run to thousands, whole or a strided window of one."""
    rng = np.random.default_rng(seed)
    for runs in (1, 3, 40, 5000):
        flat = np.repeat(rng.integers(0, 7, runs), rng.integers(1, 9, runs))
        a = np.resize(flat.astype(np.int32), (4, 6, 50))
        for x in (a, a[1:3, ::2, 5:45], a[2, 3]):
            ids, cells = np.unique(x, return_counts=True)
            assert _distinct(x) == (ids.tolist(), cells.tolist())


def test_a_record_added_again_to_a_cell_that_holds_it_stays():
    """`SetTable.union` dropped the old records a new one dominates; `dominates` is
    reflexive, so a record re-added to a cell that already held it was dropped and,
    being in `have`, not added back: the cell came out empty (helper amirmemo's note,
    stop 28). The same for a window, through `add_to_window`."""
    sets = SetTable()
    r = new_records(1, True, 0, 0, {}, (0, 1), "read", 0, NO_SPAN)
    once = sets.union(0, r.id, (r,))
    assert [x.id for x in sets.sets[once]] == [r.id]
    twice = sets.union(once, r.id, (r,))
    assert [x.id for x in sets.sets[twice]] == [r.id]
    v = Var("x", SHAPE, False, ("x", 1), True)
    key = tuple((0, n) for n in SHAPE)
    idx = tuple(slice(lo, hi) for lo, hi in key)
    for _ in range(2):
        add_to_window(sets, v, "rd", idx, key, ((r,), r.id))
    assert {x.id for x in sets.sets[int(v.rd[idx].flat[0])]} == {r.id}
