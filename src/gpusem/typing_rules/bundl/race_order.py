"""The happens-before part of the Bundl race analysis (`race.py`): which barriers a
thread certainly passes between two program points, statically.

A barrier is the `init ψ; s; dec ψ; wait ψ` that S-Partition, S-Claim and S-Lower
wrap around their body, over the unit of the code perspective at which the construct
runs (or the same triple written by hand). Positions are paths of (statement sequence,
item index) from the program's root (`race_accesses.Collector`). Two accesses first
differ at some sequence S, at items lo < hi. They are ordered, for two threads of one
unit of S's code perspective, when

  forward:  a barrier certainly runs after the access at lo and before the one at hi:
            the item at lo if it is a construct ending in a barrier (the access is in
            its body), or any item strictly between that certainly passes a barrier;
  backward: where S can run again before the access at lo runs again (S is a loop body,
            or lies inside one), every way from hi back to lo certainly passes a
            barrier: the item at hi if it ends in one, items after hi or before lo in S;
            leaving S where S is the body of a partition / claim / lower (its end
            barrier); or items after or before the enclosing item in each enclosing
            sequence, up to and including the innermost enclosing loop body.

"Certainly passes a barrier" (`must_barrier`): a partition / claim / lower; the `wait`
of a hand-written triple; a `destruct` whose body certainly passes one (the destructed
threads are the same set of threads); a `while` that certainly runs its body once (the
generator's counted loop `let i = c0; while i < c1` with c0 < c1) and whose body
certainly passes one; an `if` both of whose branches do; a call of a function whose
body does (a function runs at the caller's perspective, T-Function-Call). A counted
loop with c0 >= c1 never runs its body (`static_trips`), and the walk skips it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpusem.calculus.bundl import ast as A
from gpusem.calculus.bundl.walk import child_stmts

Item = tuple[str, A.Stmt]  # ("header" | "stmt", statement): see `flatten`
UnitBuilder = Callable[[Any], list[Any]]  # the unit of a symbolic thread (z3 terms)
MAX_CALL_DEPTH = 8


def flatten(s: A.Stmt) -> list[Item]:
    """Items of a statement list: a let/alloc is a header item followed by its scope."""
    match s:
        case A.Skip():
            return []
        case A.Seq(stmts):
            return [it for x in stmts for it in flatten(x)]
        case A.Decl(body=b) | A.Alloc(body=b):
            return [("header", s)] + flatten(b)
        case _:
            return [("stmt", s)]


@dataclass(frozen=True)
class SeqInfo:
    """One statement sequence of the walk: its unit (of its code perspective), its
    items that certainly pass a barrier over that unit (`must`), and how it nests: the
    enclosing (sequence, item); whether leaving it passes the end barrier of the
    enclosing partition / claim / lower over the parent's unit (`crossing`); whether it
    is a loop body (`loop`); whether its threads are fewer than the parent's unit's
    (`narrower`: a group body, a split arm, a claimed body), so that its own barriers
    do not synchronise the parent's unit; the counter of a counted loop body
    (`counter`: the key of its iteration term, lo, hi; `race_accesses.iteration`)."""

    unit: UnitBuilder
    n: int
    must: frozenset[int]
    parent: tuple[int, int] | None
    crossing: bool
    loop: bool
    narrower: bool
    counter: tuple[int, int, int] | None = None


def static_trips(items: Sequence[Item], k: int) -> int | None:
    """The number of times the `while` at items[k] runs its body when it is the
    generator's counted loop `let i : int = c0; while i <op> c1 { ... }` (the let's
    scope starts with the loop, so i = c0 at the first test): 0 or 1 (at least once),
    None when unknown."""
    loop = items[k][1]
    if k == 0 or not isinstance(loop, A.While):
        return None
    tag, decl = items[k - 1]
    if tag != "header" or not isinstance(decl, A.Decl) or not isinstance(
            decl.init, A.IntLit):
        return None
    first = flatten(decl.body)
    if not first or first[0][1] is not loop:
        return None
    match loop.cond:
        case A.BinOp(op, A.Var(name), A.IntLit(c1)) if name == decl.name:
            c0 = decl.init.value
            holds = {"<": c0 < c1, "<=": c0 <= c1, ">": c0 > c1, ">=": c0 >= c1,
                     "==": c0 == c1, "!=": c0 != c1}.get(op)
            return None if holds is None else int(holds)
    return None


def counted(items: Sequence[Item], k: int) -> tuple[str, int, int] | None:
    """(i, lo, hi) when the `while` at items[k] is a counted loop `let i : int = c0;
    while i < c1 { ...; i = i + 1; }` (or `i <= c1`) that runs (c0 < c1) and whose
    body binds or assigns i nowhere else: then lo <= i < hi throughout its body but
    the last statement (the test held on entry, and i only grows, without overflow
    below hi), and it runs hi - lo times."""
    if static_trips(items, k) != 1:
        return None
    decl, loop = items[k - 1][1], items[k][1]
    assert isinstance(decl, A.Decl) and isinstance(loop, A.While)  # static_trips
    assert isinstance(decl.init, A.IntLit)
    c0, name = decl.init.value, decl.name
    match loop.cond:
        case A.BinOp("<", _, A.IntLit(c1)):
            hi = c1
        case A.BinOp("<=", _, A.IntLit(c1)):
            hi = c1 + 1
        case _:
            return None
    body = flatten(loop.body)
    if not body or not -(2**31) <= c0 < hi <= 2**31 - 1:
        return None
    match body[-1]:
        case ("stmt", A.Assign(x, A.BinOp("+", A.Var(y), A.IntLit(1)))) if x == y == name:
            pass
        case _:
            return None
    # a header's scope is the items after it (checked there), not part of the header
    if any(_binds(s, name) if tag == "stmt" else isinstance(s, A.Decl) and s.name == name
           for tag, s in body[:-1]):
        return None
    return name, c0, hi


def _binds(s: A.Stmt, name: str) -> bool:
    """Whether `s` declares or assigns `name` anywhere inside it."""
    if isinstance(s, A.Assign | A.Decl) and s.name == name:
        return True
    return any(_binds(c, name) for c in child_stmts(s))


def must_barrier(items: Sequence[Item], k: int, fns: dict[str, A.FnDef],
                 depth: int = 0) -> bool:
    """Whether running items[k] certainly passes a barrier over the sequence's unit."""
    tag, s = items[k]
    if tag == "header":
        return False
    match s:
        case A.Partition() | A.Claim() | A.Lower():
            return True
        case A.SyncWait(label):
            return k >= 2 and _triple(items[k - 2:k + 1], label)
        case A.Destruct(body):
            return any_barrier(body, fns, depth)
        case A.While(_, body):
            return static_trips(items, k) == 1 and any_barrier(body, fns, depth)
        case A.If(_, then, orelse):
            return any_barrier(then, fns, depth) and any_barrier(orelse, fns, depth)
        case A.Call(fn) if fn in fns and depth < MAX_CALL_DEPTH:
            return any_barrier(fns[fn].body, fns, depth + 1)
    return False


