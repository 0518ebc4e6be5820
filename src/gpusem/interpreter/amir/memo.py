"""The iteration memo of the AMIR machine (issue 27 item 2): a long loop's iterations
replayed from a table instead of stepped, with the reference's verdict, violation and
statistics. The rules stay in interpreter/amir/machine.py; this module only decides
when an iteration's effect is already known and applies it.

LoopStep runs the body once per y. Two iterations whose entry states have the same
image (amir/memo_image.py: the task-local state relative to the task and to the
barriers' counts) and that take the same control path (the *trace*: every guard, loop
bound, thread mask and local window the body evaluates, found by a dry walk of the
body that changes nothing) apply the same rules to the same records up to that
renaming, so the second one's effect is the first one's, renamed. The table, shared
by every task, maps (image, outside states, trace) to that effect:

  - the local state after the iteration: another image, kept *virtual* (not written
    back) while iterations keep hitting, and materialised when one misses or the loop
    ends (or handed on, still virtual, to the loop right after: LoopMemo.successor);
  - the barrier bases' shift, the statistics' increments (statements, recorded
    accesses, records, lifts, exercised rules);
  - the *outside* effects, applied for real: the records the iteration makes in
    variables that are not local (a TMA's read of A[.., 32k:32k+32]: the window is
    evaluated again at each replay), and λ of the iteration's lifts on the live
    outside records of task ι. Lifts are pointwise, so a record's change depends on
    its state alone: outside records are kept grouped by state ("cohorts") and a
    group moves as one.

Exactness conditions; where one fails the iteration is stepped (never approximated):
no record families (they split), no Alloc/Free/InctaskID in the body, no lift over 𝔾,
only local barriers, outside accesses only to allocated variables, outside checks
that meet only the empty set and no outside attribute both checked and recorded in one
iteration, no outside record of the same statement and threads already in a window
recorded (record dominance would read it), no record of the body's statements in the
record cache at entry and every cache empty at exit (a replay on a non-empty record
cache only of an iteration that lifts), the step budget not crossed inside the
iteration. errata "AMIR iteration memo".
"""

from __future__ import annotations

from typing import Any, Callable

from gpusem.calculus.amir import ast as A
from gpusem.calculus.errors import GpusemError
from gpusem.interpreter.amir.memo_image import (
    SAT,
    SELF,
    Coder,
    Counts,
    OState,
    EncP,
    EncThreads,
    Image,
    NotMemoisable,
    materialize,
    scan,
)
from gpusem.interpreter.amir.memo_record import (
    Chain,
    Entry,
    NewRec,
    Outside,
    Recorder,
)
from gpusem.interpreter.amir.ctrl import Box, CFn, box_key
from gpusem.interpreter.amir.memo_walk import Site, Walk
from gpusem.interpreter.amir.records import Levels, Rec
from gpusem.interpreter.amir.state import MachineState
from gpusem.interpreter.amir.store import add_to_fresh_window, window_sets

Run = Callable[[], None]
_CHECKS = (A.CheckReads, A.CheckMutates)
_RECORDS = (A.RecordRead, A.RecordMutate)
_ACCESSES = _CHECKS + _RECORDS + (A.ClearReads, A.ClearMutates)
_READ_ATTR = (A.CheckReads, A.RecordRead, A.ClearReads)


def memo_eligible(s: A.Loop) -> bool:
    """A loop whose body neither allocates, frees nor starts a task."""
    def ok(body: tuple[A.AStmt, ...]) -> bool:
        for x in body:
            if isinstance(x, (A.Alloc, A.Free, A.IncTaskID)):
                return False
            if isinstance(x, (A.Loop, A.Guard)) and not ok(x.body):
                return False
        return True
    return ok(s.body)


def unexamined(body: tuple[A.AStmt, ...]) -> frozenset[tuple[str, str]]:
    """The (variable, attribute) pairs that some Record* writes and no rule of the
    program examines: no CheckReads (ClearReads) of a variable's "rd", no
    CheckMutates (ClearMutates) of its "mu", no Free of the variable (an input read
    by TMA and never written: A's and B's read records in the ragged GEMM).

    Note: only CheckReads and CheckMutates look into a record set (Figure 7); a clear
    and a free only drop sets, so they are excluded only to keep every cell of an
    examined variable's life as stepping leaves it. Records into such a pair can
    change no verdict, violation or statistic, so the machine (with the memo)
    counts them without storing them (Machine._rule_record_unseen), and the memo
    has no outside records to make again for them (errata 'AMIR iteration memo')."""
    written: set[tuple[str, str]] = set()
    seen: set[tuple[str, str]] = set()
    freed: set[str] = set()
    for s in _walk(body):
        if isinstance(s, A.Free):
            freed.add(s.name)
        elif isinstance(s, _RECORDS):
            written.add((s.access.name, _attr(s)))
        elif isinstance(s, _CHECKS + (A.ClearReads, A.ClearMutates)):
            seen.add((s.access.name, _attr(s)))
    return frozenset(x for x in written - seen if x[0] not in freed)


