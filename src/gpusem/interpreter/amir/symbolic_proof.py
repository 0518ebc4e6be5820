"""The sync check of an AMIR program for every size at once (issue 27 part 1; the
argument is in proofs_notes/symbolic_sizes.md, "The proof"): `prove` returns a
`Proof` or the named reason (`Unproved`) why the program is outside what it covers.

The argument, in four steps, each a lemma of the notes:
  1. *Read-only arguments* (errata "Symbolic sizes: read-only arguments"): a
     procedure argument touched only by RecordRead and CheckMutates never holds a
     mutate record, and no check reads its read records, so it influences the
     verdict only through an out-of-bounds trap; z3 proves every window of every
     argument in bounds for every size, and the statements on read-only arguments
     are dropped.
  2. *One task decides* (proofs_notes/fast_checker.md, preconditions (P1)-(P6)):
     (P1)-(P3), (P6) are static; (P4) no interference and (P5) in bounds are z3
     queries over the sizes and two copies of the task variables, so the verdict
     is that of the first task, whose run depends on the sizes only through the
     trip count T of at most one loop (the fragment: sizes occur nowhere else).
  3. *The loop invariant* (errata "Symbolic sizes: the state up to renaming"): the
     loop body depends on its variable k only through `k % c` (period S = lcm c) and
     guards z3 proves constant. The machine's state at the start of iteration j,
     abstracted (record identities forgotten, barrier counts taken relative to the
     cell's arrive count), is `fingerprint` (symbolic_state.py); if the state at j0
     equals the state at j0 + S, the run is periodic from j0 on, because the rules
     are invariant under renaming records and under shifting one barrier cell's
     counts (a multicast Arrive, which copies the home cell's count to others, must
     shift them alike: checked). So every T >= j0 + S behaves as T - S.
  4. *Base cases*: the concrete runs for T = 0 .. j0 + S - 1 all accept.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import z3
from gpusem.calculus.amir import ast as A
from gpusem.calculus.errors import GpusemError
from gpusem.calculus.gpuir import ast as G
from gpusem.interpreter.amir.ctrl import compile_c
from gpusem.interpreter.amir.fast_nest import has_check, task_nest
from gpusem.interpreter.amir.machine import Machine
from gpusem.interpreter.amir.symbolic_state import Fingerprinter
from gpusem.interpreter.amir.symbolic_z3 import (
    Space,
    access_of,
    constant_on,
    contexts,
    in_bounds,
    mentions,
    tasks_disjoint,
)

WARMUP = 8          # iterations allowed before the state must repeat
MULTIPLES = 2       # the state may repeat every S or every 2S iterations
_READS = (A.RecordRead, A.CheckMutates)


@dataclass(frozen=True)
class Unproved:
    """Why there is no proof for all sizes: `name` is stable (tests match on it)."""

    name: str
    message: str


@dataclass(frozen=True)
class Proof:
    """What was shown: the inducted loop (None: no size-dependent trip count), the
    iteration j0 from which its state repeats with period S, the z3 side conditions
    discharged and the concrete base runs made."""

    loop: str | None
    start: int
    period: int
    queries: int
    runs: int
    read_only: tuple[str, ...]
    seconds: float

    def text(self) -> str:
        ro = f"read-only {', '.join(self.read_only)}; " if self.read_only else ""
        if self.loop is None:
            how = "no size-dependent loop"
        else:
            how = (f"loop {self.loop} periodic from iteration {self.start} with "
                   f"period {self.period}")
        return (f"{ro}{how}; {self.queries} z3 side conditions, {self.runs} base "
                f"runs")


def prove(amir: A.AProc, params: Sequence[str], pre: Sequence[Any],
          at: Mapping[str, int],
          fixed: Mapping[str, int] | None = None) -> Proof | Unproved:
    """Prove the machine accepts `amir` at every size satisfying `pre` (z3 formulas
    over `z3.Int(p)`); `at` is one such size, where the base runs take the extents of
    the written arguments (which the fragment lets matter only for bounds)."""
    start = time.perf_counter()
    names = set(params)
    sizes = {p: z3.Int(p) for p in params}
    space = Space({**{k: z3.IntVal(v) for k, v in (fixed or {}).items()}, **sizes},
                  [*pre, *(x >= 0 for x in sizes.values())])
    shapes: dict[str, tuple[G.CExpr, ...]] = {}
    nest_at = None
    for i, s in enumerate(amir.body):
        if isinstance(s, A.Alloc) and not s.barrier and nest_at is None:
            shapes[s.name] = s.shape
        elif isinstance(s, A.Fence) and not names & mentions(s):
            continue
        elif nest_at is None and task_nest(s) is not None:
            nest_at = i
        else:
            return _outside(s, "a top-level statement other than argument Allocs, "
                            "Fences and one task nest")
    if nest_at is None:
        return Unproved("outside-fragment", "no task nest (cuda_tasks) at top level")
    nest = task_nest(amir.body[nest_at])
    assert nest is not None
    if has_check(amir.body[nest_at + 1:]):
        return Unproved("outside-fragment", "a check follows the task nest")
    for lp in nest.loops:
        if names & mentions(lp.lo):
            return _outside(lp, "a task loop's lower bound depends on a size")
    outer = tuple(nest.loops)
    ctxs = list(contexts(nest.body, outer))

    # the size-dependent loop, and nothing else under the nest mentions a size
    sym = [s for s in A.walk(nest.body)
           if isinstance(s, A.Loop) and names & mentions(s.hi)]
    if len(sym) > 1:
        return _outside(sym[1], "a second loop with a size-dependent trip count")
    loop = sym[0] if sym else None
    for o, s in ctxs:
        rest = dataclasses.replace(s, hi=G.CInt(0)) if s is loop else s
        if isinstance(rest, (A.Loop, A.Guard)):
            rest = dataclasses.replace(rest, body=())
        if names & mentions(rest):
            return _outside(s, "a size occurs outside argument extents and loop "
                            "trip counts")
    if loop is not None and (mentions(loop.lo) or not mentions(loop.hi) <= names):
        return _outside(loop, "the loop's trip count depends on more than the sizes")

    # step 1: read-only arguments; every argument window in bounds
    kinds: dict[str, set[type]] = {x: set() for x in shapes}
    for o, s in contexts(amir.body):
        acc = access_of(s)
        if acc is not None and acc.name in kinds:
            kinds[acc.name].add(type(s))
    read_only = tuple(x for x, ks in kinds.items() if ks and ks <= set(_READS))
    queries = 0
    for o, s in ctxs:
        acc = access_of(s)
        if acc is None or acc.name not in shapes:
            continue
        if acc.name not in read_only and any(
                isinstance(c, G.WInterval) and (c.lo is None or c.hi is None)
                for c in acc.coords):
            return _outside(s, f"a whole-extent window of the written argument "
                            f"{acc.name}")
        queries += 1
        if not in_bounds(space, o, acc, shapes[acc.name]):
            return Unproved("symbolic-bounds", f"{acc.name} at {s.origin}: z3 does "
                            "not prove the window in bounds for every size")

    # dropping a read-only statement drops its barrier operands' bounds traps
    bars = {s.name: s.shape for s in A.walk(nest.body)
            if isinstance(s, A.Alloc) and s.barrier}
    for o, s in ctxs:
        acc = access_of(s)
        if acc is None or acc.name not in read_only:
            continue
        for z in getattr(s, "barriers", ()):
            queries += 1
            if z.name not in bars or not in_bounds(space, o, z, bars[z.name]):
                return Unproved("symbolic-bounds", f"{z.name} at {s.origin}: z3 does "
                                "not prove the barrier window in bounds")

    # step 2: no interference between tasks on written arguments
    for x, shape in shapes.items():
        if x in read_only:
            continue
        accs = [(o, s) for o, s in ctxs if (a := access_of(s)) and a.name == x]
        for o1, s1 in accs:
            if isinstance(s1, _READS):
                continue
            for o2, s2 in accs:
                queries += 1
                a1, a2 = access_of(s1), access_of(s2)
                assert a1 is not None and a2 is not None
                if not tasks_disjoint(space, nest.vars, (o1, a1), (o2, a2), shape):
                    return Unproved("symbolic-interference",
                                    f"{x} at {s1.origin} and {s2.origin}: z3 does "
                                    "not prove two tasks' windows disjoint")

    # step 3's static half: k only under `% c`, guards on k constant
    period, guards = 1, {}
    if loop is not None:
        around = next(o for o, x in ctxs if x is loop)
        for o, s in contexts(loop.body, (*around, loop)):
            if isinstance(s, (A.Alloc, A.Free, A.IncTaskID)):
                return _outside(s, "an allocation inside the size-dependent loop")
            acc = access_of(s)
            if acc is not None and acc.name in read_only:
                continue
            head = dataclasses.replace(s, body=()) if isinstance(
                s, (A.Loop, A.Guard)) else s
            if isinstance(s, A.Guard) and loop.var in _bare(s.cond, loop.var, []):
                queries += 2
                value = constant_on(space, o, loop.var, s.cond)
                if value is None:
                    return Unproved("symbolic-guard", f"the guard at {s.origin} "
                                    f"depends on {loop.var} and is not constant")
                guards[id(s)] = value
                head = dataclasses.replace(s, cond=G.BConst(True), body=())
            divs: list[int] = []
            if loop.var in _bare(head, loop.var, divs):
                return _outside(s, f"{loop.var} occurs other than in `{loop.var} "
                                "% c` (a window moving with the iteration)")
            period = math.lcm(period, *divs) if divs else period
    reduced = _reduce(amir, set(read_only), set(nest.vars), loop, guards)
    if loop is None:
        ok = _run(reduced(0), at, None)[0]
        if not ok:
            return Unproved("base-run-rejects", "the first task alone rejects")
        return Proof(None, 0, 0, queries, 1, read_only, time.perf_counter() - start)

    # step 3's dynamic half: find the repeating state; step 4: the base cases
    if sum(1 for x in A.walk(reduced(0).body) if isinstance(x, A.Loop)
           and (x.var, x.origin) == (loop.var, loop.origin)) != 1:
        return _outside(loop, "the loop is not the only one at its source line")
    if loop in nest.body:
        got = _one_entry(reduced, at, loop, period, nest.body)
    else:
        got = _every_entry(reduced, at, loop, period, nest.body)
    if isinstance(got, Unproved):
        return got
    j0, per, runs = got
    return Proof(loop.var, j0, per, queries, runs, read_only,
                 time.perf_counter() - start)


def _one_entry(reduced: Any, at: Mapping[str, int], loop: A.Loop, period: int,
               body: tuple[A.AStmt, ...]) -> tuple[int, int, int] | Unproved:
    """The loop runs once per task: one run of WARMUP + 2S iterations finds j0 with
    state(j0) = state(j0 + S); then trip count T >= j0 + S behaves as T - S, and the
    base runs T < j0 + S decide."""
    big = WARMUP + 2 * period * MULTIPLES
    ok, snaps, counts = _run(reduced(big), at, loop)
    if not ok:
        return Unproved("base-run-rejects", f"the first task rejects within {big} "
                        f"iterations of {loop.var}")
    if len(snaps) != 1:
        return _outside(loop, "the loop does not run exactly once per task")
    (entry,), (cnt,) = snaps, counts
    found = _repeat(entry, period)
    if found is None:
        return Unproved("no-invariant", f"the state at the start of iteration j of "
                        f"{loop.var} never equals the state at j + P (P a multiple "
                        f"of {period} up to {period * MULTIPLES}) within {big} "
                        "iterations")
    j0, per = found
    if not _shift_consistent(body, cnt[j0], cnt[j0 + per]):
        return _multicast()
    for t in range(j0 + per):
        if not _run(reduced(t), at, None)[0]:
            return Unproved("base-run-rejects", f"the first task rejects when "
                            f"{loop.var} runs {t} times")
    return j0, per, 1 + j0 + per


def _repeat(entry: Sequence[Any], period: int) -> tuple[int, int] | None:
    """(j0, P): the first j0 (then the least P, a multiple of `period` up to
    MULTIPLES of it) with entry[j0] == entry[j0 + P]. The states of a period-S body
    may repeat only every kS iterations: the machine drops dominated records
    (amir/records.dominates), so equivalent states can differ in what they keep."""
    for j in range(len(entry)):
        for k in range(1, MULTIPLES + 1):
            if j + k * period < len(entry) and entry[j] == entry[j + k * period]:
                return j, k * period
    return None


def _every_entry(reduced: Any, at: Mapping[str, int], loop: A.Loop, period: int,
                 body: tuple[A.AStmt, ...]) -> tuple[int, int, int] | Unproved:
    """The loop is entered several times per task (under a thread loop): per residue
    r of the trip count mod M = 2S, one run of T_r = B + r iterations (B a multiple
    of M) finds in every entry e a j0_e and P_e | M with state(j0_e) =
    state(j0_e + P_e). By induction on the entries, a trip count T = T_r (mod M) with
    T >= J_r = max_e j0_e starts every entry in T_r's state and leaves it in T_r's,
    so it is decided by T_r; the base runs T < max_r J_r decide the rest."""
    modulus = period * MULTIPLES          # every entry's P divides it
    big = -(-(WARMUP + 2 * modulus) // modulus) * modulus
    top, runs = 0, 0
    for r in range(modulus):
        runs += 1
        ok, snaps, counts = _run(reduced(big + r), at, loop)
        if not ok:
            return Unproved("base-run-rejects", f"the first task rejects when "
                            f"{loop.var} runs {big + r} times")
        for entry, cnt in zip(snaps, counts):
            found = _repeat(entry, period)
            if found is None:
                return Unproved("no-invariant", f"in an entry of {loop.var}, the "
                                f"state at iteration j never equals the state at "
                                f"j + P (P a multiple of {period} up to "
                                f"{period * MULTIPLES}) within {big + r} iterations")
            j0, per = found
            if not _shift_consistent(body, cnt[j0], cnt[j0 + per]):
                return _multicast()
            top = max(top, j0)
    for t in range(top):
        runs += 1
        if not _run(reduced(t), at, None)[0]:
            return Unproved("base-run-rejects", f"the first task rejects when "
                            f"{loop.var} runs {t} times")
    return top, modulus, runs


def _multicast() -> Unproved:
    return Unproved("no-invariant", "a multicast Arrive joins barrier cells whose "
                    "counts advance at different rates")


def _outside(s: object, why: str) -> Unproved:
    origin = getattr(s, "origin", None)
    at = f" at {origin}" if origin is not None and origin.line > 0 else ""
    return Unproved("outside-fragment", f"{type(s).__name__}{at}: {why}")


def _bare(x: object, var: str, divs: list[int]) -> set[str]:
    """The variables of `x` outside `e % c` subterms with `e` affine in `var` alone
    (whose constant divisors c are appended to `divs`)."""
    if isinstance(x, G.CBin) and x.op == "%" and isinstance(x.rhs, G.CInt) \
            and x.rhs.value > 0 and mentions(x.lhs) <= {var} and _affine(x.lhs):
        divs.append(x.rhs.value)
        return set()
    if isinstance(x, G.CVar):
        return {x.name}
    out: set[str] = set()
    if isinstance(x, (tuple, list)):
        for y in x:
            out |= _bare(y, var, divs)
    elif hasattr(x, "__dataclass_fields__") and not isinstance(x, type):
        for f in x.__dataclass_fields__:
            if f not in ("span", "origin"):
                out |= _bare(getattr(x, f), var, divs)
    return out


def _affine(c: G.CExpr) -> bool:
    match c:
        case G.CInt() | G.CVar():
            return True
        case G.CBin(op=op, lhs=lhs, rhs=rhs) if op in "+-":
            return _affine(lhs) and _affine(rhs)
        case G.CBin(op="*", lhs=lhs, rhs=rhs):
            return (isinstance(lhs, G.CInt) or isinstance(rhs, G.CInt)) \
                and _affine(lhs) and _affine(rhs)
    return False


def _reduce(amir: A.AProc, read_only: set[str], tvars: set[str],
            loop: A.Loop | None, guards: Mapping[int, bool]) -> Any:
    """T -> the program of the first task with the loop run T times: statements on
    read-only arguments dropped, each task loop run for its first value only, the
    constant guards of the loop body replaced by their value."""

    def block(body: tuple[A.AStmt, ...], t: int) -> tuple[A.AStmt, ...]:
        out: list[A.AStmt] = []
        for s in body:
            acc = access_of(s)
            if (acc is not None and acc.name in read_only) or (
                    isinstance(s, A.Alloc) and s.name in read_only):
                continue
            if isinstance(s, A.Guard) and id(s) in guards:
                if guards[id(s)]:
                    out.extend(block(s.body, t))
                continue
            if isinstance(s, A.Loop):
                hi = s.hi
                if s.var in tvars:
                    hi = G.CBin("+", s.lo, G.CInt(1))
                elif s is loop:
                    hi = G.CBin("+", s.lo, G.CInt(t))
                out.append(dataclasses.replace(s, hi=hi, body=block(s.body, t)))
            elif isinstance(s, A.Guard):
                out.append(dataclasses.replace(s, body=block(s.body, t)))
            else:
                out.append(s)
        return tuple(out)

    return lambda t: dataclasses.replace(amir, body=block(amir.body, t))


class _Probe(Machine):
    """The reference machine, taking the abstract state at the start of every
    iteration of one loop (and after its last)."""

    def __init__(self, prog: A.AProc, defines: Mapping[str, int],
                 target: tuple[str, Any] | None):
        self.target = target
        self.snaps: list[list[tuple[Any, ...]]] = []      # per entry of the loop
        self.counts: list[list[dict[Any, int]]] = []
        self.fingerprint = Fingerprinter()    # = symbolic_state.fingerprint, faster
        super().__init__(prog, defines)

    def _rule_loop(self, s: A.Loop, bound: frozenset[str]) -> Any:
        if self.target is None or (s.var, s.origin) != self.target:
            return super()._rule_loop(s, bound)
        lo, hi = compile_c(s.lo, bound, s.origin), compile_c(s.hi, bound, s.origin)
        body = self.compile_body(s.body, bound | {s.var})
        env = self.env

        def loop() -> None:
            self.snaps.append([])
            self.counts.append([])
            saved = env.get(s.var)
            for y in range(lo(env), hi(env)):
                self._snap()
                env[s.var] = y
                for st in body:
                    st()
            self._snap()
            if saved is None:
                env.pop(s.var, None)
            else:
                env[s.var] = saved
        return loop

    def _snap(self) -> None:
        snap, counts = self.fingerprint(self)
        self.snaps[-1].append(snap)
        self.counts[-1].append(counts)


def _run(prog: A.AProc, at: Mapping[str, int], loop: A.Loop | None
         ) -> tuple[bool, list[list[tuple[Any, ...]]], list[list[dict[Any, int]]]]:
    m = _Probe(prog, {p: at[p] for p in prog.params},
               None if loop is None else (loop.var, loop.origin))
    try:
        verdict = m.run()
    except GpusemError:                   # a trap or a budget: no base case
        return False, m.snaps, m.counts
    return verdict.accepted, m.snaps, m.counts


def _shift_consistent(task_body: tuple[A.AStmt, ...], before: Mapping[Any, int],
                      after: Mapping[Any, int]) -> bool:
    """Every Arrive of the task body that names several barrier cells (a multicast
    arrive copies the home cell's count to the others) names only barrier variables
    whose cells all advanced by the same count over one period."""
    delta = {cell: after[cell] - before[cell] for cell in before if cell in after}
    for s in A.walk(task_body):
        if not isinstance(s, A.Arrive):
            continue
        many = len(s.barriers) > 1 or any(isinstance(c, G.WInterval)
                                           for z in s.barriers for c in z.coords)
        if not many:
            continue
        named = {z.name for z in s.barriers}
        ds = {d for (key, _), d in delta.items() if key[0] in named}
        if len(ds) > 1:
            return False
    return True
