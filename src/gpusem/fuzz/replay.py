"""`gpusem replay`: re-run a counterexample bundle of any target and say whether its
finding still reproduces (the same signature, one that refines it, or a cpu deadlock
seen as a timeout on the cuda backend); and where a Bundl bundle's backend and
interpreter first disagree (`replay --step` opens the debugger there)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpusem.fuzz.bundle import Bundle, read_bundle
from gpusem.fuzz.targets import INTERNAL, CheckResult


@dataclass(frozen=True)
class Replay:
    bundle: Bundle
    now: CheckResult
    reproduces: bool

    @property
    def as_timeout(self) -> bool:
        """It reproduces as a GPU timeout of a cpu deadlock."""
        return (self.reproduces and self.now.signature != self.bundle.signature
                and deadlock_as_timeout(self.bundle.signature, self.now.signature))

    @property
    def internal(self) -> bool:
        """gpusem itself failed on it (exit 3; bisect: skip)."""
        return self.now.kind == INTERNAL


def replay(bundle_dir: str | Path, backend: str | None = None) -> Replay:
    from gpusem.fuzz.targets import load_target, replayed, same_finding

    b = read_bundle(bundle_dir)
    target = load_target(b.target, backend or str(b.meta["backend"]))
    try:
        res = replayed(target, b.files, b.meta)
    finally:
        target.close()
    same = res.status == "finding" and (
        same_finding(b.signature, res.signature)
        or (target.backend == "cuda" and deadlock_as_timeout(b.signature,
                                                             res.signature)))
    return Replay(b, res, same)


def deadlock_as_timeout(expected: str, now: str) -> bool:
    """A deadlock the cpu harness names is, on the cuda backend, a launch that times
    out: the same failure seen by a backend that can only wait."""
    return expected.endswith(":deadlock") and now == expected[:-len("deadlock")] + "timeout"


def first_difference(bundle: Bundle) -> tuple[str, int] | None:
    """The first global cell where the bundle's backend result and the interpreter's
    differ (None when it records no memories or they agree)."""
    expected = json.loads(bundle.files.get("expected.json", "null"))
    actual = json.loads(bundle.files.get("actual.json", "null"))
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return None
    for name, values in expected.items():
        got = actual.get(name)
        if not isinstance(got, list):
            continue
        for i, (e, a) in enumerate(zip(values, got)):
            if e != a:
                return name, i
    return None


__all__ = ["Replay", "deadlock_as_timeout", "first_difference", "replay"]
