"""The AMIR abstract machine: big-step semantics of Exo-GPU Figures 21, 22 and 7 with
Appendix B, run with concrete control values (Section 5.3). Entry: `check_amir`.

Judgment ⟨s#, ι, σ, ρ⟩ ⇓ ι', σ', ρ' (or a violation). Each rule is one `_rule_*`
compiler below, named after it; the checks are in interpreter/amir/checks.py, records
(R, W, A) in interpreter/amir/records.py, the configuration ⟨σ, ι, ρ⟩ and E#-Acc in
interpreter/amir/state.py (`MachineState`, which `Machine` extends).

Conventions (paper -> Python):
  σ (control environment)     -> `Machine.env` (dict)
  ι (task id)                 -> `Machine.task`
  ρ (synchronization env)     -> `Machine.vars`: per variable x a `Var` whose numpy
                                 arrays `rd`, `mu` hold, per cell, the id of ρ(x, n).r
                                 and ρ(x, n).m in the interned `SetTable`; barriers
                                 add `arr`, `awt` (the counts (a, w))
  g_{s#}(σ, ι)                -> the statement's compiled thread mapping + `task`

Representation (the speed target of issue 3: the tiled GEMM at N = 1024 in <= 2 s on
one core), and why:
  - one Python object per element access is ~10^8 objects at N = 1024: out. Instead a
    Record* statement makes ONE record (t = true) or one *family* of per-thread records
    (t = false, see amir/records) per execution, shared by every cell of its window;
  - cells hold small integer ids of interned record *sets* in dense NumPy arrays
    (interpreter/amir/store.py): a window whose cells share one set id is extended with
    one memoised union and one `fill`; windows known to be uniform (or tiled by known
    uniform sub-windows) skip the NumPy scan. We chose dense arrays over a pure box
    list because windows of real kernels overlap unevenly (a TMA stage write vs wgmma
    sub-tile reads): arrays handle any overlap, the cache recovers the box structure;
  - lift applies λ to record objects in place, exact because λ is pointwise; a lift by
    task ι visits only live records some thread of ι (or of all of 𝔾) can see, indexed
    by timeline; Await visits only the records registered with its barrier cell;
    records in no cell are dead and skipped; a record dominated by a newer one of the
    same statement and threads leaves the cell (exact for verdicts);
  - consecutive checks/clears/records of one access evaluate the window once; control
    expressions, windows and thread mappings are compiled to Python closures;
  - the cyclic GC is paused during a run (no cycles are made; its full passes over
    millions of live objects made the run superlinear).
  Provenance survives: every record keeps its access's GPU IR span, threads, timeline.
"""

from __future__ import annotations

import gc
from typing import Callable, Mapping, Sequence, cast

import numpy as np
from gpusem.calculus.amir import ast as A
from gpusem.calculus.errors import BadInput, BudgetExhausted
from gpusem.interpreter.amir.checks import (
    Verdict,
    Violation,
    access_violation,
    barrier_violation,
    record_visible,
)
from gpusem.interpreter.amir.ctrl import (
    Box,
    Index,
    ThreadsFn,
    Window,
    compile_b,
    compile_c,
    compile_threads,
    compile_window,
)
from gpusem.interpreter.amir.records import (
    ALL,
    BarrierCell,
    Rec,
    Threads,
    make_levels,
    new_records,
    qmask,
)
from gpusem.interpreter.amir.memo import LoopMemo, Tables, memo_eligible, unexamined
from gpusem.interpreter.amir.state import MachineState, RecKey, absolute_cell
from gpusem.interpreter.amir.store import (
    Var,
    add_to_window,
    clear_window,
    window_sets,
)

DEFAULT_MAX_STEPS = 200_000_000
# A loop runs through the iteration memo from this many iterations on: below it the
# entry scans cost more than the replays save.
MEMO_MIN_ITERATIONS = 8
_ACCESS_OPS = (A.RecordRead, A.RecordMutate, A.ClearReads, A.ClearMutates,
               A.CheckReads, A.CheckMutates)
AccessStmt = (A.RecordRead | A.RecordMutate | A.ClearReads | A.ClearMutates
              | A.CheckReads | A.CheckMutates)
Run = Callable[[], None]                       # a compiled statement
AccessOp = Callable[[Var, Index, Box | None], None]  # one judgment on resolved cells


