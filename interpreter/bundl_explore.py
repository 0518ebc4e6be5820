"""Exhaustive exploration of S-Program's nondeterminism (Appendix A.3.1, seed 004).

Depth-first search over every interleaving of the enabled threads, visiting each
configuration once (state hashing: `Machine.key()` covers every thread's term,
environment and position, the memories, Ψ and Φ). Finds every distinct final global
memory, and the first schedule that gets stuck or deadlocks (as a list of thread
indices to replay with `Machine.step`). For small programs: the state space grows with
the product of the threads' lengths.
"""

from __future__ import annotations

from gpusem.calculus.bundl.ast import (
    Alloc, Assign, AsyncMemcpy, BinOp, Call, Claim, Decl, Destruct, Free, Group, If, Index, Lower, Partition, Seq,
    Skip, Split, SyncDec, SyncInit, SyncWait, UnOp, While,
)
from gpusem.calculus.errors import BudgetExhausted, Stuck, Trap

from .bundl_machine import Machine, Outcome, _deadlock_error
from .bundl_small_step import ASYNC


def explore(m: Machine, max_steps: int = 1_000_000) -> Outcome:
    """All interleavings of `m` (from its current configuration)."""
    seen: set = set()
    finals: dict = {}
    stack = [(m.snapshot(), ())]
    transitions = 0
    while stack:
        snap, path = stack.pop()
        m.restore(snap)
        enabled = m.enabled_threads()  # descends: frames pushed, term unchanged
        key = m.key()
        if key in seen:
            continue
        seen.add(key)
        live = m.live()
        if not live:
            mem = m.globals()
            finals.setdefault(_freeze(mem), mem)
            continue
        if not enabled:
            ths = m.threads()
            err = _deadlock_error(f"deadlock: {len(live)} live threads all wait",
                                  ths[live[0]])
            return _bad(m, "deadlock", err, list(path), len(seen), transitions)
        base = m.snapshot()
        local = _local_thread(m, enabled)
        if local is not None:
            # Partial-order reduction: a step that touches only its own thread
            # commutes with every other step, so exploring it alone loses no final
            # memory, stuck state or deadlock. Cycle proviso: if it leads to a state
            # already seen, fall back to expanding every thread.
            try:
                m.step(local)
            except (Stuck, Trap) as err:
                return _bad(m, "stuck", err, list(path) + [local], len(seen),
                            transitions)
            transitions += 1
            if m.key() not in seen:
                stack.append((m.snapshot(), path + (local,)))
                continue
        for i in enabled:
            m.restore(base)
            try:
                m.step(i)
            except (Stuck, Trap) as err:
                return _bad(m, "stuck", err, list(path) + [i], len(seen), transitions)
            transitions += 1
            if transitions >= max_steps:
                err = BudgetExhausted(f"step budget exhausted: {max_steps} transitions "
                                      f"explored ({len(seen)} states)", rule="S-Program")
                return _bad(m, "budget", err, None, len(seen), transitions)
            stack.append((m.snapshot(), path + (i,)))
    mems = list(finals.values())
    out = Outcome("terminated", mems[0] if mems else m.globals(), transitions,
                  final_memories=mems, states=len(seen))
    return out


def _local_thread(m: Machine, enabled: list[int]) -> int | None:
    """An enabled thread whose next step reads and writes only its own state."""
    cfg, ths = m.cfg, m.threads()
    for i in enabled:
        if _is_local(cfg, ths[i]):
            return i
    return None


def _is_local(cfg, th) -> bool:
    s = th.focus  # after descend (enabled_threads descended every thread)
    match s:
        case Skip():
            return cfg.fixed or th.frames[-1][0] != ASYNC  # paper: Φ is shared
        case Decl(init=e) | If(cond=e):
            return not _reads_memory(cfg, e)
        case Assign(name=x, value=e):
            return x in th.env and not _reads_memory(cfg, e)
        case While() | Seq() | Split() | Group() | Destruct() | Free():
            return True
        case Partition() | Claim() | Lower():
            return True  # rename: names are per thread; no cell is touched
        case Alloc():
            return True  # commutes up to the numbering of regions
        case Call(args=args):
            return not any(_reads_memory(cfg, a) for a in args)
        case SyncInit() | SyncDec() | SyncWait() | AsyncMemcpy():
            # fixed: a Ψ counter is keyed by its barrier generation, so init / dec of
            # one generation commute and a zero counter stays zero; Φ is per thread.
            return cfg.fixed
        case _:
            return False


def _reads_memory(cfg, e) -> bool:
    hit = cfg.reads_cache.get(id(e))
    if hit is None:
        hit = any(isinstance(x, Index) for x in _subexprs(e))
        cfg.reads_cache[id(e)] = hit
    return hit


def _subexprs(e):
    yield e
    match e:
        case Index(a, i):
            yield from _subexprs(a)
            yield from _subexprs(i)
        case BinOp(_, a, b):
            yield from _subexprs(a)
            yield from _subexprs(b)
        case UnOp(_, a):
            yield from _subexprs(a)
        case _:
            return


def _bad(m: Machine, kind, err, path, states, transitions) -> Outcome:
    m.steps = transitions
    out = m.outcome(kind, err)
    out.bad_schedule = path
    out.states = states
    return out


def _freeze(mem: dict) -> tuple:
    return tuple((k, tuple(v)) for k, v in sorted(mem.items()))