def saturation(body: tuple[A.AStmt, ...]) -> int:
    """How far below both counts of its cell an observed arrive count is written SAT
    (amir/memo_image.py): the least distance at which every Await of the program
    finds p <= Max whatever the count, now and later (counts never fall).

    Note: Max = a - (n + 1) for n >= 0 needs n + 1; Max = w + n + 1 for n < 0
    needs |n| - 1; at least 1, so that a SAT entry is below every count of now
    (record dominance compares with one). It was 2 + max |n| (4 more iterations of
    warm-up on a 4-stage ring's Await(war, -4) before its images repeat)."""
    need = [x.n + 1 if x.n >= 0 else -x.n - 1 for x in _awaits(body)]
    return max([1, *need])


def _attr(s: A.AStmt) -> str:
    return "rd" if isinstance(s, _READ_ATTR) else "mu"


# Iterations in a row that no image describes (or that cannot be replayed) after
# which one execution of a loop stops asking: its state is not of the kind the memo
# handles, and each failed attempt costs a walk or a scan.
GIVE_UP = 3
# Iterations in a row with atom values never seen (amir/memo_walk.py) after which a
# loop is left to stepping for good: its variable reaches the trace itself (a loop
# over threads, `buf[tid]`), so no iteration can be met again.
NEVER_AGAIN = 16
# Outside accesses per iteration beyond which it is stepped (each is resolved and
# checked at every replay: a body of thousands is not the memo's kind of loop).
MAX_OUTSIDE = 512


class Tables:
    """The images and outside-record groups met, by id: one per machine, shared by
    its loops' memos, so that a chain can pass from one loop to the next."""

    def __init__(self) -> None:
        self.images: dict[Any, int] = {}
        self.by_id: list[Image] = []
        self.groups: dict[OState, int] = {}


