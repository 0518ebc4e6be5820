"""Pieces: a shard cut into tasks of a few rounds, for engines that spread a campaign
over a cluster (issue 19; `fuzz/engines/dask.py`, and any other such engine).

A shard (I, N) is the rounds r = I + k·N, k = 0, 1, ... (`fuzz/engines/base.py`). A
*piece* is the window k0 <= k < k1 of one shard: a seed range and a round budget, run
by `Campaign(**spec, shard=(I, N), window=(k0, k1))` anywhere. Pieces are small (a few
rounds) so that a cluster balances them, a lost worker costs one piece, and an
interrupted campaign resumes piece by piece.

A piece runs on a worker that need not share the client's file system: its campaign
writes into a store of its own (a temporary folder, seeded with the signatures the
client already holds, so it does not shrink them again) and `run_piece` returns the
shard's Summary with the files of every bundle it created. The client (`absorb`)
claims them in the campaign's store (`BundleStore.claim`: atomic, one folder per
signature) and counts a signature another piece got first as a sighting: each finding
is written once, whichever piece, retry or resumed run met it.

The record of finished pieces, beside the store's bundles (for `--resume`):

  OUT/.gpusem/pieces/PROP-I-N.jsonl   one line per finished piece: its window, its
                                      counts, the signatures it found and those it
                                      wrote, whether the budget cut it short;
                                      appended after its bundles are claimed

A resumed campaign skips the windows recorded there and adds their counts, so it checks
the programs the uninterrupted campaign would have, each once (a piece under way when
the campaign was stopped is run again: its findings are already claimed, and count as
sightings).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpusem.fuzz.bundle import BundleStore, read_bundle
from gpusem.fuzz.direct import DEFAULT_GENERATION
from gpusem.fuzz.engines.handover import Publish, Publishing
from gpusem.fuzz.manifest import FOLDER
from gpusem.fuzz.shrink_jobs import Deferred, ShrinkJob, ShrinkOutcome
from gpusem.fuzz.summary import Finding, Summary

# One round: a piece handed its new findings to their shrink tasks when it ended, so
# a piece of two 100-program rounds held them back for most of a 20 s budget under
# load (stop 28: the first finding, met at 0.8 s, was handed over at 20.9 s); it now
# publishes each one as it meets it (`handover.py`), and a piece's size is for
# balance, loss and resume alone
ROUNDS_PER_PIECE = 1
# The client's settings that decide verdicts travel with each piece and hold on the
# worker while it runs (a worker started before them, or on another machine, would not
# see them): the seeded fault, the reference path, the reducer's cap.
CARRIED_ENV = ("GPUSEM_FAULT", "GPUSEM_REFERENCE", "GPUSEM_REFERENCE_AUDIT",
               "GPUSEM_SHRINK_S")


@dataclass(frozen=True)
class Piece:
    """The window (k0, k1) of the shard `shard` of the campaign `spec` (Campaign
    keyword arguments); `max_programs` cuts the last piece of a `--max-programs` run."""

    spec: dict[str, Any] = field(hash=False, compare=False)
    shard: tuple[int, int]
    window: tuple[int, int]
    max_programs: int | None = None
    env: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    # time.time() by which the campaign's budget is spent: a piece begun near it
    # stops there, not a few rounds later (issue 31.1); None: its spec's budget_s
    until: float | None = None
    # time.time() when its campaign began: what the piece reports (found_after_s)
    # counts from there, not from the piece's own start (Campaign.reported_since)
    campaign_start: float | None = None

    @property
    def label(self) -> str:
        i, n = self.shard
        return (f"{self.spec.get('prop', '?')} shard {i}/{n} rounds "
                f"{i + self.window[0] * n}..{i + (self.window[1] - 1) * n}")


@dataclass
class PieceResult:
    piece: Piece
    summary: Summary
    bundles: list[tuple[dict[str, Any], dict[str, str]]]  # (meta, files) it created
    worker: str = ""  # where it ran (host:pid)
    # its new findings, not shrunk: each one a task of its own (`shrink_remote`)
    jobs: list[ShrinkJob] = field(default_factory=list)
    cut: bool = False  # the budget ran out before its window was done


def windows(shard_programs: int | None, round_size: int, per_piece: int,
            start: int = 0) -> list[tuple[tuple[int, int], int | None]]:
    """The pieces of a shard that checks `shard_programs` programs: ((k0, k1), the
    piece's own program limit or None). Unbounded shards (a time budget) are cut by
    the engine as it goes (`window_at`)."""
    assert shard_programs is not None
    rounds = -(-shard_programs // round_size)
    out = []
    for k0 in range(start, rounds, per_piece):
        k1 = min(rounds, k0 + per_piece)
        left = shard_programs - k0 * round_size
        out.append(((k0, k1), left if left < (k1 - k0) * round_size else None))
    return out


def window_at(index: int, per_piece: int) -> tuple[int, int]:
    return index * per_piece, (index + 1) * per_piece


def carried_env() -> dict[str, str]:
    """CARRIED_ENV as set in this process (an unset one is carried as unset: "")."""
    return {k: os.environ.get(k, "") for k in CARRIED_ENV}


# ---------------------------------------------------------------- on the worker

def run_piece(piece: Piece, known: list[dict[str, str]], factory: Any = None,
              publish: Publish | None = None) -> PieceResult:
    """Run one piece in this process, in a store of its own (see the module
    docstring); `known`: {target, kind, signature, property, backend} of the findings
    the client holds; `factory`: a target registered at run time in the client;
    `publish`: told each new finding's shrink job the moment it is met
    (`handover.Publishing`), which the result carries too."""
    from gpusem.fuzz.campaign import Campaign
    from gpusem.fuzz.targets import register_target

    if factory is not None:
        register_target(piece.spec["target_name"], factory)
    # A worker's own threads (its event loop) draw from the global `random` while a
    # round is generated; hypothesis then warns that a *strategy* used it. It did not
    # (rounds are the same in every process: tests/fuzz/test_reproducible.py).
    warnings.filterwarnings("ignore", message=".*the `random` module inside strategies")
    local = tempfile.mkdtemp(prefix="gpusem-piece-")
    saved = {k: os.environ.get(k) for k in piece.env}
    try:
        for k, v in piece.env.items():
            _setenv(k, v or None)
        store = BundleStore(local)
        for meta in known:  # a stub per known signature: met again, it is a sighting
            store.claim(dict(meta, state="known"), {})
        spec = dict(piece.spec, out_dir=local, resume=False,
                    max_programs=piece.max_programs)
        if piece.until is not None:
            spec["budget_s"] = min(float(spec.get("budget_s", 60.0)),
                                   piece.until - time.time())
        # new findings are shrunk by tasks of their own
        deferred = Deferred() if publish is None else Publishing(publish)
        summary = Campaign(**spec, shard=piece.shard, window=piece.window,
                           shrinker=deferred,
                           reported_since=piece.campaign_start).run()
        bundles = []
        for f in summary.findings:
            if f.new:
                b = read_bundle(f.bundle)
                bundles.append((b.meta, b.files))
        cut = piece.until is not None and time.time() >= piece.until
        return PieceResult(piece, summary, bundles, _where(), deferred.jobs, cut)
    finally:
        for k, old in saved.items():
            _setenv(k, old)
        shutil.rmtree(local, ignore_errors=True)


def shrink_remote(job: ShrinkJob, bundle: tuple[dict[str, Any], dict[str, str]],
                  seconds: float, env: dict[str, str], factory: Any = None,
                  on_improve: Callable[[dict[str, Any], dict[str, str]], None]
                  | None = None) -> ShrinkOutcome:
    """Shrink a piece's finding on a worker (a task of its own, issue 31.1), in a
    store of its own seeded with the bundle (meta, files) the client holds, for at
    most `seconds` from now; the outcome carries every bundle it ends with, and
    `on_improve` is told each state of the bundle as it is written (the client keeps
    the last one of a shrink it stops waiting for)."""
    from gpusem.fuzz.shrinker import run_job
    from gpusem.fuzz.targets import register_target

    if factory is not None:
        register_target(job.spec["target_name"], factory)
    deadline = time.monotonic() + seconds
    local = tempfile.mkdtemp(prefix="gpusem-shrink-")
    saved = {k: os.environ.get(k) for k in env}
    try:
        for k, v in env.items():
            _setenv(k, v or None)
        path, _ = BundleStore(local).claim(*bundle)
        out = run_job(replace(job, bundle=str(path),
                              spec=dict(job.spec, out_dir=local)), deadline,
                      on_improve)
        for f in out.findings:
            b = read_bundle(f.bundle)
            out.bundles[f.signature] = (b.meta, b.files)
        return out
    finally:
        for k, old in saved.items():
            _setenv(k, old)
        shutil.rmtree(local, ignore_errors=True)


def _where() -> str:
    return f"{os.uname().nodename}:{os.getpid()}"


def _setenv(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


# ---------------------------------------------------------------- on the client

def absorb_shrink(out: ShrinkOutcome, store: BundleStore, summary: Summary) -> None:
    """A shrink task's outcome into the campaign's store and `summary`: the shrunk
    bundle replaces the one its piece wrote; an internal error it met is claimed."""
    by_sig = {f.signature: f for f in summary.findings}
    for f in out.findings:
        meta, files = out.bundles.get(f.signature, ({}, {}))
        mine = by_sig.get(f.signature)
        if f.signature == out.signature and mine is not None:
            if meta:
                store.update(Path(mine.bundle), meta, files)
            f.bundle, f.duplicates, f.new = mine.bundle, mine.duplicates, mine.new
            summary.shrink_s += f.shrink_s
        elif meta:
            path, f.new = store.claim(meta, files)
            f.bundle = str(path)
        by_sig[f.signature] = f
    summary.findings = sorted(by_sig.values(), key=lambda f: f.signature)


def worker_deaths(piece: Piece, err: BaseException, store: BundleStore) -> Summary:
    """A piece whose workers died running it (Dask's KilledWorker, after its
    retries): an internal finding (exit 3) whose bundle names the piece's programs
    (campaign seed, shard, rounds: `piece.json`), one bundle per target and
    property, each further piece a sighting (issue 31.5: such pieces were retried
    until the budget was gone and reported as nothing)."""
    spec = piece.spec
    i, n = piece.shard
    rounds = [i + k * n for k in range(*piece.window)]
    signature = f"internal:worker-died:{spec['target_name']}:{spec['prop']}"
    detail = (f"the workers running {piece.label} died "
              f"({type(err).__name__}): {err}".replace("\n", " ")[:300])
    about = {"seed": spec.get("seed"), "shard": [i, n], "window": list(piece.window),
             "rounds": rounds, "round_size": spec.get("round_size"),
             "generation": spec.get("generation", DEFAULT_GENERATION),
             "target": spec["target_name"], "backend": spec.get("backend", "cpu"),
             "property": spec["prop"], "env": piece.env}
    meta = {"target": spec["target_name"], "backend": spec.get("backend", "cpu"),
            "property": spec["prop"], "signature": signature, "kind": "internal",
            "detail": detail, "size": 0, "state": "done", "shrunk": False,
            "seed": spec.get("seed"), "shard": [i, n]}
    files = {"piece.json": json.dumps(about, indent=1, sort_keys=True) + "\n"}
    path, created = store.claim(meta, files)
    if not created:
        store.sighting(path, {"seed": spec.get("seed"), "shard": [i, n],
                              "window": list(piece.window)})
    out = Summary()
    out.findings.append(Finding(signature, "internal", detail, 0, str(path), False,
                                0.0, prop=spec["prop"], target=spec["target_name"],
                                new=created))
    return out


def absorb(result: PieceResult, store: BundleStore,
           handed: dict[str, str] | None = None) -> list[str]:
    """Claim a piece's bundles in the campaign's store; point its findings at them.
    A signature the store holds already becomes a sighting of that bundle, but for
    those the client claimed from this piece as it met them (`handed`: signature ->
    bundle; `fuzz/engines/handover.py`). The signatures the piece wrote are
    returned."""
    written, handed = [], handed or {}
    files = {(m["signature"]): (m, fs) for m, fs in result.bundles}
    for f in result.summary.findings:
        if f.signature in handed:
            f.bundle, f.new = handed[f.signature], True
            written.append(f.signature)
            continue
        if f.signature in files:
            meta, texts = files[f.signature]
            path, created = store.claim(meta, texts)
        else:
            known = store.lookup(_stub(result.piece, f))
            if known is None:  # a finding of a known signature whose bundle is gone
                continue
            path, created = known, False
        f.bundle, f.new = str(path), created
        if created:
            written.append(f.signature)
        else:
            store.sighting(path, {"seed": result.piece.spec.get("seed"),
                                  "shard": list(result.piece.shard),
                                  "window": list(result.piece.window),
                                  "after_s": round(f.found_after_s, 2)})
    return written


def _stub(piece: Piece, f: Finding) -> dict[str, Any]:
    return {"target": piece.spec["target_name"], "kind": f.kind,
            "signature": f.signature}


def known_findings(store: BundleStore, target: str, prop: str) -> list[dict[str, str]]:
    """The signatures of `target`/`prop` the store holds (as `run_piece` takes them)."""
    out = []
    for b in store.bundles():
        if b.meta.get("target") == target and b.meta.get("property") == prop:
            out.append({k: str(b.meta[k]) for k in
                        ("target", "backend", "property", "kind", "signature")})
    return out


def known_entry(spec: dict[str, Any], signature: str, kind: str) -> dict[str, str]:
    """A finding of the campaign `spec` as `known_findings` gives it."""
    return {"target": spec["target_name"], "backend": spec.get("backend", "cpu"),
            "property": spec["prop"], "kind": kind, "signature": signature}


def record_path(out_dir: str | Path, prop: str, shard: tuple[int, int]) -> Path:
    return Path(out_dir) / FOLDER / "pieces" / f"{prop}-{shard[0]}-{shard[1]}.jsonl"


def record(out_dir: str | Path, result: PieceResult, written: list[str]) -> None:
    """Append the finished piece's line (one write: a kill leaves whole lines)."""
    s, p = result.summary, result.piece
    line = {"window": list(p.window), "programs": s.programs, "invalid": s.invalid,
            "skipped": s.skipped, "unconfirmed": s.unconfirmed,
            "outcomes": s.outcomes, "coverage": s.coverage,
            "coverage_programs": s.coverage_programs,
            "by_configuration": s.by_configuration,
            "not_compared": s.not_compared,
            "found": sorted(f.signature for f in s.findings), "wrote": sorted(written),
            "seconds": round(s.seconds, 3), "worker": result.worker,
            "at": round(time.time(), 3), "cut": result.cut}
    path = record_path(out_dir, p.spec["prop"], p.shard)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line, sort_keys=True) + "\n").encode())
    finally:
        os.close(fd)


