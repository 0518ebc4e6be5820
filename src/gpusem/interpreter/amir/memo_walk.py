"""The dry walk of a memoised loop's body (interpreter/amir/memo.py): the control path
one iteration takes, as the *trace* that keys the memo together with the entry
state's image, and the outside accesses on that path. It evaluates what the rules of
machine.py would (loop bounds, guards, thread masks, the windows of local variables
and of barriers) and changes nothing.

Why it is cached: a traced expression reads the variables bound outside the body
(the loop variable y, the task indices, the sizes) only through its *atoms*, the
largest subexpressions that mention no variable bound inside the body (`k % 4`,
`k >= 1`, `256 * task_m`). Equal atom values, with the same local variables of the
same shapes, give an equal walk, so the walk runs once per distinct atom values
(four times for a 4-stage ring, not once per iteration; and again only for a task
row that differs); only the outside accesses' windows (`A[.., 32 * k : 32 * k + 32]`)
are evaluated every iteration. Traces are interned: the memo's key holds an id.
"""

from __future__ import annotations

from typing import Any, Callable

from gpusem.calculus.amir import ast as A
from gpusem.calculus.errors import BadInput, GpusemError
from gpusem.calculus.gpuir import ast as G
from gpusem.interpreter.amir.ctrl import Window, box_key, compile_b, compile_c, \
    compile_threads, compile_window
from gpusem.interpreter.amir.state import MachineState

# An outside access on the path: statement, access, window, the values of the body's
# loop variables there, and the thread mask (None: 𝔾).
Site = tuple[A.AStmt, A.Access, Window, tuple[tuple[str, int], ...], int | None]
Probe = Callable[[list[Any], list[Site]], bool]
Walked = tuple[int, list[Site]] | None          # (trace id, outside accesses)
_ACCESSES = (A.CheckReads, A.CheckMutates, A.RecordRead, A.RecordMutate,
             A.ClearReads, A.ClearMutates)


class Walk:
    """The dry walk of one loop's body, cached by atom values per execution."""

    def __init__(self, m: MachineState, loop: A.Loop, bound: frozenset[str]):
        self.m, self.loop, self.outer = m, loop, bound
        self.local: frozenset[str] = frozenset()
        self.probes = self._probes(loop.body, bound | {loop.var}, ())
        self.atoms: list[Callable[[dict[str, int]], object]] | None = None
        self.by_local: dict[frozenset[str], list[Callable[[dict[str, int]], object]]
                            | None] = {}
        self.context: tuple[object, ...] = ()
        self.cache: dict[tuple[object, ...], Walked] = {}
        self.traces: dict[tuple[Any, ...], int] = {}
        self.fresh = False               # the last call walked (atom values new)
        self.new_trace = False           # ... and found a path never met (or none)

    def close(self) -> None:
        """Drop the probes: their closures refer to this walk (a cycle)."""
        self.probes = []

    def reset(self, local: frozenset[str]) -> None:
        """A new execution of the loop, with these local variables: the atoms of
        its traced expressions, and what else the walk reads of the state (the
        local variables' shapes, which outside variables exist allocated)."""
        m = self.m
        self.local = local
        if local not in self.by_local:
            found: list[G.CExpr | G.BExpr] = []
            try:
                _atoms_of(self.loop.body, frozenset(), local, found)
                # equal expressions have equal values: each is evaluated once
                found = list(dict.fromkeys(found))
                within = self.outer | {self.loop.var}
                self.by_local[local] = [
                    compile_b(x, within, self.loop.origin)
                    if isinstance(x, (G.BConst, G.BRel, G.BLog, G.BNot))
                    else compile_c(x, within, self.loop.origin) for x in found]
            except GpusemError:
                self.by_local[local] = None
        self.atoms = self.by_local[local]
        names = sorted(_names(self.loop.body) - local)
        self.context = (local, tuple(m.vars[n].shape for n in sorted(local)),
                        tuple((n in m.vars, n in m.vars and m.vars[n].allocated)
                              for n in names))

    def __call__(self) -> Walked:
        env = self.m.env
        key = None
        if self.atoms is not None:
            try:
                key = (self.context, tuple(f(env) for f in self.atoms))
            except GpusemError:
                key = None
            if key is not None and key in self.cache:
                self.fresh = self.new_trace = False
                return self.cache[key]
        self.fresh = self.new_trace = True
        trace: list[Any] = []
        sites: list[Site] = []
        try:
            ok = all(p(trace, sites) for p in self.probes)
        except GpusemError:
            ok = False                   # stepped: the rule reports it as it should
        got = None
        if ok:
            t = tuple(trace)
            self.new_trace = t not in self.traces
            got = (self.traces.setdefault(t, len(self.traces)), sites)
        if key is not None:
            self.cache[key] = got
        return got

    # ---------------------------------------------------------------- the probes

    def _probes(self, body: tuple[A.AStmt, ...], bound: frozenset[str],
                inner: tuple[str, ...]) -> list[Probe]:
        return [self._probe(s, bound, inner) for s in body]

    def _probe(self, s: A.AStmt, bound: frozenset[str],
               inner: tuple[str, ...]) -> Probe:
        env = self.m.env
        if isinstance(s, A.Loop):
            lo, hi = compile_c(s.lo, bound, s.origin), compile_c(s.hi, bound, s.origin)
            var = s.var
            sub = self._probes(s.body, bound | {var}, inner + (var,))

            def loop(tr: list[Any], sites: list[Site]) -> bool:
                a, b = lo(env), hi(env)
                tr.append((a, b))
                saved = env.get(var)
                try:
                    for y in range(a, b):
                        env[var] = y
                        for p in sub:
                            if not p(tr, sites):
                                return False
                finally:
                    if saved is None:
                        env.pop(var, None)
                    else:
                        env[var] = saved
                return True
            return loop
        if isinstance(s, A.Guard):
            cond = compile_b(s.cond, bound, s.origin)
            gsub = self._probes(s.body, bound, inner)

            def guard(tr: list[Any], sites: list[Site]) -> bool:
                c = cond(env)
                tr.append(c)
                return not c or all(p(tr, sites) for p in gsub)
            return guard
        return self._leaf(s, bound, inner)

    def _leaf(self, s: A.AStmt, bound: frozenset[str],
              inner: tuple[str, ...]) -> Probe:
        lift = isinstance(s, (A.Fence, A.Arrive, A.Await))
        acc = s.access if isinstance(s, _ACCESSES) else None
        if not (lift or acc is not None or isinstance(s, A.CheckBarrier)):
            return lambda tr, sites: False       # Alloc, Free, InctaskID: stepped
        threads = compile_threads(s.threads, bound, s.origin) \
            if hasattr(s, "threads") else None
        bars = [(z.name, compile_window(z, bound, s.origin)) for z in _barriers(s)]
        win = None if acc is None else compile_window(acc, bound, s.origin)
        env, m = self.m.env, self.m
        clear = isinstance(s, (A.ClearReads, A.ClearMutates))

        def leaf(tr: list[Any], sites: list[Site]) -> bool:
            mask = threads(env) if threads is not None else 0
            if lift and mask is None:
                return False                     # a lift over 𝔾: every task's records
            tr.append(mask)
            for name, w in bars:
                if name not in self.local:
                    return False                 # counts the image does not hold
                tr.append(box_key(w.raw(env, m.vars[name].shape)))
            if acc is None or win is None:
                return True
            v = m.vars.get(acc.name)
            if v is None:
                return False
            if acc.name in self.local:
                tr.append(box_key(win.raw(env, v.shape)))
                return True
            if not v.allocated or mask is None and not (clear or isinstance(
                    s, (A.CheckReads, A.CheckMutates))):
                return False                     # a record over 𝔾: any task's

            sites.append((s, acc, win, tuple((x, env[x]) for x in inner), mask))
            return True
        return leaf