class LoopMemo:
    """The memo of one loop statement of one machine.

    `successor`: the memo of the loop that directly follows this one in its body
    (nothing runs between them). This loop then hands its last chain on, virtual,
    instead of writing it back, and the next loop starts from it without a scan
    (`pending`); it also runs through the memo however few its iterations (a
    pipeline's prologue iteration before its main loop). Where the next loop does
    not take the chain (it steps, or runs no iteration), it writes it back first
    (`settle`)."""

    def __init__(self, m: MachineState, s: A.Loop, bound: frozenset[str],
                 body: list[Run], tables: Tables):
        self.m, self.loop, self.body = m, s, body
        self.walk = Walk(m, s, bound)
        self.sat = saturation(m.prog.body)
        self.tables = tables
        self.by_id = tables.by_id
        self.table: dict[Any, Entry] = {}
        self.local: frozenset[str] = frozenset()
        self.hits = self.misses = self.stepped = self.fails = self.fresh = 0
        self.taken = 0                   # executions started from a handed-on chain
        self.coders: dict[int, Coder] = {}
        self.same_sites: dict[int, tuple[list[Site], list[bool]]] = {}
        self.hopeless = False
        self.successor: LoopMemo | None = None
        self.pending: Chain | None = None
        self.bounds: tuple[CFn, CFn] | None = None       # the loop's, compiled
        self.recorders = frozenset(id(x) for x in _walk(s.body)
                                   if isinstance(x, _RECORDS))

    def close(self) -> None:
        """Drop what refers back to the machine (Machine.close)."""
        self.body, self.successor, self.pending = [], None, None
        self.walk.close()

    def least(self, default: int) -> int:
        """Iterations from which an execution runs through the memo: one if the
        next loop will (its bounds are evaluated now: nothing runs between)."""
        nxt = self.successor
        if nxt is not None and nxt.bounds is not None:
            lo, hi = nxt.bounds
            env = self.m.env
            try:
                if hi(env) - lo(env) >= nxt.least(default):
                    return 1
            except GpusemError:
                pass                     # its LoopStep reports it, when it runs
        return default

    def settle(self) -> None:
        """Write back a chain handed on by the loop before, if any."""
        chain, self.pending = self.pending, None
        self._physical(chain)

    # ------------------------------------------------------------ the loop

    def run(self, lo: int, hi: int, every: int) -> None:
        """LoopStep for y = lo .. hi - 1, through the table where it can."""
        m, env, var = self.m, self.m.env, self.loop.var
        local = tuple(sorted(n for n, v in m.vars.items()
                             if v.allocated and v.key[1] > m.task_allocs))
        self.walk.reset(frozenset(local))
        self.coders = {}
        chain, self.pending = self.pending, None
        if chain is not None and chain.local != local:
            self._physical(chain)
            chain = None
        self.taken += chain is not None
        self.fails = 0
        done = False
        try:
            for y in range(lo, hi):
                env[var] = y
                if every and (y - lo) % every == every - 1:
                    m.guard.check(self.loop.origin, "LoopStep")
                if self.fails >= GIVE_UP or self.hopeless:
                    self._physical(chain)
                    chain = None
                    self._step()
                    continue
                chain = self._iteration(chain, local)
            done = True
        finally:
            if done and self.successor is not None and chain is not None:
                self.successor.pending = chain
            else:
                self._physical(chain)

    def _iteration(self, chain: Chain | None, local: tuple[str, ...]) -> Chain | None:
        m = self.m
        walked = self.walk()
        self.fresh = self.fresh + 1 if self.walk.fresh else 0
        self.hopeless = self.fresh >= NEVER_AGAIN
        if walked is not None and len(walked[1]) > MAX_OUTSIDE:
            self.hopeless, walked = True, None
        if self.hopeless or (walked is None and self.walk.new_trace):
            # Note: a path never met is recorded like any miss (the first task's
            # ring fill, k = 1 .. 4, met again by the next task of its row); a
            # loop whose paths never come back is left to stepping (NEVER_AGAIN).
            self._physical(chain)
            self._step()
            return None
        outs = None if walked is None else self._resolve(walked[1])
        ok = outs is not None and self._outside_ok(outs)
        if ok and chain is None:
            chain = self._start(local)
        if not ok or chain is None:
            self.fails += 1
            self._physical(chain)
            self._step()
            return None
        assert walked is not None and outs is not None   # ok
        key = (chain.image, frozenset(chain.cohorts), walked[0])
        entry = self.table.get(key)
        if entry is not None and m.stats.statements + entry.stats[0] <= m.max_steps \
                and (entry.stats[3] or not m.rec_cache) \
                and (not entry.guarded or self._apart(entry, outs)):
            self.hits += 1
            self.fails = 0
            return self._replay(chain, entry, outs)
        self._physical(chain)
        if entry is not None:
            self._step()
            return None
        self.misses += 1
        after = self._record(chain, key, outs)
        self.fails = 0 if after is not None else self.fails + 1
        return after

    def _step(self) -> None:
        self.stepped += 1
        for st in self.body:
            st()

    def _physical(self, chain: Chain | None) -> None:
        """Write a virtual chain's image into the machine."""
        if chain is not None and not chain.physical:
            chain.labels, chain.sids = materialize(
                self.m, self.by_id[chain.image], chain.bases, self.sat,
                self.by_id[chain.held], chain.sids)
            chain.held = chain.image
            chain.physical = True

    def _start(self, local: tuple[str, ...]) -> Chain | None:
        """The chain of the machine's state now (a scan), or None if no image
        describes it, or the record cache holds a record of a statement of the
        body (a record the iteration could take again instead of making one).

        Note: the other entries of the record cache (the records made since the
        last lift, before the loop: D's initial write before a pipeline's first
        iteration) and the check and union caches (pure caches of the epoch) do not
        change what the body does before its first lift, and the iteration's lifts
        clear them: an entry is only stored when all are empty at the iteration's
        end, and is replayed on a non-empty record cache only if the iteration
        lifts (`_iteration`), so a replay's closing `new_epoch` is what stepping
        does."""
        m = self.m
        if any(key[0] in self.recorders for key in m.rec_cache):
            return None
        try:
            image, labels, sids = scan(m, local, self.sat)
            coder = Coder(m, image.counts, self.sat)
            cohorts: dict[int, list[Rec]] = {}
            for r in self._outside_recs(labels):
                cohorts.setdefault(self._group(coder.outside(r)), []).append(r)
        except NotMemoisable:
            return None
        bases = {name: k.base for name, k in image.counts.items()}
        at = self._intern(image)
        return Chain(at, bases, cohorts, True, local, labels, at, sids)

    def _group(self, g: OState) -> int:
        groups = self.tables.groups
        got = groups.get(g)
        if got is None:
            got = groups[g] = len(groups)
        return got

    def _intern(self, image: Image) -> int:
        images = self.tables.images
        got = images.get(image.key)
        if got is None:
            got = images[image.key] = len(self.by_id)
            self.by_id.append(image)
        return got

    def _outside_recs(self, labels: list[Rec]) -> list[Rec]:
        """The live records of task ι (or of 𝔾) held by no local cell: those the
        iteration's lifts can reach besides the local ones."""
        m, held = self.m, {r.id for r in labels}
        seen: dict[int, Rec] = {}
        for lst in m.lifts.task_recs.get(m.task, []):
            for r in lst:
                if r.live > 0 and r.id not in held:
                    seen[r.id] = r
        for r in m.lifts.all_recs:
            if r.live > 0 and r.id not in held:
                seen[r.id] = r
        return list(seen.values())

    def _resolve(self, sites: list[Site]) -> list[Outside] | None:
        """E#-Acc of each outside access on the path, its loop variables set as the
        walk found them (None: one traps or is malformed; stepped, it reports so)."""
        m, env = self.m, self.m.env
        out: list[Outside] = []
        again = self._again(sites)
        try:
            for (s, acc, win, at, mask), same in zip(sites, again):
                if same:                 # the access of the site before, same values
                    _, v, idx, box, _ = out[-1]
                    out.append((s, v, idx, box, mask))
                    continue
                for x, val in at:
                    env[x] = val
                try:
                    v, idx, box = m.resolve(acc.name, len(acc.coords), win, s.origin)
                finally:
                    for x, _ in at:
                        env.pop(x, None)
                out.append((s, v, idx, box, mask))
        except GpusemError:
            return None
        return out

    def _again(self, sites: list[Site]) -> list[bool]:
        """Which sites access what the site before accesses (a check, clear and
        record of one access: Figure 5's sequence), with the same loop variables:
        E#-Acc of those is the one before's. Found once per list of sites (the
        walk's lists are cached and kept)."""
        got = self.same_sites.get(id(sites))
        if got is None or got[0] is not sites:
            flags = [i > 0 and sites[i - 1][1] == x[1] and sites[i - 1][3] == x[3]
                     for i, x in enumerate(sites)]
            got = self.same_sites[id(sites)] = (sites, flags)
        return got[1]

    def _outside_ok(self, outs: list[Outside]) -> bool:
        """Every outside check and clear meets only ∅, in the state before the
        iteration and after no record of the iteration on the same cells: so it
        changes nothing and finds nothing, whatever the records' states (a write to
        a fresh window of a global: check, check, clear, clear, record)."""
        written: dict[tuple[str, str], tuple[Box, list[Box]]] = {}
        unseen = self.m.unseen
        for s, v, idx, box, _ in outs:
            attr = _attr(s)
            if (v.name, attr) in unseen:
                continue                 # a record no check meets (`unexamined`)
            cells = box_key(idx)
            if isinstance(s, _RECORDS):
                hull, boxes = written.get((v.name, attr), (cells, []))
                boxes.append(cells)
                written[v.name, attr] = (_hull(hull, cells), boxes)
                continue
            if any(window_sets(v, attr, idx, box)):
                return False
            seen = written.get((v.name, attr))
            if seen is not None and _meet(cells, seen[0]) \
                    and any(_meet(cells, w) for w in seen[1]):
                return False
        return True

    def _apart(self, e: Entry, outs: list[Outside]) -> bool:
        """No record of a made record's statement and threads in its window."""
        m = self.m
        for j, attr, i in e.events:
            _, v, idx, box, _ = outs[j]
            stmt, _, who, _, _ = e.new[i].enc
            th = (m.task, who[1]) if who[0] == SELF else who
            for sid in window_sets(v, attr, idx, box):
                for r in m.sets.sets[sid] or ():
                    if r.stmt == stmt and r.who == th:
                        return False
        return True

    # ------------------------------------------------------------ record / replay

    def _record(self, chain: Chain, key: Any, outs: list[Outside]) -> Chain | None:
        """Step the iteration, watching it; store its effect under `key`."""
        rec = Recorder(self.m, chain, outs, self.coder(chain), self.sat, self._group)
        m, st = self.m, self.m.stats
        m.observer = rec.observe
        before, st.exercised = st.exercised, set()
        try:
            self._step()
        finally:
            m.observer = None
            rec.exercised = frozenset(st.exercised)
            before |= st.exercised
            st.exercised = before
        entry = rec.finish(self._intern)
        if entry is None:
            return None
        self.table[key] = entry
        return rec.after

    def _replay(self, chain: Chain, e: Entry, outs: list[Outside]) -> Chain:
        m = self.m
        st = m.stats
        st.statements += e.stats[0]
        st.recorded_accesses += e.stats[1]
        st.records += e.stats[2]
        st.lifts += e.stats[3]
        st.exercised |= e.exercised
        m.guard.tick(self.loop.origin, "LoopStep")
        coder = self.coder(chain)
        made = [self._make(coder, x) for x in e.new]
        for j, attr, i in e.events:
            _, v, idx, box, _ = outs[j]
            add_to_fresh_window(m.sets, v, attr, idx, box, ((made[i],), made[i].id))
        cohorts: dict[int, list[Rec]] = {}
        for r, x in zip(made, e.new):
            _apply(m, _decode(coder, x.end_blocks, x.end_p), (r,))
            cohorts.setdefault(x.end_state, []).append(r)
        for g, recs in chain.cohorts.items():
            after, blocks, p = e.change[g]
            # Note: a record a union dropped (dominated) is in no cell: no rule can
            # observe it again, whatever λ it is given; it leaves the groups.
            live = [r for r in recs if r.live > 0]
            if live and (blocks or p):
                _apply(m, _decode(coder, blocks, p), live)
            if live:
                cohorts.setdefault(after, []).extend(live)
        m.new_epoch()
        bases = {n: b + e.shift[n] for n, b in chain.bases.items()}
        return Chain(e.image, bases, cohorts, False, chain.local, [], chain.held,
                     chain.sids)

    def coder(self, chain: Chain) -> Coder:
        """The coder of the chain's state (its image's counts on its bases): one
        per image and execution of the loop (the task and the local variables are
        the execution's), its bases set to the chain's."""
        got = self.coders.get(chain.image)
        if got is None:
            counts = {n: Counts(chain.bases[n], k.arr, k.awt)
                      for n, k in self.by_id[chain.image].counts.items()}
            got = self.coders[chain.image] = Coder(self.m, counts, self.sat)
        else:
            for n, k in got.counts.items():
                k.base = chain.bases[n]
        return got

    def _make(self, coder: Coder, x: NewRec) -> Rec:
        stmt, kind, who, origin, q = x.enc
        r = Rec(q, {coder.unthreads(ts): lv for ts, lv in x.made_blocks}, None,
                dict(coder.un_p(e) for e in x.made_p), kind, coder.unthreads(who),
                stmt, origin)
        self.m.lifts.register(r)
        for cell in r.p:
            self.m.lifts.index_barrier(cell, r)
        return r


