"""What the Bundl race analysis (`race.py`) settles about whole regions before it
decides pairs: which regions always hold zeros, which keep the cells any read sees
(stable), and which only ever receive one value per cell (single-valued). Each is the
greatest set of regions for which z3 proves the property assuming it of every region
in the set (reads of an assumed region are read as the property says,
`race_accesses.Collector.read_at`), and each is sound by induction over an execution:
the first access to break an assumption would be computed from values that still
keep them, which the check excludes. See proofs_notes/errata.md ("Uniform stores are
one write" (4), "Stable regions" (6), "Loop iterations and copies" (7)).

The budgets are z3 resource units per check (`rlimit`), never wall time (race.py's
Note). Conventions as in `race_accesses`: `c` the collector of one program, a builder
a function of one symbolic thread `Th`.
"""

from __future__ import annotations

import z3
from gpusem.typing_rules.bundl.race_accesses import (
    Access,
    Collector,
    Th,
    bv,
)
from gpusem.typing_rules.bundl.race_initial import known_init, zero
from gpusem.typing_rules.bundl.race_order import precedes

MAX_SINGLE_WRITES = 8  # Single-Valued is pairwise: regions with more writes are skipped
# ... and a convenience, not a need: one check may spend a tenth of a pair's budget
# (two float32 sums that differ can take a whole pair budget to tell apart)
SINGLE_SHARE = 10


def _solver(rlimit: int, timeout_ms: int | None) -> z3.Solver:
    solver = z3.Solver()
    solver.set("rlimit", rlimit)  # resource units, not time (race.py's Note)
    if timeout_ms is not None:
        solver.set("timeout", timeout_ms)
    return solver


def settle_zero_regions(c: Collector, rlimit: int, timeout_ms: int | None = None
                        ) -> None:
    """The allocated regions every write to which stores zero: S-Alloc-* fill a
    region with zeros, so such a region holds zeros at every moment, whatever the
    order of its accesses (they cannot race). The greatest such set: assume every
    written region, drop one whose write z3 cannot prove zero (reading the assumed
    regions as zeros), until none drops; sound by induction over an execution (the
    first nonzero store into an assumed region would copy a nonzero out of one)."""
    candidates = {a.view.key for a in c.accesses
                  if a.kind == "w" and a.view.key[0] == "a"}
    solver = _solver(rlimit, timeout_ms)
    changed = True
    while changed and candidates:
        changed = False
        c.zero_regions = set(candidates)
        for a in c.accesses:
            if a.kind != "w" or a.view.key not in candidates:
                continue
            if a.value is None or not stores_zero(c, solver, a):
                candidates.discard(a.view.key)
                changed = True
    c.zero_regions = candidates


def settle_local_zero(c: Collector, rlimit: int, timeout_ms: int | None = None
                      ) -> None:
    """Local-Zero (errata "Loop iterations and copies"): the Local arrays every
    write to which stores zero, reading the assumed ones as zeros, hold zeros (S-Alloc-
    Local fills them, only the thread's own writes land); the greatest such set, as
    `settle_zero_regions`."""
    candidates = {w.view.key for w in c.local_writes}
    solver = _solver(rlimit, timeout_ms)
    changed = True
    while changed and candidates:
        changed = False
        c.local_zero = set(candidates)
        for w in c.local_writes:
            if w.view.key in candidates and (
                    w.value is None or not stores_zero(c, solver, w)):
                candidates.discard(w.view.key)
                changed = True
    c.local_zero = candidates


