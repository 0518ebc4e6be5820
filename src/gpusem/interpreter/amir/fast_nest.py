"""The static side of the fast AMIR machine (interpreter/amir/fast.py): what a *task
nest* is, and preconditions (1)-(3) and (6) of proofs_notes/fast_checker.md, decided on
the AMIR program alone: the nest's statements are GPU-scoped, its variables are
allocated before use in each task, its task variables occur only in the coordinates of
outside variables, additively and with constant coefficients (one translation per
variable), and no check statement follows it.

Conventions: as interpreter/amir/machine.py; `Coeffs` maps a task variable to its
coefficient in one coordinate of an outside access.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpusem.calculus.amir import ast as A
from gpusem.calculus.gpuir import ast as G
from gpusem.calculus.gpuir.ctrl import bvars, cvars
from gpusem.interpreter.amir.ctrl import compile_c

Coeffs = dict[str, int]          # task variable -> coefficient in one coordinate


# ------------------------------------------------------- the static preconditions


@dataclass
class Nest:
    """A task nest: loops[i] = (var, lo, hi, origin); the innermost body; what its
    outside variables are and how each is translated by the task variables."""

    loops: list[A.Loop]
    body: tuple[A.AStmt, ...]
    outside: dict[str, list[Coeffs]] = field(default_factory=dict)

    @property
    def vars(self) -> list[str]:
        return [lp.var for lp in self.loops]


def task_nest(s: A.AStmt) -> Nest | None:
    """The task nest rooted at `s`, if `s` is one that meets preconditions (1)-(3)
    statically; None otherwise (the reference runs it)."""
    loops: list[A.Loop] = []
    cur: A.AStmt = s
    while isinstance(cur, A.Loop) and cur.body and isinstance(cur.body[0], A.IncTaskID):
        loops.append(cur)
        if len(cur.body) == 2 and isinstance(cur.body[1], A.Loop) and \
                cur.body[1].body and isinstance(cur.body[1].body[0], A.IncTaskID):
            cur = cur.body[1]
            continue
        break
    if not loops:
        return None
    nest = Nest(loops, loops[-1].body[1:])
    tvars = set(nest.vars)
    for lp in loops[1:]:                 # inner bounds do not move with outer tasks
        if (cvars(lp.lo) | cvars(lp.hi)) & tvars:
            return None
    if not _scoped(nest, tvars):
        return None
    return nest


def _scoped(nest: Nest, tvars: set[str]) -> bool:
    """(1)-(3): GPU-scoped statements, locals allocated before use, task variables
    only in outside coordinates, one translation per outside variable."""
    locals_ = {s.name for s in A.walk(nest.body) if isinstance(s, A.Alloc)}

    def block(body: tuple[A.AStmt, ...], live: set[str]) -> bool:
        live = set(live)
        for s in body:
            if not stmt(s, live):
                return False
        return True

    def stmt(s: A.AStmt, live: set[str]) -> bool:
        match s:
            case A.Loop(lo=lo, hi=hi, body=b):
                return not (cvars(lo) | cvars(hi)) & tvars and block(b, live)
            case A.Guard(cond=c, body=b):
                return not _bvars(c) & tvars and block(b, live)
            case A.IncTaskID():
                return False
            case A.Alloc(name=n, shape=sh):
                live.add(n)
                return not any(cvars(c) & tvars for c in sh)
            case A.Free(name=n):
                live.discard(n)
                return True
        threads = getattr(s, "threads", None)
        if threads is not None and (threads.cpu or _thread_vars(threads) & tvars):
            return False
        for acc, barrier in _accesses(s):
            if acc.name in locals_:
                if acc.name not in live or _coord_vars(acc) & tvars:
                    return False
            elif barrier or not _translation(nest, acc, tvars):
                return False
        return True

    return block(nest.body, set())


def _accesses(s: A.AStmt) -> list[tuple[A.Access, bool]]:
    """The accesses of a statement, each with whether it must be task-local (barrier
    operands and barrier sets)."""
    match s:
        case A.RecordRead() | A.RecordMutate():
            return [(s.access, s.access.barrier)] + [(z, True) for z in s.barriers]
        case A.ClearReads() | A.ClearMutates() | A.CheckReads() | A.CheckMutates():
            return [(s.access, s.access.barrier)]
        case A.Arrive():
            return [(z, True) for z in s.barriers]
        case A.Await():
            return [(s.barrier, True)]
        case A.CheckBarrier():
            return [(s.access, True)]
    return []


def _translation(nest: Nest, acc: A.Access, tvars: set[str]) -> bool:
    """Record (and check against earlier accesses) how the task variables translate
    this outside access: each coordinate must be (a part without task variables) +
    Σ c_t * t with constant c_t, an interval's two bounds alike."""
    got: list[Coeffs] = []
    for w in acc.coords:
        if isinstance(w, G.WPoint):
            c = _linear(w.index, tvars)
        else:
            lo = _linear(w.lo, tvars) if w.lo is not None else {}
            hi = _linear(w.hi, tvars) if w.hi is not None else {}
            # the window moves rigidly: both bounds alike (a missing bound is fixed)
            c = lo if lo == hi else None
        if c is None:
            return False
        got.append(c)
    seen = nest.outside.setdefault(acc.name, got)
    return seen == got


def _linear(c: G.CExpr, tvars: set[str]) -> Coeffs | None:
    """{t: coefficient} when c = (no task variable) + Σ coefficient * t; None when a
    task variable occurs otherwise (under /, %, or times a variable)."""
    match c:
        case G.CInt():
            return {}
        case G.CVar(name=n):
            return {n: 1} if n in tvars else {}
        case G.CBin(op=op, lhs=lhs, rhs=rhs):
            a, b = _linear(lhs, tvars), _linear(rhs, tvars)
            if a is None or b is None:
                return None
            if op in "+-":
                s = 1 if op == "+" else -1
                out = dict(a)
                for k, v in b.items():
                    out[k] = out.get(k, 0) + s * v
                return {k: v for k, v in out.items() if v}
            if not a and not b:
                return {}
            if op == "*":
                k_side, t_side = (lhs, b) if not a else (rhs, a)
                if cvars(k_side) or not isinstance(k_side, (G.CInt, G.CBin)):
                    return None
                factor = _const(k_side)
                return None if factor is None else \
                    {t: factor * v for t, v in t_side.items()}
            return None
    return None


def _const(c: G.CExpr) -> int | None:
    try:
        return compile_c(c, frozenset(), None)({})  # type: ignore[arg-type]
    except Exception:                    # noqa: BLE001 (not a constant: no fast path)
        return None


def _bvars(b: G.BExpr) -> set[str]:
    return set(bvars(b))


def _thread_vars(th: A.ThreadMap) -> set[str]:
    out: set[str] = set()
    for r in th.dims:
        out |= cvars(r.start)
    return out


def _coord_vars(acc: A.Access) -> set[str]:
    out: set[str] = set()
    for w in acc.coords:
        if isinstance(w, G.WPoint):
            out |= cvars(w.index)
        else:
            out |= (cvars(w.lo) if w.lo is not None else set())
            out |= (cvars(w.hi) if w.hi is not None else set())
    return out


def has_check(body: Sequence[A.AStmt]) -> bool:
    return any(isinstance(s, (A.CheckReads, A.CheckMutates, A.CheckBarrier))
               for s in A.walk(tuple(body)))
