"""`gpusem replay`: re-run a counterexample bundle of any target and say whether its
finding still reproduces (the same signature, one that refines it, or a cpu deadlock
seen as a timeout on the cuda backend); and where a Bundl bundle's backend and
interpreter first disagree (`replay --step` opens the debugger there).

Three answers, for `git bisect run` (issue 32.3): *reproduces* (exit 1); *fixed*
(exit 0: the same kind of run now passes); *cannot test* (exit 125, which bisect
skips): the run could not be made here (a cuda bundle without a GPU, a compiler under
test not installed) or the program now fails in another way (a compile or parse
error, another signature, a program now invalid or not runnable, gpusem's own error),
which says nothing about the bug the bundle holds. Before, all of those exited 0, and
bisect called such a commit good."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from gpusem.calculus.errors import CannotRunHere
from gpusem.fuzz.baseline import Baseline, bundle_metas
from gpusem.fuzz.bundle import Bundle, read_bundle
from gpusem.fuzz.targets import INTERNAL, CheckResult

# replay's exit codes: git bisect run reads 0 good, 1 bad, 125 skip
EXIT_FIXED, EXIT_REPRODUCES, EXIT_CANNOT_TEST = 0, 1, 125
REPRODUCES, FIXED, CANNOT_TEST = "reproduces", "fixed", "cannot-test"


@dataclass(frozen=True)
class Replay:
    bundle: Bundle
    now: CheckResult
    reproduces: bool
    cannot_run: str = ""  # why the run could not be made here ("" when it ran)

    @property
    def verdict(self) -> str:
        """`reproduces`, `fixed` (the same kind of run passes now) or `cannot-test`
        (it could not run here, or the program now fails in another way)."""
        if self.reproduces:
            return REPRODUCES
        if not self.cannot_run and self.now.status == "pass":
            return FIXED
        return CANNOT_TEST

    @property
    def exit_code(self) -> int:
        return {REPRODUCES: EXIT_REPRODUCES, FIXED: EXIT_FIXED}.get(
            self.verdict, EXIT_CANNOT_TEST)

    @property
    def why(self) -> str:
        """One line: why a replay that does not reproduce cannot test the bug ("" for
        one that reproduces or is fixed)."""
        if self.verdict != CANNOT_TEST:
            return ""
        if self.cannot_run:
            return f"cannot run here: {self.cannot_run}"
        if self.internal:
            return "gpusem itself failed on the program"
        if self.now.status == "finding":
            return "the program now fails in another way"
        if self.now.status == "invalid":
            return "the program is not comparable now (illegal, racy or rejected)"
        if self.now.status == "skip":
            return "the program is not runnable on this backend now"
        return ""

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
    chosen = backend or str(b.meta["backend"])
    try:
        target = load_target(b.target, chosen)
    except CannotRunHere as err:
        return Replay(b, CheckResult("skip", detail=err.one_line()), False,
                      err.one_line())
    try:
        res = replayed(target, b.files, b.meta)
    except CannotRunHere as err:
        return Replay(b, CheckResult("skip", detail=err.one_line()), False,
                      err.one_line())
    finally:
        target.close()
    same = res.status == "finding" and (
        same_finding(b.signature, res.signature)
        or (target.backend == "cuda" and deadlock_as_timeout(b.signature,
                                                             res.signature)))
    return Replay(b, res, same)


@dataclass(frozen=True)
class CorpusRow:
    """One stored bundle of a corpus, replayed: `verdict` is `reproduces` (still
    failing), `fixed` or `cannot-test`; `known` when a baseline holds it."""

    bundle: str
    target: str
    prop: str
    signature: str
    kind: str
    verdict: str
    now: str  # the signature it fails with now, or the status
    why: str  # for cannot-test: why
    detail: str = ""
    known: bool = False
    size: int = 0  # statements of the stored program

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def replay_corpus(folder: str | Path, backend: str | None = None,
                  target: str | None = None, props: Sequence[str] = (),
                  baseline: Baseline | None = None) -> list[CorpusRow]:
    """Every bundle under `folder` (of `target` and `props` where given) replayed,
    in path order; a malformed bundle is BadInput, as for one bundle."""
    rows = []
    for meta_file in bundle_metas(Path(folder)):
        b = read_bundle(meta_file.parent)
        if (target and b.target != target) or (props and
                                                b.meta["property"] not in props):
            continue
        r = replay(b.path, backend)
        now = r.now.signature if r.now.status == "finding" else r.now.status
        cause = b.meta.get("attribution")
        verdict = cause.get("verdict", "") if isinstance(cause, dict) else ""
        known = baseline is not None and baseline.match(b.signature,
                                                        str(verdict)) is not None
        rows.append(CorpusRow(str(b.path), b.target, str(b.meta["property"]),
                              b.signature, str(b.meta["kind"]), r.verdict, now,
                              r.why, r.now.detail[:200], known,
                              int(b.meta.get("size", 0) or 0)))
    return rows


def corpus_exit_code(rows: Sequence[CorpusRow]) -> int:
    """`gpusem replay` of a corpus: 1 when a bundle no baseline holds still fails,
    else 4 for a folder with no bundle (nothing checked), 125 when no bundle could be
    tested, 0 otherwise."""
    if any(r.verdict == REPRODUCES and not r.known for r in rows):
        return EXIT_REPRODUCES
    if not rows:
        return 4  # fuzz/reports.EXIT_NOTHING_CHECKED
    if all(r.verdict == CANNOT_TEST for r in rows):
        return EXIT_CANNOT_TEST
    return EXIT_FIXED


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


__all__ = ["CANNOT_TEST", "EXIT_CANNOT_TEST", "EXIT_FIXED", "EXIT_REPRODUCES", "FIXED",
           "REPRODUCES", "CorpusRow", "Replay", "corpus_exit_code",
           "deadlock_as_timeout",
           "first_difference", "replay", "replay_corpus"]