Decoded = tuple[list[tuple[Any, Levels]], list[tuple[Any, int]]]


def _decode(coder: Coder, blocks: tuple[tuple[EncThreads, Levels], ...],
            p: tuple[EncP, ...]) -> Decoded:
    """An iteration's change to the records of one group, in the state of now (the
    chain's task and bases): once per group, not once per record of it."""
    for e in p:
        assert e[0] == 1 or e[3] is not SAT          # exact, relative to entry bases
    return ([(coder.unthreads(ts), lv) for ts, lv in blocks],
            [coder.un_p(e) for e in p])


def _apply(m: MachineState, change: Decoded, recs: list[Rec] | tuple[Rec]) -> None:
    """Set the blocks an iteration changed in each record and add the p entries it
    gained, as the lifts left them (and index it as the lifts would have)."""
    # Note: only what changed is indexed, as the lifts index it (augment then
    # register; Arrive indexes the cells it adds): r was indexed for the rest when
    # it got it, and a live record's entries stay while their barrier lives.
    blocks, p = change
    lifts = m.lifts
    for r in recs:
        if blocks or p:
            r.ver += 1
        if blocks:
            rb, rv = r.blocks, r.vis
            for t, lv in blocks:
                rb[t] = lv
                rv[t] = lv[1]
            lifts.register(r)
        for cell, c in p:
            r.p[cell] = c
            lifts.index_barrier(cell, r)


def _hull(a: Box, b: Box) -> Box:
    return tuple((min(lo, blo), max(hi, bhi)) for (lo, hi), (blo, bhi) in zip(a, b))


def _meet(a: Box, b: Box) -> bool:
    return all(lo < bhi and blo < hi for (lo, hi), (blo, bhi) in zip(a, b))


def _walk(body: tuple[A.AStmt, ...]) -> list[A.AStmt]:
    """Every statement of `body`, nested ones included."""
    out: list[A.AStmt] = []
    for s in body:
        out.append(s)
        if isinstance(s, (A.Loop, A.Guard)):
            out += _walk(s.body)
    return out


def _awaits(body: tuple[A.AStmt, ...]) -> list[A.Await]:
    out: list[A.Await] = []
    for s in body:
        if isinstance(s, A.Await):
            out.append(s)
        elif isinstance(s, (A.Loop, A.Guard)):
            out += _awaits(s.body)
    return out
