"""Text for `gpusem step FILE.gpuir`: thread sets, visibility levels, cell windows and
trace lines of the AMIR debugging session (interpreter/amir/debug.py), and the Event
(one executed statement) they describe. Pure functions.

Conventions: as in interpreter/amir/records.py (a thread set is (task, mask), ALL is
𝔾; levels are four timeline masks). Timelines are shown by their Figure 16 short
names (cuda2 = cuda_in_order_ram_qual, ...) to keep lifted levels on one line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gpusem.calculus.amir import ast as A
from gpusem.calculus.amir.printer import print_simple
from gpusem.calculus.gpuir.timelines import VL, QualTL
from gpusem.interpreter.amir.checks import Violation
from gpusem.interpreter.amir.records import Levels, Threads, level_of


@dataclass(frozen=True, slots=True)
class Event:
    """One executed statement: what ran, where, by whom, and (detail) its changes."""

    n: int                                   # step number, from 1
    stmt: A.AStmt
    task: int                                # ι when it ran
    loops: tuple[tuple[str, int], ...]       # enclosing loop values, outermost first
    threads: Threads | None                  # g_{s#}(σ, ι); None: no thread mapping
    changes: tuple[str, ...] = ()            # ρ changes (only when detail was asked)
    violation: Violation | None = None



_QUALS = list(QualTL)


def cell_name(name: str, idx: tuple[int, ...]) -> str:
    return f"{name}[{', '.join(map(str, idx))}]" if idx else name


def ids_text(ids: list[int]) -> str:
    if len(ids) == 1:
        return f"#{ids[0]}"
    return f"{len(ids)} records #{min(ids)}..#{max(ids)}"


def threads_text(ts: Threads | None) -> str:
    """`task 1 threads 0..127`, `task 0 thread 5`, `all threads` (𝔾)."""
    if ts is None:
        return "-"
    task, mask = ts
    if task == -1:
        return "all threads (𝔾)"
    runs, i = [], 0
    while mask >> i:
        if mask >> i & 1:
            j = i
            while mask >> (j + 1) & 1:
                j += 1
            runs.append(str(i) if i == j else f"{i}..{j}")
            i = j + 1
        else:
            i += 1
    many = len(runs) > 1 or ".." in (runs[0] if runs else "")
    shown = ", ".join(runs[:6]) + (", ..." if len(runs) > 6 else "")
    return f"task {task} thread{'s' if many else ''} {shown or 'none'}"


def levels_text(lv: Levels) -> str:
    """A map QualTL -> VL as `fully_ordered on {cuda2}; unordered on {...}`."""
    parts = []
    for level in (4, 3, 2, 1):
        qs = [q.short for q in _QUALS if level_of(lv, q.index) == level]
        if qs:
            parts.append(f"{VL(level).paper_name} on {{{', '.join(qs)}}}")
    return "; ".join(parts) or "invisible"


def cell_text(name: str, cells: np.ndarray, shape: tuple[int, ...]) -> str:
    """Cells (an argwhere array) as `x[3]`, `x[0:128]` (a full box) or a list."""
    if not shape:
        return name
    count = len(cells)
    if count == 1:
        return f"{name}[{', '.join(map(str, cells[0].tolist()))}]"
    lo, hi = cells.min(axis=0), cells.max(axis=0) + 1
    if int(np.prod(hi - lo)) == count:
        pairs = zip(lo.tolist(), hi.tolist(), strict=True)
        box = ", ".join(f"{a}:{b}" for a, b in pairs)
        return f"{name}[{box}]"
    first = ", ".join(f"[{', '.join(map(str, c))}]" for c in cells[:4].tolist())
    return f"{name}{{{first}{', ...' if count > 4 else ''}}} ({count} cells)"


def describe_event(e: Event) -> str:
    """One line of the --trace file."""
    loops = " ".join(f"{k}={y}" for k, y in e.loops)
    return (f"{e.n:7d} task {e.task} {loops + ' ' if loops else ''}line "
            f"{e.stmt.origin.line}: {print_simple(e.stmt)}"
            + (f"  FAILED: {e.violation.message}" if e.violation else ""))


def program_lines(prog: A.AProc) -> tuple[list[str], dict[int, int]]:
    """The AMIR program as printed (calculus/amir/printer's layout), and for every
    statement (by id) its line index: `list` marks the next statement in it."""
    from gpusem.calculus.amir import ast as A

    lines = [f"proc {prog.name}({', '.join(prog.params)}):"]
    index: dict[int, int] = {}

    def walk(body: tuple[A.AStmt, ...], depth: int) -> None:
        for s in body:
            index[id(s)] = len(lines)
            lines.append("    " * depth + print_simple(s))
            if isinstance(s, (A.Loop, A.Guard)):
                walk(s.body, depth + 1)

    walk(prog.body, 1)
    return lines, index
