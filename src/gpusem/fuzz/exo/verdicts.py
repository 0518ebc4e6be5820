"""The two verdicts of the Exo differential and their comparison (issue 16, item 3).

gpusem's verdict on a GPU IR program is that of its AMIR checker (interpreter/amir/
synccheck.py: front end, Figure 5 conversion, Figure 7 checks) under `--rules paper`
and under `--rules fixed`; Exo-GPU's is `compiler/gpuir_exo/verdict.ExoVerdict`.
Each side is reduced to a *class* for comparison:

  gpusem  accept | reject:<hazard>@<statement> | static:<rule>
  Exo     accept | hazard:<name> | static:<message> | compile-static:<message> |
          internal / exo-error / crash / hang (always a finding: Exo broke)

where <hazard> names the conflict as Exo does (RAW: a read checked against earlier
mutates; WAW, WAR; free: a buffer's free; barrier: CheckBarrier) and <statement> is
the kind of GPU IR statement the check ran at (`=`, `+=`, read, instr, free, sync).
Rejections agree whatever their class (hazard vs static is a matter of where a
checker draws the line: REPORT 6.7 item 8); acceptance against rejection is a
disagreement, under each rule set separately.
"""

from __future__ import annotations

import re

from collections.abc import Mapping
from dataclasses import dataclass

from gpusem.calculus.errors import BadInput, BudgetExhausted, IllTyped
from gpusem.calculus.gpuir import ast as A
from gpusem.calculus.gpuir.walk import data_reads, walk
from gpusem.compiler.gpuir_exo.verdict import ExoVerdict, normalise

RULES = ("paper", "fixed")
BROKEN = ("internal", "exo-error", "crash", "hang")


@dataclass(frozen=True)
class GpusemVerdict:
    kind: str              # accept | reject | static
    hazard: str = ""       # RAW | WAW | WAR | free | barrier (reject)
    at: str = ""           # the statement kind the failing check ran at
    check: str = ""        # CheckReads | CheckMutates | CheckBarrier | the static rule
    message: str = ""
    diagnostic: str = ""   # the full report (both source lines)
    line: int = 0
    other_line: int = 0

    @property
    def cls(self) -> str:
        if self.kind == "reject":
            return f"reject:{self.hazard}@{self.at}"
        if self.kind == "static":
            return f"static:{self.check}"
        return "accept"

    def as_json(self) -> dict:
        return {"kind": self.kind, "class": self.cls, "check": self.check,
                "message": self.message, "line": self.line,
                "other_line": self.other_line}


def gpusem_verdict(proc: A.Proc, defines: Mapping[str, int], source: str,
                   rules: str, max_steps: int = 20_000_000) -> GpusemVerdict:
    """The AMIR checker's verdict on `proc` (BadInput propagates: a generator bug)."""
    from gpusem.interpreter.amir.synccheck import diagnostic, synccheck_proc

    try:
        res = synccheck_proc(proc, defines, rules=rules, max_steps=max_steps)
    except IllTyped as err:
        return GpusemVerdict("static", check=err.rule or "IllTyped",
                             message=err.one_line(), line=err.span.line)
    except BudgetExhausted as err:
        raise BadInput(f"gpusem budget: {err.one_line()}") from None
    v = res.verdict.violation
    if v is None:
        return GpusemVerdict("accept")
    at = statement_kind(proc, v.span.line, v.variable, v.index)
    hazard = _hazard(v.check, at)
    return GpusemVerdict("reject", hazard, at, v.check, v.message,
                         diagnostic(v, source, v.span.file), v.span.line,
                         v.other_span.line)


def _hazard(check: str, at: str) -> str:
    if check == "CheckBarrier":
        return "barrier"
    if at == "free":
        return "free"
    if check == "CheckReads":
        return "WAR"
    return "RAW" if at in ("read", "instr-read") else "WAW"


def statement_kind(proc: A.Proc, line: int, variable: str,
                   index: tuple[int, ...] | None = None) -> str:
    """What the GPU IR statement at `line` does with cell `variable[index]`: `=` /
    `+=` (its destination), `read`, `instr` (an instruction argument), `free` (the
    line of its allocation: the inserted free), `sync` (a barrier statement), or `?`.
    Where the statement both reads and writes `variable`, the constant coordinates of
    each access that could touch `index` decide."""
    for s in walk(proc.body):
        if s.span.line != line:
            continue
        match s:
            case A.Assign(name=n) | A.Reduce(name=n) if n == variable:
                reads = [r for r in data_reads(s.rhs) if r.name == variable]
                dest_ok = _may_touch([A.WPoint(c) for c in s.idx], index)
                if reads and any(_may_touch(list(r.coords), index) for r in reads) \
                        and not dest_ok:
                    return "read"
                return "=" if isinstance(s, A.Assign) else "+="
            case A.Assign() | A.Reduce():
                return "read"
            case A.Alloc() | A.BarrierAlloc():
                return "free"
            case A.InstrCall():
                return "instr"
            case A.Arrive() | A.Await() | A.Fence():
                return "sync"
    return "?"


def _may_touch(coords: list, index: tuple[int, ...] | None) -> bool:
    """Can a window with these coordinates contain the cell `index`? (Only constant
    point coordinates are compared.)"""
    if index is None or len(coords) != len(index):
        return True
    for c, i in zip(coords, index):
        if isinstance(c, A.WPoint) and isinstance(c.index, A.CInt) and c.index.value != i:
            return False
    return True


@dataclass(frozen=True)
class Comparison:
    """The differential's answer on one program: agreement, or a finding kind and
    signature (which rule sets disagree, and how)."""

    agree: bool
    kind: str = ""
    signature: str = ""
    disagree_under: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        return "pass" if self.agree else "finding"


def exo_class(v: ExoVerdict) -> str:
    match v.kind:
        case "accept":
            return "accept"
        case "hazard":
            return "hazard:" + v.name.replace(" HAZARD", "")
        case "static" | "compile-static":
            # Exo names statements by a counter (`Fence_124`, endgame `Fence_280'`)
            # that differs from run to run: one bug, one signature (FINDINGS H2)
            msg = re.sub(r"\b(Fence|Arrive|Await)_\d+'*", r"\1_N", v.message)
            return f"{v.kind}:{normalise(msg)}"
    return f"{v.kind}:{normalise(v.name + ' ' + v.message, 60)}"


def compare(exo: ExoVerdict, gpusem: Mapping[str, GpusemVerdict],
            exo_at: str = "") -> Comparison:
    """Agreement of Exo's verdict with gpusem's under each rule set; `exo_at` is the
    statement kind at Exo's hazard (from its debug log), part of the signature."""
    ex = exo_class(exo)
    if exo.kind in BROKEN:
        kind = exo.kind if exo.kind.startswith("exo") else f"exo-{exo.kind}"
        return Comparison(False, kind, f"{kind}:{ex}", RULES)
    bad = tuple(r for r in RULES
                if (gpusem[r].kind == "accept") != (exo.kind == "accept"))
    if not bad:
        return Comparison(True)
    if exo.kind == "accept":
        kind = "gpusem-rejects"
        ex_part = "accept"
        parts = "|".join(f"{r}={gpusem[r].cls}" for r in RULES)
    else:  # where Exo rejects, gpusem's side is only: does it accept?
        kind = "exo-rejects" if exo.kind == "hazard" else f"exo-{exo.kind}"
        ex_part = ex + (f"@{exo_at}" if exo_at else "")
        parts = "|".join(f"{r}={gpusem[r].kind}" for r in RULES)
    return Comparison(False, kind, f"{kind}:exo={ex_part}|{parts}", bad)