def finished(out_dir: str | Path, prop: str, shard: tuple[int, int]
             ) -> tuple[set[tuple[int, int]], Summary]:
    """The windows a campaign in `out_dir` finished for this shard, and their counts
    (findings are in the store; a torn last line, from a kill, is ignored)."""
    done: set[tuple[int, int]] = set()
    total = Summary()
    try:
        lines = record_path(out_dir, prop, shard).read_text().splitlines()
    except FileNotFoundError:
        return done, total
    for text in lines:
        try:
            line = json.loads(text)
            window = (int(line["window"][0]), int(line["window"][1]))
        except (ValueError, KeyError, TypeError, IndexError):
            continue
        if window in done or line.get("cut"):
            continue  # a window the budget cut is run whole by a resumed campaign
        done.add(window)
        part = Summary(programs=line.get("programs", 0), invalid=line.get("invalid", 0),
                       skipped=line.get("skipped", 0),
                       unconfirmed=line.get("unconfirmed", 0),
                       outcomes=line.get("outcomes", {}),
                       coverage=line.get("coverage", {}),
                       coverage_programs=line.get("coverage_programs", {}),
                       by_configuration=line.get("by_configuration", {}),
                       not_compared=line.get("not_compared", {}))
        total.merge(part)
    return done, total


def known_map(store: BundleStore, spec: dict[str, Any]) -> dict[str, dict[str, str]]:
    """`known_findings` by signature."""
    return {k["signature"]: k for k in known_findings(store, spec["target_name"],
                                                       spec["prop"])}


def recorded_findings(spec: dict[str, Any], shard: tuple[int, int]) -> list[Finding]:
    """Findings of the finished pieces of a resumed shard, from their bundles."""
    found: set[str] = set()
    try:
        for text in record_path(spec["out_dir"], spec["prop"], shard).read_text(
                ).splitlines():
            try:
                found.update(json.loads(text).get("found", []))
            except ValueError:
                continue
    except FileNotFoundError:
        return []
    out = []
    for b in BundleStore(spec["out_dir"]).bundles():
        m = b.meta
        if m.get("signature") in found and m.get("property") == spec["prop"]:
            out.append(Finding(m["signature"], m["kind"], str(m.get("detail", "")),
                               int(m.get("size", 0)), str(b.path),
                               bool(m.get("shrunk")), float(m.get("found_after_s", 0)),
                               float(m.get("shrink_s", 0)),
                               int(m.get("size_before", 0)), spec["prop"],
                               spec["target_name"], new=False))
    return out
