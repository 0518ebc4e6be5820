"""Stored findings decided again under today's attribution rules, without a GPU
(`gpusem triage --redecide DIR`, issue 23 item B): a finding blamed on the wrong party
is a defect of ours, and a campaign resumed across rule changes kept printing stop
28's verdicts (`toolchain gpusem`, `toolchain nondeterministic`) for bundles today's
rules give to NVVM.

What is computable from a bundle. Its `attribution.json` holds every configuration's
launches, the static PTX check's failures and, where a rule read them, the SASS memory
operations (`attribution.evidence_of`); only the second reference path is recomputed,
from the bundle's program, by the target (`Target.second_reference_of(files)`,
optional: Bundl has it; other targets have no second path). The rules decide on
launches, static checks and the second path only; what the campaign adds after a
decision is host work it cannot redo here: the SASS memory operations a `ptxas-O0`
verdict quotes (the matrix's binaries) and the static SASS check of a `ptxas` or
`undecided` verdict (nvcc, cuobjdump: its check names the cause). A changed decision
that would need one the bundle did not record is shown, never written (`needs`:
re-run it where the toolchain is, `gpusem replay`).

What `--write` changes, in place (the store never renames: a bundle's folder,
signature and sightings are its identity; `bundle_name` is derived from its kind and
signature as first seen, baselines match its signature, SARIF fingerprints are it):
`attribution.json` (verdict, rule, evidence: today's) and `bundle.json`'s
`attribution` (verdict, rule, cause) and, where the kind names the verdict (the
toolchain property's `toolchain <verdict>`), its `kind`; the old verdict, rule, cause
and kind go to `attribution_history` (one entry per re-decision: when, by which
gpusem). The signature keeps the verdict it was found under (`toolchain:gpusem:...`):
the reports group a finding by its cause (`attribution.cause_of`: today's verdict
and check), so a re-decided bundle is grouped with the bundles of its real cause.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusem.fuzz.attribution import cause_of, decide, evidence_of
from gpusem.fuzz.bundle import (
    ATTRIBUTION,
    META,
    Bundle,
    atomic_write,
    read_bundle,
    readme,
)

HISTORY = "attribution_history"
# verdicts whose attribution.json carries the static SASS check (`with_sass_check`)
SASS_CHECKED = ("ptxas", "undecided")


@dataclass(frozen=True)
class Redecision:
    """One bundle decided again: recorded verdict (rule) -> today's, with today's
    evidence; `needs`: why it cannot be decided from what is stored ("" when it
    can); `written`: --write applied it."""

    bundle: str
    before: str
    before_rule: str
    after: str
    after_rule: str
    evidence: tuple[str, ...] = ()
    needs: str = ""
    written: bool = False

    @property
    def changed(self) -> bool:
        return (self.before, self.before_rule) != (self.after, self.after_rule)

    def line(self) -> str:
        head = (f"{Path(self.bundle).name}: {self.before} ({self.before_rule}) -> "
                f"{self.after} ({self.after_rule})")
        if self.needs:
            return f"{head}; not written: {self.needs}"
        return head + ("; written" if self.written else "")


def bundles_under(dirs: Sequence[str | Path]) -> list[Path]:
    """Every bundle folder under `dirs` (a bundle itself, or searched recursively;
    a store's temporary folders skipped) that has an attribution."""
    out: list[Path] = []
    for d in dirs:
        root = Path(d)
        metas = [root / META] if (root / META).is_file() else sorted(root.rglob(META))
        for meta in metas:
            rel = meta.relative_to(root).parts[:-1]
            if any(part.startswith(".") for part in rel):
                continue
            if (meta.parent / ATTRIBUTION).is_file():
                out.append(meta.parent)
    return out


def redecide(dirs: Sequence[str | Path], write: bool = False,
             now: float | None = None) -> list[Redecision]:
    """Every attributed bundle under `dirs` decided again (`write`: and rewritten
    where it changed and is computable from what it stores)."""
    targets: dict[str, Any] = {}  # one target object per name, for the second path
    try:
        return [redecide_bundle(p, write, now, targets) for p in bundles_under(dirs)]
    finally:
        for t in targets.values():
            t.close()


def redecide_bundle(path: Path, write: bool = False, now: float | None = None,
                    targets: dict[str, Any] | None = None) -> Redecision:
    b = read_bundle(path)
    found = _object(b.files[ATTRIBUTION], path / ATTRIBUTION)
    today = decide(evidence_of(found, _second_path(b, targets)))
    r = Redecision(str(path), str(found.get("verdict", "")), str(found.get("rule", "")),
                   today.verdict, today.rule, tuple(today.evidence))
    if r.changed:
        r = _with(r, needs=_needs(found, today.verdict, today.rule))
    if write and r.changed and not r.needs:
        rewrite(b, found, today.verdict, today.rule, today.evidence, now)
        r = _with(r, written=True)
    return r


def rewrite(b: Bundle, found: dict[str, Any], verdict: str, rule: str,
            evidence: Sequence[str], now: float | None = None) -> None:
    """Today's decision into the bundle's attribution.json and bundle.json, the old
    one kept as `attribution_history`; each file replaced atomically, bundle.json
    last (`BundleStore.update`'s order)."""
    from gpusem import __version__

    meta = dict(b.meta)
    old = dict(meta.get("attribution") or {})
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    entry = {"verdict": found.get("verdict"), "rule": found.get("rule"),
             "cause": old.get("cause") or cause_of(found, b.signature),
             "kind": meta.get("kind"), "redecided_at": stamp,
             "gpusem_version": __version__}
    new_found = dict(found) | {"verdict": verdict, "rule": rule,
                               "evidence": list(evidence)}
    new_found[HISTORY] = [*list(found.get(HISTORY) or []), entry]
    meta["attribution"] = old | {"verdict": verdict, "rule": rule,
                                 "cause": cause_of(new_found, b.signature)}
    meta[HISTORY] = [*list(meta.get(HISTORY) or []), entry]
    prop, was = str(meta.get("property", "")), str(found.get("verdict", ""))
    if was and meta.get("kind") == f"{prop} {was}":  # the kind names the verdict
        meta["kind"] = f"{prop} {verdict}"
    atomic_write(b.path / ATTRIBUTION, json.dumps(new_found, indent=1, sort_keys=True)
             + "\n")
    atomic_write(b.path / "README.md",
                 readme(meta, sorted(n for n in b.files if n != "README.md")))
    atomic_write(b.path / META, json.dumps(meta, indent=2, sort_keys=True) + "\n")


def _needs(found: dict[str, Any], verdict: str, rule: str) -> str:
    """What today's decision would add that the bundle did not record ("": none)."""
    if rule == "ptxas-O0" and not found.get("sass"):
        return ("its evidence quotes the SASS, not recorded: re-run it where the "
                "toolchain is (gpusem replay)")
    if verdict in SASS_CHECKED and "sass_check" not in found:
        return ("its cause needs the static SASS check (nvcc, cuobjdump), not "
                "recorded: re-run it where the toolchain is (gpusem replay)")
    return ""


def _second_path(b: Bundle, targets: dict[str, Any] | None) -> str | None:
    """The second reference's difference today, from the bundle's program, where its
    target has one (`second_reference_of`); None otherwise."""
    from gpusem.fuzz.targets import load_target

    cache = targets if targets is not None else {}
    if b.target not in cache:
        cache[b.target] = load_target(b.target, "cpu")
    of = getattr(cache[b.target], "second_reference_of", None)
    return None if of is None else of(b.files)


def _with(r: Redecision, **changes: Any) -> Redecision:
    from dataclasses import replace

    return replace(r, **changes)


def _object(text: str, where: Path) -> dict[str, Any]:
    from gpusem.calculus.errors import BadInput

    try:
        found = json.loads(text)
    except ValueError as err:
        raise BadInput(f"malformed bundle: {where}: {err}") from None
    if not isinstance(found, dict):
        raise BadInput(f"malformed bundle: {where}: not a JSON object")
    return found


__all__ = ["HISTORY", "Redecision", "bundles_under", "redecide", "redecide_bundle",
           "rewrite"]
