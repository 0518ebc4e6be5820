"""What a step of `gpusem step FILE.gpuir` did to ρ, and ρ itself, for people: the
inspection side of the AMIR debugging session (interpreter/amir/debug.py).

A step's changes are found by comparing before and after, never by hooking the
machine's rules: for a Record*/Clear* the accessed variable's set-id array (which
cells got or lost which records: R of Definition B.1, or the dominance drop of
errata "record dominance"); for Fence/Arrive/Await every live record's blocks ∫ and
observed arrive counts p, and the barrier counts (a, w) (lift, Definition B.2).
Records with the same provenance and change are reported as one line.

Conventions: as in interpreter/amir/records.py and amir/store.py (ρ(x, n).r / .m ->
`Var.rd` / `Var.mu` set ids; a record's ∫ -> `Rec.blocks`, p -> `Rec.p`).
"""

from __future__ import annotations

from typing import Iterator, Protocol, cast

import numpy as np
from gpusem.calculus.amir import ast as A
from gpusem.calculus.amir.printer import print_access
from gpusem.calculus.errors import BadInput
from gpusem.calculus.gpuir.timelines import QualTL
from gpusem.interpreter.amir.ctrl import compile_window
from gpusem.interpreter.amir.debug_show import (
    cell_name,
    cell_text,
    ids_text,
    levels_text,
    threads_text,
)
from gpusem.interpreter.amir.records import BarrierCell, Levels, Rec, Threads
from gpusem.interpreter.amir.state import MachineState

_ACCESS = (A.RecordRead, A.RecordMutate, A.ClearReads, A.ClearMutates)
_LIFTS = (A.Fence, A.Arrive, A.Await)
_QUALS = list(QualTL)

CellAccess = A.RecordRead | A.RecordMutate | A.ClearReads | A.ClearMutates
Windowed = CellAccess | A.CheckReads | A.CheckMutates | A.CheckBarrier
# What `before` takes: a Record*/Clear*'s array (attr, set ids), a lift's records
# (id -> (record, its blocks, its p)) and barrier counts (name -> (a, w)), or ι.
CellsBefore = tuple[str, np.ndarray | None]
RecsBefore = dict[int, tuple[Rec, dict[Threads, Levels], dict[BarrierCell, int]]]
BarsBefore = dict[str, tuple[np.ndarray, np.ndarray]]
LiftBefore = tuple[RecsBefore, BarsBefore]
Before = CellsBefore | LiftBefore | int


class SessionView(Protocol):
    """What Rho reads of the session (interpreter/amir/debug.py's `Session`)."""

    @property
    def machine(self) -> MachineState: ...

    @property
    def prog(self) -> A.AProc: ...


