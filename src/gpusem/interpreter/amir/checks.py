"""The checks of the AMIR machine: Figure 7 of Exo-GPU (Section 5.3.3), and the verdict.

Figure 7 is described in prose only; the rules as decided here (errata "Figure 7"):

  CheckReads(τ_v, t, e#, τ_q*):  for every cell (x, n) ∈ W_e# and every record
      (_, ∫, _) ∈ ρ(x, n).r, every executing thread must see it:
        ∀g ∈ G = g_{s#}(σ, ι). ∀τ_q ∈ τ_q*. ∫(g, τ_q) >= τ_v
      The convergence flag t shapes the records R makes (one for all of G, or one per
      thread) but not the check: any thread of a convergent collective may be the one
      whose hardware operation touches the cell (Section 2.2's multicast), so an
      ∃g reading would be unsound (tests pin it: wgmma_cluster_sync_race).
  CheckMutates:  the same over ρ(x, n).m.
  CheckBarrier(e_z#):  for every cell, the arrive and await counts are equal.

Any violation stops the machine with a `Violation` naming the check, the variable and
index, the timelines, the threads on both sides, and both source locations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusem.calculus.gpuir.timelines import VL, QualTL
from gpusem.calculus.span import NO_SPAN, Span
from gpusem.interpreter.amir.records import Rec, Threads, ge, thread_list


def record_visible(r: Rec, vl: int, t: bool, qm: int, exec_: Threads) -> bool:
    """Does record r give every executing thread visibility >= vl on every timeline of
    qm (bit mask)? For a family (amir/records) every member must pass; member g also
    sees itself through its diagonal block `own`.

    Note: `t` (convergence) does not weaken the check: an ∃-reading for convergent
    accesses accepts Section 2.2's third bug (errata "Figure 7")."""
    if not qm:
        return True
    task, mask = exec_
    if task == -1:
        return _visible_to_all_tasks(r, vl, qm)
    c_all = c_nown = -1
    for q in range(qm.bit_length()):
        if qm >> q & 1:
            c = r.cover(task, q, vl)
            c_all &= c
            if r.own is None or not ge(r.own, vl) >> q & 1:
                c_nown &= c
    missing = mask & ~c_all
    if not missing:
        return True
    if r.own is None or r.who[0] != task:
        return False
    # every member g needs missing ⊆ {g} ∩ c_nown: only a one-member family can pass
    return missing == r.who[1] and (missing & (missing - 1)) == 0 \
        and (missing & c_nown) != 0


def _visible_to_all_tasks(r: Rec, vl: int, qm: int) -> bool:
    """The check run at CPU scope (G = 𝔾): a block over all of 𝔾 on every timeline."""
    cov = -1
    for q in range(qm.bit_length()):
        if qm >> q & 1:
            cov &= r.cover(-1, q, vl)
    return cov == -1


def lacking(r: Rec, vl: int, qm: int, exec_: Threads) -> Threads:
    """The executing threads that do not see r (for the report)."""
    task, mask = exec_
    if task == -1:
        return exec_
    cov = -1
    for q in range(qm.bit_length()):
        if qm >> q & 1:
            cov &= r.cover(task, q, vl)
    return (task, mask & ~cov) if mask & ~cov else exec_


# Threads as a report shows them: (task, thread) pairs, "all" (𝔾), or () (none).
ShownThreads = list[tuple[int, int]] | str | tuple[()]


@dataclass(frozen=True, slots=True)
class Violation:
    """The first failing check: the rejection report of `gpusem synccheck`."""

    check: str                        # "CheckReads" | "CheckMutates" | "CheckBarrier"
    variable: str
    index: tuple[int, ...]
    timelines: tuple[str, ...]        # the required timelines (paper names)
    required: str | None              # the required visibility level
    threads: ShownThreads             # (task, thread) pairs of the checking side
    other_threads: ShownThreads       # (task, thread) pairs of the earlier access
    span: Span                        # GPU IR line of the checking (second) access
    other_span: Span                  # GPU IR line of the recorded (first) access
    other_timeline: str | None        # the timeline of the earlier access
    message: str

    def one_line(self) -> str:
        return self.message


@dataclass(slots=True)
class Stats:
    """What the machine did (for benchmarks: recorded accesses per second)."""

    statements: int = 0               # statement executions
    recorded_accesses: int = 0        # cells touched by RecordRead / RecordMutate
    records: int = 0                  # visibility records created
    lifts: int = 0                    # Fence / Arrive / Await executions
    # the rules that did something: a check that met at least one record (or a
    # barrier count), a Fence / Arrive / Await that ran (coverage, issue 14 item 7)
    exercised: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class Verdict:
    """check_amir's answer: accepted, or the first violation."""

    violation: Violation | None
    stats: Stats = field(default_factory=Stats)

    @property
    def accepted(self) -> bool:
        return self.violation is None


_PREFIX = {"CheckReads": "unsynchronized read", "CheckMutates": "unsynchronized mutate",
           "CheckBarrier": "barrier mismatch"}


def access_violation(check: str, var: str, index: tuple[int, ...], r: Rec, vl: int,
                     qm: int, exec_: Threads, origin: Span) -> Violation:
    """CheckReads / CheckMutates failed on record r at cell var[index]."""
    quals = tuple(q.value for q in QualTL if qm >> q.index & 1)
    need = VL(vl).paper_name
    who = thread_list(lacking(r, vl, qm, exec_))
    other = thread_list(r.who)
    earlier = "read" if r.kind == "read" else "written"
    tl = list(QualTL)[r.q].value
    cell = f"{var}[{', '.join(map(str, index))}]" if index else var
    msg = (f"{_PREFIX[check]}: {check} at {origin}: {cell} {earlier} at {r.origin} "
           f"by {other} on {tl} is not {need} for {who} on {', '.join(quals)}")
    return Violation(check, var, index, quals, need, who, other, origin, r.origin, tl,
                     msg)


def barrier_violation(var: str, index: tuple[int, ...], arrives: int, awaits: int,
                      origin: Span) -> Violation:
    cell = f"{var}[{', '.join(map(str, index))}]" if index else var
    msg = (f"barrier mismatch: CheckBarrier at {origin}: {cell} has {arrives} "
           f"arrive(s) but {awaits} await(s)")
    return Violation("CheckBarrier", var, index, (), None, (), (), origin, NO_SPAN,
                     None, msg)
