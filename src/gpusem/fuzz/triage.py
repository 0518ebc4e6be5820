"""`gpusem triage`: every bundle under some folders, grouped by signature (one row per
distinct finding: how often it was seen, its smallest program, its bundles), each row
naming its cause (`attribution.cause_of`, recorded in the bundle's metadata): rows of
one cause are one bug seen under several signatures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpusem.fuzz.bundle import META, read_bundle


@dataclass(frozen=True)
class TriageRow:
    signature: str
    kind: str
    target: str
    prop: str
    bundles: tuple[str, ...] = ()
    sightings: int = 0
    smallest: int = 0
    attribution: str = ""  # whose bug (fuzz/attribution.py), "" where unknown
    cause: str = ""  # attribution.cause_of: the signature unless evidence groups it


def triage(dirs: Sequence[str | Path]) -> list[TriageRow]:
    """Every bundle under `dirs` (searched recursively), grouped by signature: one row
    per distinct finding, most seen first."""
    first: dict[str, TriageRow] = {}
    paths: dict[str, list[str]] = {}
    seen: dict[str, int] = {}
    smallest: dict[str, int] = {}
    blame: dict[str, str] = {}
    cause: dict[str, str] = {}
    for d in dirs:
        root = Path(d)
        metas = [root / META] if (root / META).is_file() else sorted(root.rglob(META))
        for meta in metas:
            if any(part.startswith(".") for part in meta.relative_to(root).parts[:-1]):
                continue  # a store's temporary folders
            b = read_bundle(meta.parent)
            size = int(b.meta.get("size", 0) or 0)
            first.setdefault(b.signature, TriageRow(
                b.signature, str(b.meta["kind"]), b.target, str(b.meta["property"])))
            paths.setdefault(b.signature, []).append(str(b.path))
            seen[b.signature] = seen.get(b.signature, 0) + b.sightings
            smallest[b.signature] = min(smallest.get(b.signature, size), size)
            verdict = b.meta.get("attribution")
            if isinstance(verdict, dict) and not blame.get(b.signature):
                blame[b.signature] = str(verdict.get("verdict") or "")
                cause[b.signature] = str(verdict.get("cause") or "")
    rows = [TriageRow(r.signature, r.kind, r.target, r.prop, tuple(paths[s]), seen[s],
                      smallest[s], blame.get(s, ""), cause.get(s) or s)
            for s, r in first.items()]
    return sorted(rows, key=lambda r: (-r.sightings, r.signature))


__all__ = ["TriageRow", "triage"]