def any_barrier(s: A.Stmt, fns: dict[str, A.FnDef], depth: int) -> bool:
    items = flatten(s)
    return any(must_barrier(items, k, fns, depth) for k in range(len(items)))


def _triple(items: Sequence[Item], label: str) -> bool:
    kinds = (A.SyncInit, A.SyncDec, A.SyncWait)
    return len(items) == 3 and all(
        tag == "stmt" and isinstance(x, kind) and getattr(x, "label", None) == label
        for (tag, x), kind in zip(items, kinds, strict=True))


def seq_info(items: Sequence[Item], unit: UnitBuilder, fns: dict[str, A.FnDef],
             parent: tuple[int, int] | None, crossing: bool = False, loop: bool = False,
             narrower: bool = False, counter: tuple[int, int, int] | None = None
             ) -> SeqInfo:
    must = frozenset(k for k in range(len(items)) if must_barrier(items, k, fns))
    return SeqInfo(unit, len(items), must, parent, crossing, loop, narrower, counter)


Path = tuple[tuple[int, int], ...]  # (sequence uid, item index) from the root


def precedes(first: Path, then: Path) -> bool:
    """Whether the point `first` comes before `then` in every thread's program order:
    their positions first differ at one statement sequence, `first` at the earlier
    item."""
    for (s1, k1), (s2, k2) in zip(first, then, strict=False):
        if (s1, k1) != (s2, k2):
            return s1 == s2 and k1 < k2
    return False  # one statement (or one inside the other): no order between them


def guard_holds(guard_at: int, first: Path, then: Path) -> bool:
    """Whether the innermost guard (`if` branch, async body, loop that may not run) of
    the access at `first`, which begins at depth `guard_at` of its path (-1: none),
    also holds the point `then`: a thread that reaches `then` after `first` in program
    order, on its path, made that access (below the guard every thread of the path
    does)."""
    g = guard_at
    return g < 0 or g < min(len(first), len(then)) and first[:g] == then[:g] \
        and first[g][0] == then[g][0]


