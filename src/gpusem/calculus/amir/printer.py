"""AMIR printer: `calculus.amir.ast` -> the printed form of
`shared/spec/gpuir-syntax.md` (one statement a line, as in Figure 4), which
`calculus.amir.parser` reads back to the same tree (`parse(print(p)) == p`, pinned by
tests/amir/test_amir_roundtrip.py).

Layout:
  proc NAME(y, ...):
      for tid in loop(0, 128):
          RecordRead(fully_ordered, false, buf[tid], cuda2, {}, {}) @ threads(tid)
  - control, boolean and window syntax is GPU IR's (calculus.gpuir.printer);
  - statements that consult the executing threads end in `@ cpu` (CPU scope, all of 𝔾)
    or `@ threads(start[:count[:stride]], ...)` (one box dimension each);
  - `Alloc(z[2, 2], barrier)` allocates a barrier; `{...}` are timeline or barrier sets;
  - an empty block prints `pass`.
"""

from __future__ import annotations

from typing import assert_never

from gpusem.calculus.amir import ast as A
from gpusem.calculus.gpuir.printer import print_bexpr, print_cexpr, print_wcoords
from gpusem.calculus.gpuir.timelines import VL, QualTL

INDENT = "    "


def print_proc(p: A.AProc) -> str:
    lines = [f"proc {p.name}({', '.join(p.params)}):"]
    lines += _body(p.body, 1)
    return "\n".join(lines) + "\n"


def print_stmt(s: A.AStmt, depth: int = 0) -> str:
    return "\n".join(_stmt(s, depth))


def _body(body: tuple[A.AStmt, ...], depth: int) -> list[str]:
    if not body:
        return [INDENT * depth + "pass"]
    out: list[str] = []
    for s in body:
        out += _stmt(s, depth)
    return out


def _stmt(s: A.AStmt, depth: int) -> list[str]:
    pad = INDENT * depth
    match s:
        case A.Loop(var=v, lo=lo, hi=hi, body=b):
            head = f"{pad}for {v} in loop({print_cexpr(lo)}, {print_cexpr(hi)}):"
            return [head] + _body(b, depth + 1)
        case A.Guard(cond=c, body=b):
            return [f"{pad}if {print_bexpr(c)}:"] + _body(b, depth + 1)
        case _:
            return [pad + print_simple(s)]


def print_simple(s: A.AStmt) -> str:
    """One non-compound statement, on one line (also used in error reports)."""
    match s:
        case A.IncTaskID():
            return "IncTaskID"
        case A.Alloc(name=n, shape=sh, barrier=z):
            dims = f"[{', '.join(print_cexpr(c) for c in sh)}]" if sh else ""
            return f"Alloc({n}{dims}{', barrier' if z else ''})"
        case A.Free(name=n):
            return f"Free({n})"
        case A.RecordRead() | A.RecordMutate():
            head = "RecordRead" if isinstance(s, A.RecordRead) else "RecordMutate"
            args: tuple[str, ...] = (_vl(s.vl), _bool(s.t), print_access(s.access),
                                     s.qual.value, _quals(s.atomic),
                                     _accesses(s.barriers))
            return f"{head}({', '.join(args)}){_threads(s.threads)}"
        case A.ClearReads(access=a):
            return f"ClearReads({print_access(a)})"
        case A.ClearMutates(access=a):
            return f"ClearMutates({print_access(a)})"
        case A.Fence(t=t, pre=pre, full=full, temp=temp, threads=th):
            args = (_bool(t), _quals(pre), _quals(full), _quals(temp))
            return f"Fence({', '.join(args)}){_threads(th)}"
        case A.Arrive(t=t, pre=pre, barriers=zs, threads=th):
            return f"Arrive({_bool(t)}, {_quals(pre)}, {_accesses(zs)}){_threads(th)}"
        case A.Await(barrier=z, full=full, temp=temp, n=n, threads=th):
            args = (print_access(z), _quals(full), _quals(temp), str(n))
            return f"Await({', '.join(args)}){_threads(th)}"
        case A.CheckReads() | A.CheckMutates():
            head = "CheckReads" if isinstance(s, A.CheckReads) else "CheckMutates"
            args = (_vl(s.vl), _bool(s.t), print_access(s.access), _quals(s.quals))
            return f"{head}({', '.join(args)}){_threads(s.threads)}"
        case A.CheckBarrier(access=a):
            return f"CheckBarrier({print_access(a)})"
        case A.Loop() | A.Guard():
            return _stmt(s, 0)[0]
        case _:
            assert_never(s)


def print_access(a: A.Access) -> str:
    return a.name + (f"[{print_wcoords(a.coords)}]" if a.coords else "")


def print_threads(th: A.ThreadMap) -> str:
    if th.cpu:
        return "cpu"
    return f"threads({', '.join(_range(r) for r in th.dims)})"


def _threads(th: A.ThreadMap) -> str:
    return f" @ {print_threads(th)}"


def _range(r: A.ThreadRange) -> str:
    text = print_cexpr(r.start)
    if r.count != 1 or r.stride != 1:
        text += f" : {r.count}"
    if r.stride != 1:
        text += f" : {r.stride}"
    return text


def _vl(v: VL) -> str:
    return v.paper_name


def _bool(t: bool) -> str:
    return "true" if t else "false"


def _quals(qs: frozenset[QualTL]) -> str:
    return "{" + ", ".join(q.value for q in sorted(qs, key=lambda q: q.index)) + "}"


def _accesses(zs: tuple[A.Access, ...]) -> str:
    return "{" + ", ".join(print_access(z) for z in zs) + "}"
