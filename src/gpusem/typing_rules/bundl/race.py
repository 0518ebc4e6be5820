"""Race freedom of Bundl programs, decided with z3 (the determinism property, issue 5).

Bundl does not prevent races (Prism Sec 3.4.2): a program is deterministic when no two
threads make conflicting accesses to one cell without a barrier between them. This
analysis over-approximates the accesses of every thread symbolically and asks z3, for
each pair of access sites, whether two DISTINCT threads (t1 ≠ t2) can reach them and hit
the same cell of the same memory region, unordered:

  - thread ids are 32-bit vectors t ∈ [0, B·T); b = t div T, and the perspective id p
    follows the small-step rules of the fixed semantics (interpreter/bundl/small_step):
    S-Destruct-Grid p := b, S-Destruct-Block p := t mod T, S-Group p := p mod n (the
    unit index p div n is recorded), S-Split-Left/Right p < n1 / p - n1, S-Claim p < n';
  - views of arrays follow S-Partition (fixed): piece k = p div (n/c), chunk =
    extent div c, offset += k·chunk; S-Lower / S-Claim / async_partition rename;
  - indices and stored values are encoded exactly in 32-bit C arithmetic (bvsdiv and
    bvsrem truncate like C); partition_id follows E-Partition-Id (fixed) with the
    target of its expression (⊢^π_π': a let's perspective, a store's array, the
    caller's π for call arguments); anything not known statically (array reads,
    variables that are ever re-assigned, cells that some statement writes) is a fresh
    unknown PER THREAD, so the analysis only claims freedom it can prove; float32
    values are z3 floating point (fpAdd ... with round-to-nearest-even, fpLT, fpEQ),
    so uniform float code is proved uniform;
  - two writes of provably equal values (uniform code at a perspective wider than one
    thread writes the same value from every thread of the unit) do not conflict;
  - barriers: partition / claim / lower end with `init; s; dec; wait` over the unit
    of the code perspective (S-Partition etc.); which barriers certainly separate two
    program points, across loop iterations and through the end barriers of enclosing
    constructs, nested destructs, counted loops and calls, is `race_order.py`. `if`
    branches are both assumed taken; loops are walked once (their variables are
    re-assigned, hence unknown); a counted loop that never runs is not walked.
Local memory is per thread and never races. Calls are inlined. What whole regions
keep (zeros, their initial contents, one value per cell; Local arrays that stay zero)
is settled before the pairs (`race_settle.py`); the rules added for issue 24 are in
errata "Loop iterations and copies" (Same-Run, certain once per iteration,
Single-Valued, Local-Zero, Local-Last-Write) and "Copies and stores by several
threads" (Branch-Path, Guarded-Own-Write, Exact-Branch, and (8d)
Fresh-Region-Per-Iteration: an alloc in a counted loop is a region per iteration,
`race_fresh.py`).

The walk that collects the accesses symbolically is `race_accesses.py` (`Collector`);
this module decides each pair. A pair z3 cannot decide within its budget counts as a
race (sound: "race-free" is a proof).

Note: the budgets are z3 resource units (`rlimit`: a count of the solver's internal
steps, the same for one input and one z3 version), not wall-clock time: RLIMIT_PAIR
per pair, RLIMIT_PROGRAM for a whole program. With the former wall-clock budgets
(300 ms a pair, 1.5 s a program) a loaded machine could flip a program's verdict from
race-free to undecided (issue 24); now the verdict does not depend on the load. The
budgets are about the former ones on the idle dev machine (z3 spends roughly a million
units a second there); of the 1000 generated programs of scripts/race_exclusion.py the
costliest spends 365,249 units in all and 99% spend under 12,390
(results/bundl/race_exclusion_stable_after.json). Conventions (paper -> Python): π -> `Ctx.persp`,
p -> `Ctx.p` (a builder th -> term), (t, b) -> `Th.t`, `Th.b`; a builder is a function
of one symbolic thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import z3
from gpusem.calculus.bundl import ast as A
from gpusem.typing_rules.bundl.race_accesses import (
    Access,
    Collector,
    Term,
    Th,
    bv,
)
from gpusem.typing_rules.bundl.race_context import fresh_context, without_context
from gpusem.typing_rules.bundl.race_fresh import iteration
from gpusem.typing_rules.bundl.race_order import (
    common_runs,
    guard_holds,
    ordered,
    precedes,
)
from gpusem.typing_rules.bundl.race_settle import (
    settle_local_zero,
    settle_stable_globals,
    settle_zero_regions,
)


@dataclass
class Race:
    first: str  # the two access sites ("store out", "memcpy into s", ...)
    second: str
    witness: str  # the two threads and the cell (a z3 model)


@dataclass
class RaceReport:
    race_free: bool
    races: list[Race] = field(default_factory=list)
    pairs: int = 0
    undecided: int = 0
    rlimit: int = 0  # z3 resource units spent on the pairs

    def describe(self) -> str:
        if self.race_free:
            return f"race-free ({self.pairs} pairs)"
        r = self.races[0]
        return f"race: {r.first} vs {r.second} ({r.witness})"


# ------------------------------------------------------------------ deciding


def _eq_lists(xs: list[Term], ys: list[Term]) -> Term:
    return z3.And(*[x == y for x, y in zip(xs, ys, strict=True)]) if xs else z3.BoolVal(True)


RLIMIT_PAIR = 300_000  # z3 resource units for one pair (Note above): ~300 ms idle
RLIMIT_PROGRAM = 1_500_000  # ... for all the pairs of one program: ~1.5 s idle


def analyse(prog: A.Program, timeout_ms: int | None = None, max_races: int = 1,
            budget_s: float | None = None, *, rlimit: int = RLIMIT_PAIR,
            rlimit_total: int | None = None) -> RaceReport:
    """Decide race freedom of `prog` (fixed semantics). Stops after `max_races`. Each
    z3 check may spend `rlimit` resource units; with `rlimit_total`, a program whose
    checks spend more counts as racy (undecided). `timeout_ms` and `budget_s` add
    wall-clock limits (per check, per program) for callers that want them; the oracle
    does not (its verdicts must not depend on the machine's load)."""
    # Note: most generated programs that are not race-free by construction touch no
    # Shared or Global cell, only read them, or run one thread (91 of 123 in a
    # campaign's first 300 programs), and most such walks build no z3 term. The walk
    # is tried without a z3 context first (race_context.without_context); when it
    # needs none and leaves no pair to decide, the verdict is given without making one
    # (~1 ms a context, made and freed); when it needs none but leaves pairs, it goes
    # on in a fresh context as though it had been walked there (it made nothing in z3:
    # the same terms in the same order); when it reaches for z3 (a constant `if`
    # condition is simplified by z3) it is walked again in the fresh context.
    # The report is the one the context would have given, but `rlimit` is 0 where no
    # pair is decided (it counted what settling the regions spent).
    c = Collector(prog)
    walked: Collector | None = c
    try:
        with without_context():
            c.run()
    except Exception:  # noqa: BLE001 - NeedsZ3 (or z3 refusing the stand-in some
        walked = None  # other way, or a real error, which the walk in the context meets)
    if walked is not None and (early := _without_pairs(prog, walked)) is not None:
        return early
    collectors: list[Collector] = []
    try:
        with fresh_context():  # the verdict a function of the program (race_context)
            return _analyse(prog, walked, timeout_ms, max_races, budget_s, rlimit,
                            rlimit_total, collectors)
    finally:  # the context freed here, not at some later garbage collection
        for used in collectors:
            used.release()


def _without_pairs(prog: A.Program, c: Collector) -> RaceReport | None:
    """The report of a walked program with no pair to decide (incomplete, one thread,
    or no two accesses to one region of which one writes); None when there are."""
    report = RaceReport(True)
    if c.incomplete:
        report.race_free = False
        report.races.append(Race("analysis", "incomplete", c.incomplete))
        return report
    if prog.machine.blocks * prog.machine.threads < 2:
        return report  # one thread: nothing to race with
    written = c.written()
    return None if any(a.view.key in written for a in c.accesses) else report


def _analyse(prog: A.Program, walked: Collector | None, timeout_ms: int | None,
             max_races: int, budget_s: float | None, rlimit: int,
             rlimit_total: int | None, collectors: list[Collector]) -> RaceReport:
    """`walked`: the program's walk, when it made no z3 term and left pairs to decide
    (else walked here). The walk used is added to `collectors` (to be released)."""
    import time

    deadline = None if budget_s is None else time.monotonic() + budget_s
    c = walked
    if c is None:  # the walk reached for z3: walked again here, judged the same way
        c = Collector(prog)  # (an incomplete walk proves nothing, whichever path)
        collectors.append(c)
        c.run()
    else:
        collectors.append(c)
    if (early := _without_pairs(prog, c)) is not None:
        return early
    report = RaceReport(True)
    solver = z3.Solver()
    solver.set("rlimit", rlimit)
    if timeout_ms is not None:
        solver.set("timeout", timeout_ms)
    solver.check()  # z3 counts resource units per context: this is where ours begin
    base = _used(solver)
    settle_local_zero(c, rlimit, timeout_ms)
    settle_stable_globals(c, rlimit, timeout_ms)
    settle_zero_regions(c, rlimit, timeout_ms)
    acc = c.accesses
    for x in range(len(acc)):
        for y in range(x, len(acc)):
            a1, a2 = acc[x], acc[y]
            if "w" not in (a1.kind, a2.kind) or a1.view.key != a2.view.key or \
                    a1.view.key in c.zero_regions:  # always zeros: nothing to see
                continue
            if a1.view.key in c.stable_regions and "r" in (a1.kind, a2.kind):
                continue  # no write changes a cell any read sees (settle_stable_globals)
            report.pairs += 1
            report.rlimit = _used(solver) - base
            spent = "resource" if rlimit_total is not None and \
                report.rlimit > rlimit_total else "time" if deadline is not None \
                and time.monotonic() > deadline else ""
            if spent:
                report.undecided += 1
                report.race_free = False
                report.races.append(Race(a1.what, a2.what,
                                         f"undecided: analysis {spent} budget "
                                         "exhausted"))
                return report
            witness = _conflict(solver, c, prog.machine, a1, a2, f"{x}_{y}")
            if witness is not None:
                report.undecided += witness.startswith("undecided")
                report.race_free = False
                report.races.append(Race(a1.what, a2.what, witness))
                if len(report.races) >= max_races:
                    report.rlimit = _used(solver) - base
                    return report
    report.rlimit = _used(solver) - base
    return report


def _used(solver: z3.Solver) -> int:
    """The resource units the solver's checks have spent so far (z3 counts them)."""
    stats = solver.statistics()
    keys = stats.keys()  # z3's Statistics: a list of names, not a mapping
    return int(stats.get_key_value("rlimit count")) if "rlimit count" in keys else 0


def _already_written(c: Collector, w: Access, tw: Th, r: Access, tr: Th,
                     cell: Term, theirs_at: Access | None = None) -> Term | None:
    """When the reading thread `tr` itself made the write `w`, earlier and for certain,
    to the same cell with the value `tw` writes: then `tw`'s copy of it changes
    nothing `tr` can read, whenever it lands (the uniform stores of one perspective
    are one logical write; errata "uniform stores are one write"). None where that
    cannot hold. Two such writes with different values are a write-write pair the
    analysis checks on its own. `theirs_at`: the site of `tw`'s write where it is
    not `w` (Own-Write-Any-Site, single-valued regions only: the caller's choice).

    Note: Own-Write-Same-Run (errata 8e): where a loop holds both w and r, `tw`'s w
    must be in `tr`'s run of it (equal counters; an uncounted loop: None). A `tw`
    one run ahead makes w after a barrier that orders a third write of another value
    after `tr`'s own w (`g[0] = 1; <barrier>; one thread: g[0] = 2; <barrier>; read
    g[0]` in a loop): then w lands between that write and the read, and changes what
    it reads; no pair of the analysis saw it (the shape own_write_next_run_race). Not
    needed for a single-valued region (race_settle): there that third write stores
    the one value too."""
    if not ((w.certain or guard_holds(w.guard_at, w.pos, r.pos)) and w.value is not None
            and precedes(w.pos, r.pos)):
        return None  # Guarded-Own-Write: a guard of w that holds r (errata, below)
    single = w.view.key in c.single_regions
    runs = () if single else common_runs(c.seqs, w.pos, r.pos)
    if runs is None:
        return None
    at = theirs_at or w
    if at.value is None:
        return None
    mine = w.value(tr, cell)
    theirs = at.value(tw, cell)
    if mine.sort() != theirs.sort():
        return None
    same_instance = _eq_lists(w.view.unit(tr), r.view.unit(tr))
    same_run = [iteration(tw, *k) == iteration(tr, *k) for k in runs]
    return z3.And(*[f(tr) for f in w.path], same_instance, w.covers(tr, cell),
                  *same_run, mine == theirs)


def _conflict(solver: z3.Solver, c: Collector, machine: A.Machine, a1: Access, a2: Access,
              tag: str) -> str | None:
    """A witness that distinct threads make a1 and a2 on one cell, unordered and (two
    writes) with different values; None when z3 proves there is none."""
    N, T = machine.blocks * machine.threads, machine.threads
    th1, th2 = Th(f"{tag}a", T), Th(f"{tag}b", T)
    cons = [th1.t != th2.t, z3.ULT(th1.t, bv(N)), z3.ULT(th2.t, bv(N))]
    cons += [f(th1) for f in a1.path] + [f(th2) for f in a2.path]
    cons.append(_eq_lists(a1.view.unit(th1), a2.view.unit(th2)))  # one region instance
    addr1, addr2 = a1.addr(th1), a2.addr(th2)
    cons += [addr1 == addr2, z3.ULT(addr1, bv(a1.view.size))]
    is_ordered, unit, runs = ordered(c.seqs, a1.pos, a2.pos)
    if is_ordered and unit is not None:  # the barrier orders them for threads of one unit only
        cons.append(z3.Not(_eq_lists(unit(th1), unit(th2))))
    elif unit is not None:  # Same-Run: for threads of one unit, in one run of the loops
        cons.append(z3.Or(z3.Not(_eq_lists(unit(th1), unit(th2))), *[z3.And(*[
            iteration(th1, *k) == iteration(th2, *k) for k in runs])]))
    cons += th1.cons + th2.cons
    # The values come second: most pairs never meet in one cell, and asking that
    # alone spares z3 the float32 terms of what they store (a relaxation: unsat
    # without the value constraints is unsat with them).
    extra: list[Term] = []
    n1, n2 = len(th1.cons), len(th2.cons)
    if a1.kind == a2.kind == "w" and a1.value is not None and a2.value is not None:
        v1, v2 = a1.value(th1, addr1), a2.value(th2, addr2)
        if v1.sort() == v2.sort():
            extra.append(v1 != v2)  # SMT equality: the same bits, NaN included
    elif a1.kind != a2.kind:
        (w, tw), (r, tr) = ((a1, th1), (a2, th2)) if a1.kind == "w" else \
            ((a2, th2), (a1, th1))
        # Own-Write-Any-Site (errata 8f): in a single-valued region any certain
        # earlier write of the reader's own to the cell will do
        owns = [o for o in c.accesses if o.kind == "w" and o.view.key == w.view.key
                ] if w.view.key in c.single_regions else [w]
        rewrites = [x for o in owns
                    if (x := _already_written(c, o, tw, r, tr, addr1, w)) is not None]
        if rewrites:
            extra.append(z3.Not(z3.Or(*rewrites)))
    extra += th1.cons[n1:] + th2.cons[n2:]
    solver.push()
    try:
        solver.add(*cons)
        verdict = solver.check()
        if verdict == z3.sat and extra:
            solver.add(*extra)
            verdict = solver.check()
        if verdict == z3.unsat:
            return None
        if verdict == z3.unknown:
            return "undecided by z3 (counted as a race)"
        m = solver.model()
        return (f"threads t={m.eval(th1.t)} and t={m.eval(th2.t)}, cell "
                f"{a1.view.key[-1]}[{m.eval(addr1)}]")
    finally:
        solver.pop()