def _exit(seqs: dict[int, SeqInfo], tail: Path) -> bool:
    """From the access at the end of `tail` (the path below the sequence where two
    paths part) up to the end of the enclosing item: a barrier over the unit of that
    sequence certainly runs. Barriers of a narrower sequence do not count; the end
    barrier of a construct counts when the sequence holding the construct is not."""
    ok = [True]
    for uid, _ in tail:  # ok[m]: levels 0..m-1 of the tail are not narrower
        ok.append(ok[-1] and not seqs[uid].narrower)
    for m in range(len(tail) - 1, -1, -1):
        uid, k = tail[m]
        info = seqs[uid]
        if ok[m + 1] and any(j in info.must for j in range(k + 1, info.n)):
            return True
        if ok[m] and info.crossing:
            return True
    return False


def _enter(seqs: dict[int, SeqInfo], tail: Path) -> bool:
    """From the start of the enclosing item down to the access at the end of `tail`:
    a barrier over the unit of the parting sequence certainly runs."""
    for uid, k in tail:
        info = seqs[uid]
        if info.narrower:
            return False
        if any(j in info.must for j in range(k)):
            return True
    return False


def _in_loop(seqs: dict[int, SeqInfo], uid: int) -> bool:
    info: SeqInfo | None = seqs[uid]
    while info is not None:
        if info.loop:
            return True
        info = seqs[info.parent[0]] if info.parent is not None else None
    return False


def _up_to_loop(seqs: dict[int, SeqInfo], uid: int) -> bool:
    """Leaving sequence uid and coming back to it through the innermost enclosing loop
    (it is not itself a loop body): a barrier over an enclosing unit certainly runs."""
    info = seqs[uid]
    while not info.loop:
        if info.crossing:
            return True  # the end barrier of the enclosing partition / claim / lower
        assert info.parent is not None  # `_in_loop` found a loop above
        uid, k = info.parent
        info = seqs[uid]
        if any(j in info.must for j in (*range(k + 1, info.n), *range(k))):
            return True
    return False


Counter = tuple[int, int, int]  # a counted loop's iteration key, lo, hi


def ordered(seqs: dict[int, SeqInfo], pos1: Path, pos2: Path
            ) -> tuple[bool, UnitBuilder | None, tuple[Counter, ...]]:
    """(True, unit, ()) when barriers order the two program points for any two threads
    of one `unit` (the unit of the sequence S where the paths part, at items lo < hi):
    forward, from the access in lo to the one in hi; and, where S can run again,
    backward, from the access in hi to the one in lo of the next run.

    (False, unit, counters) when only the backward order holds and every loop around
    S is a counted one (rule Same-Run, errata "Loop iterations and copies"): then two threads of
    one unit make the accesses unordered only in the same run of S, the same value of
    every counter around it; (False, None, ()) when nothing orders them."""
    for d, ((u1, i), (u2, j)) in enumerate(zip(pos1, pos2, strict=False)):
        if (u1, i) == (u2, j):
            continue
        if u1 != u2:
            return False, None, ()
        info = seqs[u1]
        (lo, low), (hi, high) = sorted(((i, pos1[d + 1:]), (j, pos2[d + 1:])))
        forward = (_exit(seqs, low) or _enter(seqs, high)
                   or any(k in info.must for k in range(lo + 1, hi)))
        backward = not _in_loop(seqs, u1) or (
            _exit(seqs, high) or _enter(seqs, low)
            or any(k in info.must for k in (*range(hi + 1, info.n), *range(lo)))
            or (not info.loop and _up_to_loop(seqs, u1)))
        if forward and backward:
            return True, info.unit, ()
        if backward and not forward and (runs := _counters(seqs, u1)):
            return False, info.unit, runs
        return False, None, ()
    return False, None, ()


def common_runs(seqs: dict[int, SeqInfo], pos1: Path, pos2: Path
                ) -> tuple[Counter, ...] | None:
    """The counters of the loops around both program points (innermost first): ()
    where no loop holds both, None where an uncounted one does (a run of it is no
    tuple of counter values)."""
    shared = None
    for (u1, i), (u2, j) in zip(pos1, pos2, strict=False):
        if u1 != u2:
            break
        shared = u1
        if i != j:
            break
    if shared is None or not _in_loop(seqs, shared):
        return ()
    return _counters(seqs, shared) or None


def _counters(seqs: dict[int, SeqInfo], uid: int) -> tuple[Counter, ...]:
    """The counters of the loops around sequence uid, innermost first, when there are
    some and all are counted loops (a run of uid is then one tuple of their values,
    the same for every thread); () otherwise."""
    out: list[Counter] = []
    info: SeqInfo | None = seqs[uid]
    while info is not None:
        if info.loop:
            if info.counter is None:
                return ()
            out.append(info.counter)
        info = seqs[info.parent[0]] if info.parent is not None else None
    return tuple(out)
