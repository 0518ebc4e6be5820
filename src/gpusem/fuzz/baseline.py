"""Known findings (issue 32.7): a *baseline* is what a CI run already knows about,
read from an earlier campaign's JSON report or from a folder of bundles (searched
recursively: a committed `gpusem-known/`, a downloaded artifact); a *corpus* is a
folder of stored bundles replayed before a campaign generates anything, as
hypothesis replays its example database first.

A finding is *known* when the baseline holds its signature (or one it refines,
`targets.same_finding`) and, where both sides have an attribution verdict, the same
one: the same symptom blamed on another component is another cause. Known findings
pass: only the others make `gpusem fuzz` exit 1, so a pull request does not fail on
a bug that is already on main (a run-number seed meets it again and again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpusem.calculus.errors import BadInput
from gpusem.fuzz.bundle import META
from gpusem.fuzz.targets import same_finding


@dataclass(frozen=True)
class Known:
    signature: str
    attribution: str = ""  # the verdict where the baseline records one
    where: str = ""  # the bundle or report it comes from


@dataclass(frozen=True)
class Baseline:
    source: str
    known: tuple[Known, ...]

    def match(self, signature: str, attribution: str = "") -> Known | None:
        """The known finding `signature` (with that cause) is, or None: new."""
        for k in self.known:
            if not same_finding(k.signature, signature):
                continue
            if k.attribution and attribution and k.attribution != attribution:
                continue  # the same symptom, another component to blame
            return k
        return None


def load_baseline(path: str | Path) -> Baseline:
    """The findings an earlier JSON report or a folder of bundles records; BadInput
    (exit 2, one line) for a path that is neither."""
    p = Path(path)
    if p.is_dir():
        known = tuple(_from_bundle(m) for m in bundle_metas(p))
    elif p.is_file():
        known = _from_report(p)
    else:
        raise BadInput(f"baseline not found: {p} (a JSON report of gpusem fuzz or a "
                       "folder of bundles)")
    return Baseline(str(p), known)


def bundle_metas(folder: Path) -> list[Path]:
    """Every bundle's metadata file under `folder` (it, or below it)."""
    return [folder / META] if (folder / META).is_file() else sorted(folder.rglob(META))


def _from_bundle(meta_file: Path) -> Known:
    try:
        meta = json.loads(meta_file.read_text())
        signature = meta["signature"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise BadInput(f"malformed bundle in the baseline: {meta_file}: "
                       f"{type(err).__name__}: {err}") from None
    if not isinstance(signature, str) or not signature:
        raise BadInput(f"malformed bundle in the baseline: {meta_file}: no signature")
    found = meta.get("attribution")
    verdict = str(found.get("verdict", "")) if isinstance(found, dict) else ""
    return Known(signature, verdict, str(meta_file.parent))


def _from_report(path: Path) -> tuple[Known, ...]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise BadInput(f"baseline: {path}: not a JSON report: {err}") from None
    if not isinstance(doc, dict) or doc.get("schema") != "gpusem-campaign-report":
        raise BadInput(f"baseline: {path}: not a gpusem campaign report (schema "
                       "gpusem-campaign-report; `gpusem fuzz --json FILE` writes one)")
    out = []
    for f in doc.get("findings") or []:
        if not isinstance(f, dict) or not isinstance(f.get("signature"), str):
            raise BadInput(f"baseline: {path}: a finding without a signature")
        out.append(Known(f["signature"], str(f.get("attribution") or ""),
                         str(f.get("bundle", ""))))
    return tuple(out)


__all__ = ["Baseline", "Known", "bundle_metas", "load_baseline"]