def settle_stable_globals(c: Collector, rlimit: int, timeout_ms: int | None = None
                          ) -> None:
    """Two sets at once, each assumed of the other (`race_accesses.read_at` reads
    both): the *stable* regions and the *single-valued* ones.

    Stable: the written globals and allocated regions (S-Alloc-*: zeros) whose cells
    that anything reads keep their initial contents: every write into them either
    stores the cell's initial value or lands on no cell any read (of any thread, the
    writer's own included) touches. Sound by induction over an execution: the first
    read to return a value that is not the initial one reads a cell some earlier write
    changed, and that write's address and value were computed from initial contents,
    which the check excludes. So no read-write pair of such a region can race; its
    write-write pairs are still checked by race.py. (Issue 24: `g[(g[4] % 8 + 8) % 8]
    = -2` and `g[0] = g[0]` were declined as racy.)

    Single-Valued (rule, errata "Loop iterations and copies"): a Shared / Global
    region into whose every cell all writes (of any threads, any sites, one region
    instance) store one value. A read of such a cell that the reading thread itself
    certainly wrote earlier in program order returns that value, whatever the
    schedule: the last write before the read stored it. So `memcpy(t, g); memcpy(g,
    t)` copies g's own contents back (issue 24: a region copied out and back)."""
    inits = {g.name: g for g in c.prog.globals}
    stable = {a.view.key for a in c.accesses if a.kind == "w" and (
        a.view.key[0] == "a" or a.view.key[0] == "g"
        and known_init(inits[str(a.view.key[1])]))}
    writes: dict[tuple[object, ...], list[Access]] = {}
    for a in c.accesses:
        if a.kind == "w":
            writes.setdefault(a.view.key, []).append(a)
    # only where some read could use it: one after a certain write of its own thread
    used = {r.view.key for r in c.accesses if r.kind == "r" and any(
        w.certain and precedes(w.pos, r.pos) for w in writes.get(r.view.key, []))}
    single = {k for k, ws in writes.items() if k in used and len(
        ws) <= MAX_SINGLE_WRITES and all(w.value is not None for w in ws)}
    solver = _solver(rlimit, timeout_ms)
    cheap = _solver(max(rlimit // SINGLE_SHARE, 1), timeout_ms)
    # Allocated regions are dropped before globals, stable before single-valued: a
    # scratch region copied from a global is not stable (it starts as zeros) but may
    # be single-valued, and dropping it first lets the global it is copied back into
    # stay stable (a global checked in the same round would see the scratch as zeros).
    while True:
        c.stable_regions, c.single_regions = set(stable), set(single)
        drop: set[tuple[object, ...]] = set()
        for kind in ("a", "g"):
            drop = {k for k in stable if k[0] == kind and not all(
                _keeps(c, solver, w) for w in writes[k])}
            if drop:
                break
        if drop:
            stable -= drop
            continue
        drop = {k for k in single if not all(
            one_value(c, cheap, w1, w2) for i, w1 in enumerate(writes[k])
            for w2 in writes[k][i:])}
        if not drop:
            break
        single -= drop
    c.stable_regions, c.single_regions = stable, single


def _keeps(c: Collector, solver: z3.Solver, w: Access) -> bool:
    return w.value is not None and all(
        keeps_read_cell(c, solver, w, r) for r in c.accesses
        if r.kind == "r" and r.view.key == w.view.key)


def keeps_read_cell(c: Collector, solver: z3.Solver, w: Access, r: Access) -> bool:
    """z3 proves that no thread's write `w` changes a cell that a thread's read
    `r` touches (the same thread or two)."""
    tw, tr = Th("sw", c.T), Th("sr", c.T)
    assert w.value is not None  # the caller's guard
    n = bv(c.B * c.T)
    addr = w.addr(tw)
    cons = [z3.ULT(tw.t, n), z3.ULT(tr.t, n), z3.ULT(addr, bv(w.view.size)),
            r.covers(tr, addr)]
    cons += [f(tw) for f in w.path] + [f(tr) for f in r.path]
    cons.append(w.value(tw, addr) != c.initial(w.view.key, addr, w.view.elem))
    return _unsat(solver, cons, tw, tr)


def one_value(c: Collector, solver: z3.Solver, w1: Access, w2: Access) -> bool:
    """z3 proves that writes `w1` and `w2` (two threads, or one) store one value into
    any cell of one region instance that both touch."""
    assert w1.value is not None and w2.value is not None  # the caller's guard
    t1, t2 = Th("v1", c.T), Th("v2", c.T)
    n = bv(c.B * c.T)
    addr = w1.addr(t1)
    cons = [z3.ULT(t1.t, n), z3.ULT(t2.t, n), z3.ULT(addr, bv(w1.view.size)),
            w2.covers(t2, addr)]
    cons += [f(t1) for f in w1.path] + [f(t2) for f in w2.path]
    if w1 is w2 and not any(c.seqs[uid].loop for uid, _ in w1.pos):
        cons.append(t1.t != t2.t)  # a site outside loops runs once per thread
    u1, u2 = w1.view.unit(t1), w2.view.unit(t2)
    cons += [x == y for x, y in zip(u1, u2, strict=False)]
    if _unsat(solver, cons, t1, t2):  # most pairs share no cell: no values needed
        return True
    v1, v2 = w1.value(t1, addr), w2.value(t2, addr)
    if v1.sort() != v2.sort():
        return False
    cons.append(v1 != v2)  # SMT equality: the same bits
    return _unsat(solver, cons, t1, t2)


def stores_zero(c: Collector, solver: z3.Solver, a: Access) -> bool:
    th = Th("zero", c.T)
    assert a.value is not None  # the caller's guard
    addr = a.addr(th)
    value = a.value(th, addr)
    return _unsat(solver, [value != zero(a.view.elem)], th)


def _unsat(solver: z3.Solver, cons: list[object], *threads: Th) -> bool:
    solver.push()
    try:
        solver.add(*cons, *[x for th in threads for x in th.cons])
        return bool(solver.check() == z3.unsat)
    finally:
        solver.pop()