class Rho:
    """ρ of a session's current machine (`session.machine`, replaced by `back`)."""

    def __init__(self, session: SessionView):
        self.s = session
        self._stmts = {id(s): s for s in _leaves(session.prog.body)}

    def variables(self) -> list[str]:
        """Every variable of ρ with its shape and how many records its cells hold."""
        out = []
        for name, v in self.s.machine.vars.items():
            n = {r.id for arr in (v.rd, v.mu) for sid in np.unique(arr).tolist()
                 for r in self._set(sid)}
            kind = "barrier" if v.arr is not None else "data"
            shape = list(v.shape) if v.shape else "scalar"
            out.append(f"{name}: {kind} {shape}, {len(n)} record(s)")
        return out

    def before(self, s: A.AStmt) -> Before:
        """What `changes` compares against, taken just before s runs."""
        m = self.s.machine
        if isinstance(s, _ACCESS):
            v = m.vars.get(s.access.name)
            attr = "rd" if isinstance(s, (A.RecordRead, A.ClearReads)) else "mu"
            return attr, (None if v is None else getattr(v, attr).copy())
        if isinstance(s, _LIFTS):
            recs = {r.id: (r, dict(r.blocks), dict(r.p)) for r in self.live_records()}
            bars = {n: (v.arr.copy(), cast(np.ndarray, v.awt).copy())
                    for n, v in m.vars.items() if v.arr is not None}
            return recs, bars
        return m.task

    def changes(self, s: A.AStmt, bound: frozenset[str],
                before: Before | None) -> tuple[str, ...]:
        """One line per change statement s made to ρ (or ι), for people."""
        m = self.s.machine
        match s:
            case A.RecordRead() | A.RecordMutate() | A.ClearReads() | A.ClearMutates():
                return self._cell_changes(s, self.window_text(s, bound),
                                          *cast(CellsBefore, before))
            case A.Fence() | A.Arrive() | A.Await():
                return self._lift_changes(*cast(LiftBefore, before))
            case A.CheckReads() | A.CheckMutates() | A.CheckBarrier():
                return (f"check passed on {self.window_text(s, bound)}; ρ unchanged",)
            case A.Alloc(name=n):
                v = m.vars[n]
                shape = "".join(f"[0:{k}]" for k in v.shape)
                what = "(a, w) = (0, 0)" if v.arr is not None else "r = m = ∅"
                return (f"Alloc: ρ({n}{shape}) fresh: {what} on every cell",)
            case A.Free(name=n):
                return (f"Free: {n} dropped; its cells release their records",)
            case A.IncTaskID():
                return (f"ι: {before} -> {m.task}",)
        return ()

    def _cell_changes(self, s: CellAccess, window: str, attr: str,
                      old: np.ndarray | None) -> tuple[str, ...]:
        name = s.access.name
        v = self.s.machine.vars[name]
        new = getattr(v, attr)
        if old is None or old.shape != new.shape:
            grown = np.zeros(new.shape, dtype=new.dtype)
            if old is not None:
                grown[tuple(slice(0, k) for k in old.shape)] = old
            old = grown
        part = "r (reads)" if attr == "rd" else "m (mutates)"
        diff = old != new
        if not diff.any():
            what = "already empty" if isinstance(s, (A.ClearReads, A.ClearMutates)) \
                else "already holds this record"
            return (f"ρ({window}).{part[0]} unchanged ({what})",)
        out = []
        pairs = np.unique(np.stack([old[diff], new[diff]]), axis=1).T.tolist()
        for a, b in pairs:
            cells = cell_text(name, np.argwhere(diff & (old == a) & (new == b)),
                              v.shape)
            was = {r.id: r for r in self._set(a)}
            now = {r.id: r for r in self._set(b)}
            for rid in now.keys() - was.keys():
                out.append(f"ρ({cells}).{part}: + {self.describe_record(now[rid])}")
            for rid in was.keys() - now.keys():
                why = "cleared" if not now else "dropped (dominated by the new one)"
                out.append(f"ρ({cells}).{part}: - #{rid} {why}")
        return tuple(out)

    def _lift_changes(self, recs: RecsBefore, bars: BarsBefore) -> tuple[str, ...]:
        """What λ did, records with the same provenance and change grouped."""
        groups: dict[str, list[int]] = {}
        for rid, (r, blocks, p) in recs.items():
            for ts, lv in r.blocks.items():
                if blocks.get(ts) != lv:
                    groups.setdefault(f"lifted @IDS@ ({self.short_record(r)}): now "
                                      f"{levels_text(lv)} for {threads_text(ts)}",
                                      []).append(rid)
            for cell, a in r.p.items():
                if cell not in p:
                    bar = cell_name(cell[0][0], cell[1])
                    groups.setdefault(f"@IDS@ ({self.short_record(r)}) observed "
                                      f"{bar} arrive count {a}", []).append(rid)
        for r in self.live_records():
            if r.id not in recs:
                groups.setdefault(f"split off @IDS@ ({self.short_record(r)}) from its "
                                  f"family", []).append(r.id)
        out = [text.replace("@IDS@", ids_text(ids)) for text, ids in groups.items()]
        for n, (arr, awt) in bars.items():
            v = self.s.machine.vars.get(n)
            if v is None or v.arr is None or v.arr.shape != arr.shape:
                continue
            assert v.awt is not None                     # a barrier has both counts
            for idx in np.argwhere((v.arr != arr) | (v.awt != awt)).tolist():
                i = tuple(idx)
                out.append(f"{cell_name(n, i)}: (a, w) = ({arr[i]}, {awt[i]}) -> "
                           f"({v.arr[i]}, {v.awt[i]})")
        return tuple(out) or ("no record changed (λ(r) = r for every live record)",)

    def window_text(self, s: Windowed, bound: frozenset[str]) -> str:
        """The cells statement s accesses now (W_{e#} under σ), as `buf[3]` or
        `buf[0:128]`; its printed access where the window cannot be evaluated."""
        acc = s.access
        v = self.s.machine.vars.get(acc.name)
        shape = v.shape if v is not None else (0,) * len(acc.coords)
        try:
            idx = compile_window(acc, bound, s.origin).raw(self.s.machine.env, shape)
        except (BadInput, IndexError, KeyError):
            return print_access(acc)
        parts = [str(i) if isinstance(i, int) else f"{i.start}:{i.stop}" for i in idx]
        return f"{acc.name}[{', '.join(parts)}]" if parts else acc.name

    def _set(self, sid: int) -> tuple[Rec, ...]:
        return self.s.machine.sets.sets[sid] or ()

    def live_records(self) -> list[Rec]:
        """Every record some cell of ρ holds, in creation order."""
        seen: dict[int, Rec] = {}
        for v in self.s.machine.vars.values():
            for arr in (v.rd, v.mu):
                for sid in np.unique(arr).tolist():
                    for r in self._set(sid):
                        seen.setdefault(r.id, r)
        return [seen[k] for k in sorted(seen)]

    def var_of(self, r: Rec) -> str:
        st = self._stmts.get(r.stmt)
        return st.access.name if st is not None else "?"

    def short_record(self, r: Rec) -> str:
        return f"{r.kind} of {self.var_of(r)} at line {r.origin.line}"

    def describe_record(self, r: Rec) -> str:
        fam = ", one record per thread" if r.own is not None else ""
        return (f"#{r.id} {r.kind} of {self.var_of(r)} at line {r.origin.line} by "
                f"{threads_text(r.who)} on {_QUALS[r.q].value}{fam}")

    def records(self, name: str) -> list[str]:
        """ρ restricted to one variable, grouped by record set, for `records VAR`."""
        v = self.s.machine.vars.get(name)
        if v is None:
            have = ", ".join(sorted(self.s.machine.vars)) or "none yet"
            raise BadInput(f"no variable {name} in ρ (have: {have})")
        out = [f"ρ({name}): shape {list(v.shape)}"]
        for attr, label in (("rd", "r (reads)"), ("mu", "m (mutates)")):
            arr = getattr(v, attr)
            flat = arr.reshape(-1)
            uniq, first = np.unique(flat, return_index=True)
            for sid in uniq[np.argsort(first)].tolist():   # in order of first cell
                cells = cell_text(name, np.argwhere(arr == sid), v.shape)
                recs = self._set(sid)
                out.append(f"  {label} {cells}: " + ("∅" if not recs else
                                                     f"{len(recs)} record(s)"))
                for r in recs:
                    out.append(f"    {self.describe_record(r)}")
                    for ts, lv in r.blocks.items():
                        out.append(f"      visible to {threads_text(ts)}: "
                                   f"{levels_text(lv)}")
                    if r.own is not None:
                        out.append(f"      each member sees itself: "
                                   f"{levels_text(r.own)}")
                    for cell, a in r.p.items():
                        out.append(f"      observed {cell_name(cell[0][0], cell[1])} "
                                   f"arrive count {a}")
        if v.arr is not None:                 # a barrier: its counts, cells grouped
            assert v.awt is not None
            pairs = np.stack([v.arr, v.awt], axis=-1).reshape(-1, 2)
            for a, w in np.unique(pairs, axis=0).tolist():
                where = np.argwhere((v.arr == a) & (v.awt == w))
                out.append(f"  {cell_text(name, where, v.shape)}: (a, w) = ({a}, {w})"
                           + ("   arrives and awaits differ" if a != w else ""))
        return out


def _leaves(body: tuple[A.AStmt, ...]) -> Iterator[A.RecordRead | A.RecordMutate]:
    for s in body:
        if isinstance(s, (A.Loop, A.Guard)):
            yield from _leaves(s.body)
        elif isinstance(s, (A.RecordRead, A.RecordMutate)):
            yield s
