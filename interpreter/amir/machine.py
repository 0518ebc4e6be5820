"""The AMIR abstract machine: big-step semantics of Exo-GPU Figures 21, 22 and 7 with
Appendix B, run with concrete control values (Section 5.3). Entry: `check_amir`.

Judgment ⟨s#, ι, σ, ρ⟩ ⇓ ι', σ', ρ' (or a violation). Each rule is one `_rule_*`
compiler below, named after it; the checks are in interpreter/amir/checks.py, records
(R, W, A) in interpreter/amir/records.py.

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
    (t = false, see amir_records) per execution, shared by every cell of its window;
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
from typing import Callable, Mapping

import numpy as np
from gpusem.calculus.amir import ast as A
from gpusem.calculus.errors import BadInput, BudgetExhausted, Trap
from gpusem.calculus.span import Span
from gpusem.interpreter.amir.checks import (
    Stats,
    Verdict,
    Violation,
    access_violation,
    barrier_violation,
    record_visible,
)
from gpusem.interpreter.amir.ctrl import (
    box_key,
    compile_b,
    compile_c,
    compile_threads,
    compile_window,
)
from gpusem.interpreter.amir.lift import Lifts
from gpusem.interpreter.amir.records import (
    ALL,
    Rec,
    Threads,
    make_levels,
    new_records,
    qmask,
)
from gpusem.interpreter.amir.store import (
    SetTable,
    Var,
    add_to_window,
    clear_window,
    window_sets,
)

DEFAULT_MAX_STEPS = 200_000_000
_ACCESS_OPS = (A.RecordRead, A.RecordMutate, A.ClearReads, A.ClearMutates,
               A.CheckReads, A.CheckMutates)


def check_amir(prog: A.AProc, defines: Mapping[str, int], *,
               max_steps: int = DEFAULT_MAX_STEPS) -> Verdict:
    """Run the machine on `prog` with σ from `defines` (ι = 0, ρ empty: Section 5.3.4).
    Returns the verdict; raises BadInput (malformed program, missing definition),
    Trap (an access outside an allocation) or BudgetExhausted."""
    m = Machine(prog, defines, max_steps=max_steps)
    return m.run()


class _Reject(Exception):
    def __init__(self, violation: Violation):
        self.violation = violation


class Machine:
    def __init__(self, prog: A.AProc, defines: Mapping[str, int], *,
                 max_steps: int = DEFAULT_MAX_STEPS):
        missing = [p for p in prog.params if p not in defines]
        if missing:
            raise BadInput(f"missing definition: -D {missing[0]}=... "
                           f"(procedure {prog.name} takes {', '.join(prog.params)})")
        self.prog = prog
        self.env: dict[str, int] = {p: int(defines[p]) for p in prog.params}
        self.task = 0
        self.vars: dict[str, Var] = {}
        self.sets = SetTable()
        self.lifts = Lifts(self.sets)
        self.rec_cache: dict[tuple, tuple[tuple[Rec, ...], int]] = {}
        self.check_memo: dict[tuple, Rec | None] = {}
        self.incarnations = 0
        self.stats = Stats()
        self.max_steps = max_steps
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

    # ------------------------------------------------------------------ compiling

    def compile_body(self, body: tuple[A.AStmt, ...], bound: frozenset[str]) -> list:
        """One closure per statement, except that a run of consecutive checks, clears
        and records of the same access (what Figures 5 and 19 emit per access) shares
        one evaluation of the window: the same judgments in the same order."""
        out: list[Callable[[], None]] = []
        i = 0
        while i < len(body):
            s = body[i]
            if not isinstance(s, _ACCESS_OPS):
                out.append(self.compile_stmt(s, bound))
                i += 1
                continue
            j = i + 1
            while j < len(body) and isinstance(body[j], _ACCESS_OPS) \
                    and body[j].access == s.access:
                j += 1
            out.append(self._access_run(body[i:j], bound))
            i = j
        return out

    def _access_run(self, run, bound: frozenset[str]) -> Callable[[], None]:
        s = run[0]
        win = compile_window(s.access, bound, s.origin)
        ops = [self._access_op(x, win, bound) for x in run]
        name, ndim, origin = s.access.name, len(s.access.coords), s.origin
        resolve = self._resolve
        if len(ops) == 1:
            op = ops[0]

            def single():
                op(*resolve(name, ndim, win, origin))
            return single

        def fused():
            v, idx, box = resolve(name, ndim, win, origin)
            for op in ops:
                op(v, idx, box)
        return fused

    def _access_op(self, s, win, bound: frozenset[str]):
        match s:
            case A.RecordRead() | A.RecordMutate():
                return self._rule_record(s, win, bound)
            case A.ClearReads() | A.ClearMutates():
                return self._rule_clear(s)
            case A.CheckReads() | A.CheckMutates():
                return self._rule_check_access(s, win, bound)
        raise AssertionError(s)

    def compile_stmt(self, s: A.AStmt, bound: frozenset[str]) -> Callable[[], None]:
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

    def _rule_loop(self, s: A.Loop, bound: frozenset[str]):
        # LoopStep / LoopDone: the body runs for y = m, m+1, ..., n-1.
        lo, hi = compile_c(s.lo, bound, s.origin), compile_c(s.hi, bound, s.origin)
        body = self.compile_body(s.body, bound | {s.var})
        var, width, env = s.var, max(1, len(s.body)), self.env

        def loop():
            m, n = lo(env), hi(env)
            if m >= n:
                return                                   # LoopDone
            self.stats.statements += width * (n - m)
            if self.stats.statements > self.max_steps:
                raise BudgetExhausted(f"step budget exhausted: more than "
                                      f"{self.max_steps} statements", rule="LoopStep",
                                      span=s.origin)
            saved = env.get(var)
            for y in range(m, n):                        # LoopStep
                env[var] = y
                for st in body:
                    st()
            if saved is None:
                del env[var]
            else:
                env[var] = saved
        return loop

    def _rule_if(self, s: A.Guard, bound: frozenset[str]):
        cond, body, env = compile_b(s.cond, bound, s.origin), \
            self.compile_body(s.body, bound), self.env

        def guard():
            if cond(env):                                # If-True
                for st in body:
                    st()
            # If-False: no effect
        return guard

    def _rule_inc_task_id(self):
        def inc_task_id():                               # InctaskID: ι' = ι + 1
            self.task += 1
        return inc_task_id

    # --------------------------------------------------------- Figure 22 (effects)

    def _rule_alloc(self, s: A.Alloc, bound: frozenset[str]):
        # Alloc: ρ(x, n) = (∅, ∅, (0, 0)) for every n in the box [0, n_i).
        dims = [compile_c(c, bound, s.origin) for c in s.shape]

        def alloc():
            shape = tuple(d(self.env) for d in dims)
            if any(n < 0 for n in shape):
                raise BadInput(f"alloc: negative extent {shape} for {s.name} "
                               f"at {s.origin}", rule="Alloc", span=s.origin)
            self.incarnations += 1
            key = (s.name, self.incarnations)
            old = self.vars.get(s.name)
            if old is not None:
                self._drop(old)
            self.vars[s.name] = Var(s.name, shape, s.barrier, key, True)
        return alloc

    def _rule_free(self, s: A.Free):
        def free():                                      # extension: drop x's records
            old = self.vars.pop(s.name, None)
            if old is not None:
                self._drop(old)
        return free

    def _drop(self, v: Var) -> None:
        """A variable's lifetime ends: its cells release their record sets, and a
        barrier's arrive-count registrations are forgotten."""
        whole = tuple((0, n) for n in v.shape)
        self.sets.release(v.rd, v.known("rd", whole))
        self.sets.release(v.mu, v.known("mu", whole))
        if v.arr is not None:
            self.lifts.forget_barrier(v.key)

    def _rule_record(self, s: A.RecordRead | A.RecordMutate, win,
                     bound: frozenset[str]):
        # RecordRead / RecordMutate: ρ'(x, n).r (or .m) = ... ∪ R(τ_v, t, τ_q, τ_q*,
        # W_{e_z#}, ρ, g_{s#}(σ, ι)) for every (x, n) ∈ W_{e#}.
        kind = "read" if isinstance(s, A.RecordRead) else "mutate"
        threads = compile_threads(s.threads, bound, s.origin)
        bars = [(z.name, compile_window(z, bound, s.origin)) for z in s.barriers]
        vl, atomic, q, t = int(s.vl), qmask(s.atomic), s.qual.index, s.t
        ident, attr, env = id(s), ("rd" if kind == "read" else "mu"), self.env

        def record(v, idx, box):
            mask = threads(env)
            who = ALL if mask is None else (self.task, mask)
            if bars:
                p = self._p_of(bars)
                key = (ident, who, tuple(p.items()))
            else:
                p, key = {}, (ident, who)
            hit = self.rec_cache.get(key)
            if hit is None:
                r = new_records(vl, t, q, atomic, p, who, kind, ident, s.origin)
                self.lifts.register(r)
                for cell in r.p:
                    self.lifts.index_barrier(cell, r)
                self.stats.records += 1
                hit = self.rec_cache[key] = ((r,), r.id)
            self.stats.recorded_accesses += add_to_window(self.sets, v, attr, idx, box,
                                                          hit)
        return record

    def _rule_clear(self, s: A.ClearReads | A.ClearMutates):
        # ClearReads: ρ(x, n).r = ∅; ClearMutates: ρ(x, n).m = ∅, for (x, n) ∈ W_{e#}.
        attr, sets = ("rd" if isinstance(s, A.ClearReads) else "mu"), self.sets

        def clear(v, idx, box):
            clear_window(sets, v, attr, idx, box)
        return clear

    def _rule_fence(self, s: A.Fence, bound: frozenset[str]):
        # Fence: ρ' = lift(ρ, λ), λ(r) = A(r, g, full*, temp*) if W(t, g, pre*, r).
        threads = compile_threads(s.threads, bound, s.origin)
        pre, levels, t = qmask(s.pre), make_levels(qmask(s.full), qmask(s.temp)), s.t

        def fence():
            self.stats.lifts += 1
            self.lifts.fence(t, self._who(threads), pre, levels)
            # Note: always a new epoch, even if no live record rose: a dead record
            # skipped here must not be handed out again by the record cache.
            self._new_epoch()
        return fence

    def _rule_arrive(self, s: A.Arrive, bound: frozenset[str]):
        # Arrive: home {(z, n)} = ∩ W_{e_zi#}; λ adds a(z', n') to r.p(z', n') for every
        # (z', n') ∈ ∪ W_{e_zi#} when W(t, g, pre*, r); then the home count a += 1.
        threads = compile_threads(s.threads, bound, s.origin)
        wins = [(z.name, len(z.coords), compile_window(z, bound, s.origin))
                for z in s.barriers]
        pre, t = qmask(s.pre), s.t

        def arrive():
            g = self._who(threads)
            self.stats.lifts += 1
            cells = [self._barrier_cells(n, d, w, s.origin) for n, d, w in wins]
            home = set.intersection(*[set(c) for c in cells]) if cells else set()
            if len(home) != 1:
                raise BadInput(f"arrive: no unique home barrier among "
                               f"{[str(z.name) for z in s.barriers]} at {s.origin}",
                               rule="Arrive", span=s.origin)
            union = {c: a for cs in cells for c, a in cs.items()}
            self.lifts.arrive(t, g, pre, union)
            (hk, hidx), = home
            self._bar_var(hk[0]).arr[hidx] += 1
            self._new_epoch()
        return arrive

    def _rule_await(self, s: A.Await, bound: frozenset[str]):
        # Await: Max = a-(n+1) if n >= 0 else w+n+1; λ(r) = A(r, g, full*, temp*) if
        # some i ∈ r.p(z, n) has i <= Max; then w := New.
        threads = compile_threads(s.threads, bound, s.origin)
        win = compile_window(s.barrier, bound, s.origin)
        name, ndim, n = s.barrier.name, len(s.barrier.coords), s.n
        levels = make_levels(qmask(s.full), qmask(s.temp))

        def await_():
            g = self._who(threads)
            self.stats.lifts += 1
            cells = self._barrier_cells(name, ndim, win, s.origin)
            if len(cells) != 1:
                raise BadInput(f"await: {name} must name one barrier cell at "
                               f"{s.origin}", rule="Await", span=s.origin)
            (cell, a), = cells.items()
            v = self._bar_var(name)
            w = int(v.awt[cell[1]])
            top = a - (n + 1) if n >= 0 else w + n + 1
            new = max(w, top + 1) if n >= 0 else w + 1
            self.lifts.await_(cell, top, g, levels)
            v.awt[cell[1]] = new
            self._new_epoch()
        return await_

    # ------------------------------------------------------------ Figure 7 (checks)

    def _rule_check_access(self, s: A.CheckReads | A.CheckMutates, win, bound):
        # CheckReads / CheckMutates (see interpreter/amir/checks.py for the rule).
        check = type(s).__name__
        attr = "rd" if isinstance(s, A.CheckReads) else "mu"
        threads = compile_threads(s.threads, bound, s.origin)
        vl, t, qm = int(s.vl), s.t, qmask(s.quals)
        name = s.access.name

        def check_access(v, idx, box):
            g, failing = None, {}
            for sid in window_sets(v, attr, idx, box):
                if sid == 0:
                    continue
                g = g or self._who(threads)
                bad = self._first_invisible(sid, vl, t, qm, g, attr)
                if bad is not None:
                    failing[sid] = bad
            if failing:     # report the first failing cell in row-major order
                at, sid = self._first_cell(getattr(v, attr), idx, win.points, failing)
                raise _Reject(access_violation(check, name, at, failing[sid], vl, qm,
                                               g, s.origin))
        return check_access

    def _first_invisible(self, sid, vl, t, qm, g, attr) -> Rec | None:
        key = (sid, vl, t, qm, g)
        if key in self.check_memo:
            return self.check_memo[key]
        bad = None
        for r in self.sets.sets[sid]:
            if not record_visible(r, vl, t, qm, g):
                bad = r
                break
        self.check_memo[key] = bad
        return bad

    def _rule_check_barrier(self, s: A.CheckBarrier, bound: frozenset[str]):
        # CheckBarrier: error iff some (a, w) ∈ ρ(W_{e_z#}).b has a != w.
        win = compile_window(s.access, bound, s.origin)
        name, ndim = s.access.name, len(s.access.coords)

        def check_barrier():
            v, idx, _ = self._resolve(name, ndim, win, s.origin)
            if v.arr is None:
                raise BadInput(f"check barrier: {name} is not a barrier at {s.origin}",
                               rule="CheckBarrier", span=s.origin)
            a, w = np.asarray(v.arr[idx]), np.asarray(v.awt[idx])
            bad = np.argwhere(a != w)
            if len(bad):
                pos = tuple(int(i) for i in bad[0])
                at = _absolute(idx, pos, win.points)
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

    # --------------------------------------------------------------------- helpers

    def _who(self, threads) -> Threads:
        mask = threads(self.env)
        return ALL if mask is None else (self.task, mask)

    def _new_epoch(self) -> None:
        self.rec_cache.clear()
        self.check_memo.clear()
        self.sets.collect()

    def _p_of(self, bars) -> dict:
        """P_{E#, ρ}: the current arrive count of each barrier cell in E#."""
        p: dict[tuple, int] = {}
        for name, w in bars:
            v = self.vars.get(name)
            idx = None if v is None or v.arr is None or not w.points \
                else w(self.env, v.shape)
            if idx is not None:                          # one cell, in bounds
                p[(v.key, idx)] = int(v.arr[idx])
            else:
                p.update(self._barrier_cells(name, None, w, None))
        return p

    def _bar_var(self, name: str) -> Var:
        v = self.vars.get(name)
        if v is None or v.arr is None:
            raise BadInput(f"barrier: {name} is not an allocated barrier",
                           rule="E#-Acc")
        return v

    def _barrier_cells(self, name, ndim, win, origin) -> dict[tuple, int]:
        """{(barrier key, cell index): arrive count} for a barrier access."""
        v = self._bar_var(name)
        if len(v.shape) != win.ndim:
            raise BadInput(f"access: barrier {name} has {len(v.shape)} dimensions, "
                           f"accessed with {win.ndim} at {origin}", rule="E#-Acc")
        idx = win.raw(self.env, v.shape)
        self._check_bounds(v, idx, win.points, origin)
        if win.points:
            return {(v.key, idx): int(v.arr[idx])}
        ranges = [range(*sl.indices(n)) for sl, n in zip(idx, v.shape)]
        return {(v.key, c): int(v.arr[c]) for c in np.ndindex(*map(len, ranges))
                for c in [tuple(r[i] for r, i in zip(ranges, c))]}

    def _resolve(self, name: str, ndim: int, win, origin: Span):
        """E#-Acc: the variable, the NumPy index of the accessed cells, and the box key
        of a window (None for a single cell)."""
        v = self.vars.get(name)
        if v is None:
            v = self.vars[name] = Var(name, (0,) * ndim, False, (name, 0), False)
        elif len(v.shape) != ndim:
            raise BadInput(f"access: {name} has {len(v.shape)} dimensions, accessed "
                           f"with {ndim} at {origin}", rule="E#-Acc", span=origin)
        got = win(self.env, v.shape)
        if got is None:
            idx = win.raw(self.env, v.shape)
            self._check_bounds(v, idx, win.points, origin)
            return v, idx, (None if win.points else box_key(idx))
        return (v, got, None) if win.points else (v, got[0], got[1])

    def _check_bounds(self, v: Var, idx: tuple, points: bool, origin) -> None:
        """Out of [0, shape): a trap for an allocated variable; an unallocated one (a
        procedure argument) grows to fit."""
        need = []
        for i, n in zip(idx, v.shape):
            lo, hi = (i, i + 1) if isinstance(i, int) else (i.start, max(i.start,
                                                                         i.stop))
            if lo < 0 or (hi > n and v.allocated):
                raise Trap(f"out of bounds: {v.name}{_show(idx)} outside shape "
                           f"{v.shape} at {origin}", rule="E#-Acc",
                           span=origin or Span("<amir>", 0, 0, 0, 0))
            need.append(max(hi, n))
        if not v.allocated and tuple(need) != v.shape:
            v.grow(tuple(need))

    def _first_cell(self, arr, idx, points: bool, sids) -> tuple[tuple, int]:
        """The first cell (row-major) of the window holding one of `sids`."""
        if points:
            return tuple(int(i) for i in idx), int(arr[idx])
        sub = arr[idx]
        hit = np.isin(sub, list(sids))
        pos = np.unravel_index(int(np.argmax(hit)), sub.shape)
        return _absolute(idx, tuple(int(i) for i in pos), False), int(sub[pos])


def _show(idx: tuple) -> str:
    parts = [str(i) if isinstance(i, int) else f"{i.start}:{i.stop}" for i in idx]
    return f"[{', '.join(parts)}]"


def _absolute(idx: tuple, pos: tuple, points: bool) -> tuple[int, ...]:
    """Cell coordinates from a box index and a position inside it."""
    if points:
        return tuple(int(i) for i in idx)
    it = iter(pos)
    out = []
    for i in idx:
        out.append(int(i) if isinstance(i, int) else i.start + next(it))
    return tuple(out)