def _barriers(s: A.AStmt) -> list[A.Access]:
    match s:
        case A.RecordRead() | A.RecordMutate() | A.Arrive():
            return list(s.barriers)
        case A.Await():
            return [s.barrier]
        case A.CheckBarrier():
            return [s.access]
    return []


# ------------------------------------------------------------------------ atoms


def _names(body: tuple[A.AStmt, ...]) -> set[str]:
    """The variables the body's accesses name."""
    out: set[str] = set()
    for s in body:
        if isinstance(s, (A.Loop, A.Guard)):
            out |= _names(s.body)
        elif isinstance(s, _ACCESSES):
            out.add(s.access.name)
    return out


def _atoms_of(body: tuple[A.AStmt, ...], inner: frozenset[str],
              local: frozenset[str], out: list[G.CExpr | G.BExpr]) -> None:
    """The atoms of every traced expression of `body` (see the docstring)."""
    for s in body:
        if isinstance(s, A.Loop):
            _c_atoms(s.lo, inner, out)
            _c_atoms(s.hi, inner, out)
            _atoms_of(s.body, inner | {s.var}, local, out)
            continue
        if isinstance(s, A.Guard):
            _b_atoms(s.cond, inner, out)
            _atoms_of(s.body, inner, local, out)
            continue
        th = getattr(s, "threads", None)
        if isinstance(th, A.ThreadMap):
            for r in th.dims:
                _c_atoms(r.start, inner, out)
        accs = _barriers(s)
        if isinstance(s, _ACCESSES) and s.access.name in local:
            accs.append(s.access)
        for acc in accs:
            for w in acc.coords:
                for c in ((w.index,) if isinstance(w, G.WPoint) else (w.lo, w.hi)):
                    if c is not None:
                        _c_atoms(c, inner, out)


def _c_vars(c: G.CExpr) -> set[str]:
    match c:
        case G.CInt():
            return set()
        case G.CVar(name=n):
            return {n}
        case G.CBin(lhs=l, rhs=r):
            return _c_vars(l) | _c_vars(r)
    raise BadInput(f"memo: unknown control expression {c!r}")


def _b_vars(b: G.BExpr) -> set[str]:
    match b:
        case G.BConst():
            return set()
        case G.BRel(lhs=l, rhs=r):
            return _c_vars(l) | _c_vars(r)
        case G.BLog(lhs=l, rhs=r):
            return _b_vars(l) | _b_vars(r)
        case G.BNot(arg=a):
            return _b_vars(a)
    raise BadInput(f"memo: unknown boolean expression {b!r}")


def _c_atoms(c: G.CExpr, inner: frozenset[str], out: list[Any]) -> None:
    free = _c_vars(c)
    if not free:
        return
    if not free & inner:
        out.append(c)
    elif isinstance(c, G.CBin):
        _c_atoms(c.lhs, inner, out)
        _c_atoms(c.rhs, inner, out)


def _b_atoms(b: G.BExpr, inner: frozenset[str], out: list[Any]) -> None:
    free = _b_vars(b)
    if not free:
        return
    if not free & inner:
        out.append(b)
        return
    match b:
        case G.BRel(lhs=l, rhs=r):
            _c_atoms(l, inner, out)
            _c_atoms(r, inner, out)
        case G.BLog(lhs=l, rhs=r):
            _b_atoms(l, inner, out)
            _b_atoms(r, inner, out)
        case G.BNot(arg=a):
            _b_atoms(a, inner, out)
