"""Exhaustive exploration of S-Program's nondeterminism (Appendix A.3.1, seed 004).

Depth-first search over every interleaving of the enabled threads, visiting each
configuration once (state hashing: `Machine.key()` covers every thread's term,
environment and position, the memories, Ψ and Φ). Finds every distinct final global
memory, and the first schedule that gets stuck or deadlocks (as a list of thread
indices to replay with `Machine.step`). For small programs: the state space grows with
the product of the threads' lengths.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpusem.calculus.budgets import MemoryGuard
from gpusem.calculus.bundl.ast import (
    Alloc,
    Assign,
    AsyncMemcpy,
    Call,
    Claim,
    Decl,
    Destruct,
    Expr,
    Free,
    Group,
    If,
    Index,
    Lower,
    Partition,
    Seq,
    Skip,
    Split,
    SyncDec,
    SyncInit,
    SyncWait,
    While,
)
from gpusem.calculus.bundl.walk import child_exprs
from gpusem.calculus.errors import BudgetExhausted, Stuck, Trap
from gpusem.interpreter.bundl.config import AsyncFrame, Config, ThreadState
from gpusem.interpreter.bundl.machine import Machine, Outcome, deadlock_error, where
from gpusem.interpreter.bundl.values import GlobalMemory, PyValue

# A global memory as a hashable key (`_freeze`).
FrozenMemory = tuple[tuple[str, tuple[PyValue, ...]], ...]


def explore(m: Machine, max_steps: int = 1_000_000, reduce: bool = True,
            guard: MemoryGuard | None = None) -> Outcome:
    """All interleavings of `m` (from its current configuration).

    Depth-first, with a partial-order reduction: where some thread's next step touches
    only its own state (`is_local`), that step alone is explored (an ample set of
    one), except when it closes a cycle through the DFS stack (the stack proviso), where
    every enabled thread is expanded. Equal configurations are explored once.

    Stops at `max_steps` transitions and at the memory budget (`guard`): the states
    seen and the DFS stack's snapshots grow with every transition, so a transition
    budget alone does not bound memory.
    """
    guard = guard if guard is not None else MemoryGuard(m.prog.span.file)
    guard.every = 256  # a transition keeps a configuration snapshot: ~40 KB
    seen: set[tuple[object, ...]] = set()
    finals: dict[FrozenMemory, GlobalMemory] = {}
    on_stack: set[tuple[object, ...]] = set()
    stack: list[list[Any]] = []  # [key, snapshot, todo, path, reduced, enabled]
    transitions = 0

    def arrive(path: tuple[int, ...]) -> tuple[bool, Outcome | None]:
        """Classify the current configuration; push it if it needs exploring.
        Returns (whether it closes a cycle through the DFS stack, a bad outcome)."""
        enabled = m.enabled_threads()  # descends: frames pushed, term unchanged
        key = m.key()
        if key in seen:
            return key in on_stack, None
        seen.add(key)
        live = m.live()
        if not live:
            mem = m.globals()
            finals.setdefault(_freeze(mem), mem)
            return False, None
        if not enabled:
            err = deadlock_error(f"deadlock: {len(live)} live threads all wait",
                                  m.threads()[live[0]])
            return False, _bad(m, "deadlock", err, list(path), len(seen), transitions)
        local = _local_thread(m, enabled) if reduce else None
        todo = [local] if local is not None else list(reversed(enabled))
        stack.append([key, m.snapshot(), todo, path, local is not None, enabled])
        on_stack.add(key)
        return False, None

    _, bad = arrive(())
    if bad is not None:
        return bad
    while stack:
        top = stack[-1]
        key, snap, todo, path, reduced, enabled = top
        if not todo:
            stack.pop()
            on_stack.discard(key)
            continue
        i = todo.pop()
        m.restore(snap)
        try:
            m.step(i)
        except (Stuck, Trap) as err:
            return _bad(m, "stuck", err, list(path) + [i], len(seen), transitions)
        transitions += 1
        budget = None
        if transitions >= max_steps:
            budget = BudgetExhausted(f"step budget exhausted: {max_steps} transitions "
                                     f"explored ({len(seen)} states)", rule="S-Program",
                                     span=where(m, m.threads()[i]))
        elif transitions % guard.every == 0:
            budget = guard.exceeded(where(m, m.threads()[i]), "S-Program")
        if budget is not None:
            return _bad(m, "budget", budget, None, len(seen), transitions)
        cycle, bad = arrive(path + (i,))
        if bad is not None:
            return bad
        if reduced and cycle:
            top[2] = [j for j in reversed(enabled) if j != i]  # stack proviso
            top[4] = False
    mems = list(finals.values())
    return Outcome("terminated", mems[0] if mems else m.globals(), transitions,
                   final_memories=mems, states=len(seen))


def _local_thread(m: Machine, enabled: list[int]) -> int | None:
    """An enabled thread whose next step reads and writes only its own state."""
    cfg, ths = m.cfg, m.threads()
    for i in enabled:
        if is_local(cfg, ths[i]):
            return i
    return None


def is_local(cfg: Config, th: ThreadState) -> bool:
    s = th.focus  # after descend (enabled_threads descended every thread)
    match s:
        case Skip():
            # paper: Φ is shared
            return cfg.fixed or not isinstance(th.frames[-1], AsyncFrame)
        case Decl(init=e) | If(cond=e):
            return not _reads_memory(cfg, e)
        case Assign(name=x, value=e):
            return x in th.env and not _reads_memory(cfg, e)
        case While() | Seq() | Split() | Group() | Destruct() | Free():
            return True
        case Partition(offset=e) if e is not None:  # S-Partition-Offset reads e
            return not _reads_memory(cfg, e)
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


def _reads_memory(cfg: Config, e: Expr) -> bool:
    hit = cfg.reads_cache.get(id(e))
    if hit is None:
        hit = any(isinstance(x, Index) for x in _subexprs(e))
        cfg.reads_cache[id(e)] = hit
    return hit


def _subexprs(e: Expr) -> Iterator[Expr]:
    yield e
    for c in child_exprs(e):
        yield from _subexprs(c)


def _bad(m: Machine, kind: str, err: Exception, path: list[int] | None, states: int,
         transitions: int) -> Outcome:
    m.steps = transitions
    out = m.outcome(kind, err)
    out.bad_schedule = path
    out.states = states
    return out


def _freeze(mem: GlobalMemory) -> FrozenMemory:
    return tuple((k, tuple(v)) for k, v in sorted(mem.items()))