def check_amir(prog: A.AProc, defines: Mapping[str, int], *,
               max_steps: int = DEFAULT_MAX_STEPS, memo: bool = True) -> Verdict:
    """Run the machine on `prog` with σ from `defines` (ι = 0, ρ empty: Section 5.3.4).
    Returns the verdict; raises BadInput (malformed program, missing definition),
    Trap (an access outside an allocation) or BudgetExhausted.

    `memo`: long loops go through the iteration memo (interpreter/amir/memo.py), which
    replays an iteration whose entry state it has met before instead of stepping it,
    with the same verdict, violation and statistics, and records into an attribute no
    rule of the program examines are counted, not stored (memo.unexamined); False
    steps every statement and stores every record."""
    # Note: the collector stays paused until the machine is gone (`close`): a
    # machine's compiled closures refer to it, so without `close` it would live
    # until a collection, and the first collection after `run` would traverse
    # every object the run left alive (run pauses the collector, so all of them
    # are young): 0.01-0.1 s at N = 1024 on the ragged GEMM, 0.06-0.5 s at 2048.
    # Freed by reference counting instead, in this call.
    return run_closed(lambda: Machine(prog, defines, max_steps=max_steps,
                                      memo_min=MEMO_MIN_ITERATIONS if memo else None))


def run_closed(make: Callable[[], Machine]) -> Verdict:
    """Run the machine `make()` builds with the collector paused, and close it before
    the collector runs again (`check_amir`'s note says why)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        m = make()
        try:
            return m.run()
        finally:
            m.close()
            del m
    finally:
        if was_enabled:
            gc.enable()


class _Reject(Exception):
    def __init__(self, violation: Violation):
        self.violation = violation


class Machine(MachineState):
    # The iteration memo (interpreter/amir/memo.py): loops of at least `memo_min`
    # iterations use it (None: never); `memo_nesting` marks a body compiled inside a
    # memoised loop (its inner loops step).
    memo_min: int | None = None
    memo_nesting = False

    def __init__(self, prog: A.AProc, defines: Mapping[str, int], *,
                 max_steps: int = DEFAULT_MAX_STEPS, memo_min: int | None = None):
        super().__init__(prog, defines, max_steps=max_steps)
        self.memo_min = memo_min
        self.memos: list[LoopMemo] = []          # for tests and measurements
        self.memo_tables = Tables()
        if memo_min is not None:
            self.unseen = unexamined(prog.body)
        self.body = self.compile_body(prog.body, frozenset(prog.params))

    def run(self) -> Verdict:
        # Note: the machine makes no reference cycles (records, sets and arrays are
        # freed by reference counting), and with millions of live small objects the
        # cyclic collector's full passes make the run superlinear: pause it.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            for s in self.body:
                s()
        except _Reject as rej:
            return Verdict(rej.violation, self.stats)
        finally:
            if was_enabled:
                gc.enable()
        return Verdict(None, self.stats)

    def close(self) -> None:
        """Break the reference cycles a machine is made of (its compiled closures
        and its memos refer to it), so that reference counting frees it and all it
        holds as soon as the caller drops it; the machine cannot run after this."""
        for memo in self.memos:
            memo.close()
        self.memos = []
        self.body = []

    # ------------------------------------------------------------------ compiling

    def compile_body(self, body: tuple[A.AStmt, ...],
                     bound: frozenset[str]) -> list[Run]:
        """One closure per statement, except that a run of consecutive checks, clears
        and records of the same access (what Figures 5 and 19 emit per access) shares
        one evaluation of the window: the same judgments in the same order. Two
        memoised loops in a row are linked (LoopMemo.successor)."""
        out: list[Run] = []
        i = 0
        last: LoopMemo | None = None          # the memo of the statement just compiled
        while i < len(body):
            s = body[i]
            if not isinstance(s, _ACCESS_OPS):
                memos = self.memos if self.memo_min is not None else []
                made = len(memos)
                out.append(self.compile_stmt(s, bound))
                memo = memos[-1] if len(memos) > made and memos[-1].loop is s \
                    else None
                if last is not None and memo is not None:
                    last.successor = memo
                last = memo
                i += 1
                continue
            last = None
            j = i + 1
            while j < len(body) and isinstance(nxt := body[j], _ACCESS_OPS) \
                    and nxt.access == s.access:
                j += 1
            out.append(self._access_run(cast(Sequence[AccessStmt], body[i:j]), bound))
            i = j
        return out

    def _access_run(self, run: Sequence[AccessStmt], bound: frozenset[str]) -> Run:
        s = run[0]
        win, ops = self._access_ops(run, bound)
        name, ndim, origin = s.access.name, len(s.access.coords), s.origin
        resolve = self.resolve
        if len(ops) == 1:
            op = ops[0]

            def single() -> None:
                op(*resolve(name, ndim, win, origin))
            return single

        def fused() -> None:
            v, idx, box = resolve(name, ndim, win, origin)
            for op in ops:
                op(v, idx, box)
        return fused

    def _access_ops(self, run: Sequence[AccessStmt],
                    bound: frozenset[str]) -> tuple[Window, list[AccessOp]]:
        """The run's window and its judgments in order, each on the resolved cells
        (the fast machine resolves once for its log and the judgments)."""
        s = run[0]
        win = compile_window(s.access, bound, s.origin)
        return win, [self._access_op(x, win, bound) for x in run]

    def _access_op(self, s: AccessStmt, win: Window, bound: frozenset[str]) -> AccessOp:
        match s:
            case A.RecordRead() | A.RecordMutate():
                return self._rule_record(s, win, bound)
            case A.ClearReads() | A.ClearMutates():
                return self._rule_clear(s)
            case A.CheckReads() | A.CheckMutates():
                return self._rule_check_access(s, win, bound)
        raise AssertionError(s)

    def compile_stmt(self, s: A.AStmt, bound: frozenset[str]) -> Run:
        match s:
            case A.Loop():
                return self._rule_loop(s, bound)
            case A.Guard():
                return self._rule_if(s, bound)
            case A.IncTaskID():
                return self._rule_inc_task_id()
            case A.Alloc():
                return self._rule_alloc(s, bound)
            case A.Free():
                return self._rule_free(s)
            case A.RecordRead() | A.RecordMutate() | A.ClearReads() | A.ClearMutates() \
                    | A.CheckReads() | A.CheckMutates():
                return self._access_run((s,), bound)
            case A.Fence():
                return self._rule_fence(s, bound)
            case A.Arrive():
                return self._rule_arrive(s, bound)
            case A.Await():
                return self._rule_await(s, bound)
            case A.CheckBarrier():
                return self._rule_check_barrier(s, bound)
        raise BadInput(f"unknown AMIR statement: {type(s).__name__}")

    # ------------------------------------------------------- Figure 21 (structure)

    def _rule_loop(self, s: A.Loop, bound: frozenset[str]) -> Run:
        # LoopStep / LoopDone: the body runs for y = m, m+1, ..., n-1.
        lo, hi = compile_c(s.lo, bound, s.origin), compile_c(s.hi, bound, s.origin)
        memo = None
        if self.memo_min is not None and not self.memo_nesting \
                and memo_eligible(s):
            self.memo_nesting = True
            try:
                body = self.compile_body(s.body, bound | {s.var})
            finally:
                self.memo_nesting = False
            memo = LoopMemo(self, s, bound, body, self.memo_tables)
            memo.bounds = (lo, hi)
            self.memos.append(memo)
        else:
            body = self.compile_body(s.body, bound | {s.var})
        var, width, env, guard = s.var, max(1, len(s.body)), self.env, self.guard
        least = self.memo_min or 0

        def loop() -> None:
            m, n = lo(env), hi(env)
            memoised = memo is not None and n - m >= memo.least(least)
            if memo is not None and not memoised:
                memo.settle()                            # see LoopMemo.successor
            if m >= n:
                return                                   # LoopDone
            self.stats.statements += width * (n - m)
            if self.stats.statements > self.max_steps:
                if memo is not None:
                    memo.settle()
                raise BudgetExhausted(f"step budget exhausted: more than "
                                      f"{self.max_steps} statements", rule="LoopStep",
                                      span=s.origin)
            guard.tick(s.origin, "LoopStep")             # the memory budget: a long
            every = guard.every if n - m > guard.every else 0  # loop checks as it runs
            saved = env.get(var)
            if memo is not None and memoised:
                memo.run(m, n, every)                    # LoopStep, memoised
            else:
                for y in range(m, n):                    # LoopStep
                    env[var] = y
                    if every and (y - m) % every == every - 1:
                        guard.check(s.origin, "LoopStep")
                    for st in body:
                        st()
            if saved is None:
                del env[var]
            else:
                env[var] = saved
        return loop

    def _rule_if(self, s: A.Guard, bound: frozenset[str]) -> Run:
        cond, body, env = compile_b(s.cond, bound, s.origin), \
            self.compile_body(s.body, bound), self.env

        def guard() -> None:
            if cond(env):                                # If-True
                for st in body:
                    st()
            # If-False: no effect
        return guard

    def _rule_inc_task_id(self) -> Run:
        def inc_task_id() -> None:                       # InctaskID: ι' = ι + 1
            self.task += 1
            self.task_allocs = self.incarnations         # the task's own variables
        return inc_task_id

    # --------------------------------------------------------- Figure 22 (effects)

    def _rule_alloc(self, s: A.Alloc, bound: frozenset[str]) -> Run:
        # Alloc: ρ(x, n) = (∅, ∅, (0, 0)) for every n in the box [0, n_i).
        dims = [compile_c(c, bound, s.origin) for c in s.shape]

        def alloc() -> None:
            shape = tuple(d(self.env) for d in dims)
            if any(n < 0 for n in shape):
                raise BadInput(f"alloc: negative extent {shape} for {s.name} "
                               f"at {s.origin}", rule="Alloc", span=s.origin)
            self.incarnations += 1
            key = (s.name, self.incarnations)
            old = self.vars.get(s.name)
            if old is not None:
                self.drop(old)
            self.vars[s.name] = Var(s.name, shape, s.barrier, key, True)
        return alloc

    def _rule_free(self, s: A.Free) -> Run:
        def free() -> None:                              # extension: drop x's records
            old = self.vars.pop(s.name, None)
            if old is not None:
                self.drop(old)
        return free

    def _rule_record(self, s: A.RecordRead | A.RecordMutate, win: Window,
                     bound: frozenset[str]) -> AccessOp:
        # RecordRead / RecordMutate: ρ'(x, n).r (or .m) = ... ∪ R(τ_v, t, τ_q, τ_q*,
        # W_{e_z#}, ρ, g_{s#}(σ, ι)) for every (x, n) ∈ W_{e#}.
        kind = "read" if isinstance(s, A.RecordRead) else "mutate"
        threads = compile_threads(s.threads, bound, s.origin)
        bars = [(z.name, compile_window(z, bound, s.origin)) for z in s.barriers]
        vl, atomic, q, t = int(s.vl), qmask(s.atomic), s.qual.index, s.t
        ident, attr = id(s), ("rd" if kind == "read" else "mu")
        if (s.access.name, attr) in self.unseen:
            return self._rule_record_unseen(s, kind, threads, bars)

        def record(v: Var, idx: Index, box: Box | None) -> None:
            who, p, key = self._record_key(ident, threads, bars)
            hit = self.rec_cache.get(key)
            if hit is None:
                r = new_records(vl, t, q, atomic, p, who, kind, ident, s.origin)
                self.lifts.register(r)
                for cell in r.p:
                    self.lifts.index_barrier(cell, r)
                self.stats.records += 1
                hit = self.rec_cache[key] = ((r,), r.id)
                if self.observer is not None:
                    self.observer(v, attr, idx, box, r, True)
            elif self.observer is not None:
                self.observer(v, attr, idx, box, hit[0][0], False)
            self.stats.recorded_accesses += add_to_window(self.sets, v, attr, idx, box,
                                                          hit)
        return record

    def _record_key(self, ident: int, threads: ThreadsFn,
                    bars: list[tuple[str, Window]]
                    ) -> tuple[Threads, dict[BarrierCell, int], RecKey]:
        """R's executing threads (ALL, or this task's mask), its barrier counts p and
        the record cache's key: the record rule's and `_rule_record_unseen`'s."""
        mask = threads(self.env)
        who = ALL if mask is None else (self.task, mask)
        if bars:
            p = self.p_of(bars)
            return who, p, (ident, who, tuple(p.items()))
        return who, {}, (ident, who)

    def _rule_record_unseen(self, s: A.RecordRead | A.RecordMutate, kind: str,
                            threads: ThreadsFn,
                            bars: list[tuple[str, Window]]) -> AccessOp:
        """The record rule on an attribute no rule examines (memo.unexamined): the
        same statistics and record cache, nothing stored in ρ or the lift indexes.

        Note: a record made here is held by no cell (live = 0), as a record every
        cell has dropped: lifts skip it, no check can meet it."""
        vl, atomic, q, t = int(s.vl), qmask(s.atomic), s.qual.index, s.t
        ident = id(s)

        def record(v: Var, idx: Index, box: Box | None) -> None:
            who, p, key = self._record_key(ident, threads, bars)
            if key not in self.rec_cache:
                r = new_records(vl, t, q, atomic, p, who, kind, ident, s.origin)
                self.stats.records += 1
                self.rec_cache[key] = ((r,), r.id)
            # add_to_window's count: the window's cells (1 for a single cell)
            self.stats.recorded_accesses += 1 if box is None else v.rd[idx].size
        return record

    def _rule_clear(self, s: A.ClearReads | A.ClearMutates) -> AccessOp:
        # ClearReads: ρ(x, n).r = ∅; ClearMutates: ρ(x, n).m = ∅, for (x, n) ∈ W_{e#}.
        attr, sets = ("rd" if isinstance(s, A.ClearReads) else "mu"), self.sets

        def clear(v: Var, idx: Index, box: Box | None) -> None:
            clear_window(sets, v, attr, idx, box)
        return clear

    def _rule_fence(self, s: A.Fence, bound: frozenset[str]) -> Run:
        # Fence: ρ' = lift(ρ, λ), λ(r) = A(r, g, full*, temp*) if W(t, g, pre*, r).
        threads = compile_threads(s.threads, bound, s.origin)
        pre, levels, t = qmask(s.pre), make_levels(qmask(s.full), qmask(s.temp)), s.t

        def fence() -> None:
            self.stats.lifts += 1
            self.stats.exercised.add("Fence")
            self.lifts.fence(t, self.who(threads), pre, levels)
            # Note: always a new epoch, even if no live record rose: a dead record
            # skipped here must not be handed out again by the record cache.
            self.new_epoch()
        return fence

    def _rule_arrive(self, s: A.Arrive, bound: frozenset[str]) -> Run:
        # Arrive: home {(z, n)} = ∩ W_{e_zi#}; λ adds a(z', n') to r.p(z', n') for every
        # (z', n') ∈ ∪ W_{e_zi#} when W(t, g, pre*, r); then the home count a += 1.
        threads = compile_threads(s.threads, bound, s.origin)
        wins = [(z.name, len(z.coords), compile_window(z, bound, s.origin))
                for z in s.barriers]
        pre, t = qmask(s.pre), s.t

        def arrive() -> None:
            g = self.who(threads)
            self.stats.lifts += 1
            self.stats.exercised.add("Arrive")
            cells = [self.barrier_cells(n, d, w, s.origin) for n, d, w in wins]
            home: set[BarrierCell] = set.intersection(*[set(c) for c in cells]) \
                if cells else set()
            if len(home) != 1:
                raise BadInput(f"arrive: no unique home barrier among "
                               f"{[str(z.name) for z in s.barriers]} at {s.origin}",
                               rule="Arrive", span=s.origin)
            # Note: every cell of the union observes the *home's* arrive count: the
            # arrival's phase is the home's, whose count it raises (Figure 22's
            # "(a, _) = ρ(z, n)" read with (z, n) the home, as the authors'
            # implementation does). Each cell's own count would make a multicast
            # arrive depend on the order in which the machine runs the arriving
            # CTAs (errata "Arrive's home barrier").
            (home_cell,) = home
            a_home = next(cs[home_cell] for cs in cells if home_cell in cs)
            union = {c: a_home for cs in cells for c in cs}
            self.lifts.arrive(t, g, pre, union)
            (hk, hidx), = home
            arr = self.bar_var(hk[0]).arr
            assert arr is not None                       # bar_var checked it
            arr[hidx] += 1
            self.new_epoch()
        return arrive

    def _rule_await(self, s: A.Await, bound: frozenset[str]) -> Run:
        # Await: Max = a-(n+1) if n >= 0 else w+n+1; λ(r) = A(r, g, full*, temp*) if
        # some i ∈ r.p(z, n) has i <= Max; then w := New.
        threads = compile_threads(s.threads, bound, s.origin)
        win = compile_window(s.barrier, bound, s.origin)
        name, ndim, n = s.barrier.name, len(s.barrier.coords), s.n
        levels = make_levels(qmask(s.full), qmask(s.temp))

        def await_() -> None:
            g = self.who(threads)
            self.stats.lifts += 1
            self.stats.exercised.add("Await")
            cells = self.barrier_cells(name, ndim, win, s.origin)
            if len(cells) != 1:
                raise BadInput(f"await: {name} must name one barrier cell at "
                               f"{s.origin}", rule="Await", span=s.origin)
            (cell, a), = cells.items()
            awt = self.bar_var(name).awt
            assert awt is not None                       # a barrier: bar_var checked
            w = int(awt[cell[1]])
            top = a - (n + 1) if n >= 0 else w + n + 1
            new = max(w, top + 1) if n >= 0 else w + 1
            self.lifts.await_(cell, top, g, levels)
            awt[cell[1]] = new
            self.new_epoch()
        return await_

    # ------------------------------------------------------------ Figure 7 (checks)

    def _rule_check_access(self, s: A.CheckReads | A.CheckMutates, win: Window,
                           bound: frozenset[str]) -> AccessOp:
        # CheckReads / CheckMutates (see interpreter/amir/checks.py for the rule).
        check = type(s).__name__
        attr = "rd" if isinstance(s, A.CheckReads) else "mu"
        threads = compile_threads(s.threads, bound, s.origin)
        vl, t, qm = int(s.vl), s.t, qmask(s.quals)
        name = s.access.name

        def check_access(v: Var, idx: Index, box: Box | None) -> None:
            g: Threads | None = None
            failing: dict[int, Rec] = {}
            for sid in window_sets(v, attr, idx, box):
                if sid == 0:
                    continue
                if g is None:
                    g = self.who(threads)
                    self.stats.exercised.add(check)
                bad = self._first_invisible(sid, vl, t, qm, g, attr)
                if bad is not None:
                    failing[sid] = bad
            if failing:     # report the first failing cell in row-major order
                assert g is not None                     # set with the first failure
                at, sid = self.first_cell(getattr(v, attr), idx, win.points, failing)
                raise _Reject(access_violation(check, name, at, failing[sid], vl, qm,
                                               g, s.origin))
        return check_access

    def _first_invisible(self, sid: int, vl: int, t: bool, qm: int, g: Threads,
                         attr: str) -> Rec | None:
        key = (sid, vl, t, qm, g)
        if key in self.check_memo:
            return self.check_memo[key]
        bad = None
        members = self.sets.sets[sid]
        assert members is not None                       # held by a cell
        for r in members:
            if not record_visible(r, vl, t, qm, g):
                bad = r
                break
        self.check_memo[key] = bad
        return bad

    def _rule_check_barrier(self, s: A.CheckBarrier, bound: frozenset[str]) -> Run:
        # CheckBarrier: error iff some (a, w) ∈ ρ(W_{e_z#}).b has a != w.
        win = compile_window(s.access, bound, s.origin)
        name, ndim = s.access.name, len(s.access.coords)

        def check_barrier() -> None:
            v, idx, _ = self.resolve(name, ndim, win, s.origin)
            if v.arr is None:
                raise BadInput(f"check barrier: {name} is not a barrier at {s.origin}",
                               rule="CheckBarrier", span=s.origin)
            assert v.awt is not None                     # a barrier has both counts
            self.stats.exercised.add("CheckBarrier")
            a, w = np.asarray(v.arr[idx]), np.asarray(v.awt[idx])
            bad = np.argwhere(a != w)
            if len(bad):
                pos = tuple(int(i) for i in bad[0])
                at = absolute_cell(idx, pos, win.points)
                raise _Reject(barrier_violation(name, at, int(a[pos]), int(w[pos]),
                                                s.origin))
        return check_barrier

    # ------------------------------------------- stepping hook (gpusem step, issue 6)

    def leaf(self, s: A.AStmt, bound: frozenset[str]) -> Callable[[], Violation | None]:
        """One non-compound statement compiled on its own (unfused), run by the caller:
        returns the violation its check finds, or None. `gpusem step` walks Loop and
        Guard itself (interpreter/amir/debug.py) and calls these, so the debugger runs
        exactly these rules; `run` never calls this, so `check_amir` pays nothing."""
        if isinstance(s, (A.Loop, A.Guard)):
            raise TypeError(f"leaf: {type(s).__name__} is compound")
        run = self.compile_stmt(s, bound)

        def step() -> Violation | None:
            try:
                run()
            except _Reject as rej:
                return rej.violation
            return None
        return step
