"""Exo-GPU's verdict on one proc, classified from the worker's raw answer (a pure
function of recorded output, so CI tests it without Exo installed).

Kinds (most to least accepting):
  accept          sync_check passed and code generation succeeded
  compile-static  sync_check passed, then code generation rejected the proc (Exo runs
                  checks there that sync_check does not: REPORT.md 6.7 item 9)
  hazard          the abstract machine rejected it: `CamsporkError` whose text is a
                  hazard name (`RAW HAZARD`, `free_missing_sync HAZARD`, ...) or a
                  barrier-state failure (`Arrive count (a) != Await count (w)`, ...)
  static          a static rejection: the front end while loading, or the backend
                  checks of sync_check (`file:line:col:(sN): text`)
  internal        the checker stopped on an implementation limit or an internal
                  requirement (`CamsporkError` of another text)
  exo-error       another exception inside Exo (AssertionError, KeyError, ...): a bug
  crash           the worker process died (a signal: Exo's C++ checker segfaults)
  hang            no answer within the time limit
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Barrier-state failures of the checker that are verdicts, not limits (REPORT.md 6.1).
BARRIER_FAILURES = (
    "Arrive count", "Await count", "Arrived twice", "Awaited twice",
    "No forward progress", "Cannot use this barrier as trailing barrier",
)
STATIC_CLASSES = ("ValueError", "TypeError", "SyntaxError", "ParseError",
                  "CollTilingError", "DomainCompletionError", "MemGenError",
                  "SchedulingError", "TypeCheckError", "LookupError")
_LOC = re.compile(r"^(?:<proc>|[^:\s]*):(\d+):(\d+):(?:\(s\d+\):)?\s*")


@dataclass(frozen=True)
class ExoVerdict:
    kind: str          # see the module docstring
    name: str = ""     # the hazard text, or the exception class
    message: str = ""  # the full text (location prefix removed)
    stage: str = ""    # load | sync_check | compile | ok | (crash/hang)
    line: int = 0      # line:col in the emitted source, when Exo names one
    column: int = 0

    @property
    def rejects(self) -> bool:
        return self.kind != "accept"

    def short(self) -> str:
        if self.kind == "accept":
            return "accept"
        if self.kind == "hazard":
            return f"hazard {self.name}"
        return f"{self.kind} ({self.stage}): {self.name}: {self.message[:120]}"

    def as_json(self) -> dict:
        return {"kind": self.kind, "name": self.name, "message": self.message,
                "stage": self.stage, "line": self.line, "column": self.column}


def classify(answer: dict | None, failure: str = "") -> ExoVerdict:
    """The verdict from the worker's answer; `failure` is `hang` or `crash:<signal>`
    when there was no answer."""
    if answer is None:
        kind, _, sig = failure.partition(":")
        if kind == "hang":
            return ExoVerdict("hang", "timeout", "no answer within the time limit")
        return ExoVerdict("crash", sig or "unknown", f"the Exo worker died ({sig})",
                          "crash")
    stage = answer.get("stage", "")
    if stage == "ok":
        return ExoVerdict("accept", stage="ok")
    cls = answer.get("exc_class", "")
    mro = answer.get("mro", [cls])
    text = answer.get("message", "")
    line, col, body = _location(text)
    if cls == "CamsporkError":
        if text.endswith("HAZARD"):
            return ExoVerdict("hazard", text, text, stage)
        if text.startswith(BARRIER_FAILURES):
            return ExoVerdict("hazard", _first_line(text), text, stage)
        return ExoVerdict("internal", _first_line(text), text, stage)
    if any(c in STATIC_CLASSES for c in mro) or cls in ("ValueError", "TypeError"):
        kind = "compile-static" if stage == "compile" else "static"
        return ExoVerdict(kind, cls, body, stage, line, col)
    return ExoVerdict("exo-error", cls, body, stage, line, col)


def _location(text: str) -> tuple[int, int, str]:
    m = _LOC.match(text)
    if m is None:
        return 0, 0, text
    return int(m[1]), int(m[2]), text[m.end():]


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def normalise(text: str, limit: int = 100) -> str:
    """A static message as a signature: names, numbers and quoted code folded, so one
    rule of Exo is one class however often it fires."""
    t = _first_line(text)
    t = re.sub(r"\b\d+\b", "N", t)
    t = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", t)
    t = re.sub(r"\[[^\]]*\]", "[…]", t)
    t = re.sub(r"\(at .*", "", t)
    return t.strip()[:limit]


def hazard_location(sync_error: str) -> tuple[int, int, str] | None:
    """From Exo's debug log (`*-sync-error.py`): the emitted line:col of the first
    `... HAZARD @ cell` remark and the cell text."""
    lines = sync_error.splitlines()
    for k, ln in enumerate(lines):
        m = re.search(r"#\s*(\S*HAZARD|[A-Za-z_ ]*HAZARD)\s*@\s*(.*)$", ln)
        if m is None:
            continue
        for back in range(k - 1, max(k - 4, -1), -1):
            loc = re.search(r":(\d+):(\d+):\(s\d+\)", lines[back])
            if loc is not None:
                return int(loc[1]), int(loc[2]), m[2].strip()
        return 0, 0, m[2].strip()
    return None
