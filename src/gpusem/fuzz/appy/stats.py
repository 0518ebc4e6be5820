"""Campaign statistics of the APPy target (issue 17's measurements).

Each campaign process (one per `--jobs` job or shard) keeps, for the programs the
campaign drew (counted in `prefetch`, never the re-checks of shrinking): how many, how
many reached a numeric comparison (at least one kernel compared with the sequential
reading, agreeing or not), per-kernel outcomes, the constructs each program exercises
(`coverage.py`) and, per distinct cause (`causes.py`), when it was first seen (wall
clock), how often, its blame and its smallest failing kernel. With `$GPUSEM_APPY_STATS`
set to a folder, it writes `stats-<pid>.json` there every 30 s and at the end.

`merge` joins the files of one campaign into its result: `programs`,
`compared_fraction`, `causes`, `new_causes_by_minute` (minute m of *wall* time since
the campaign began: shards that ran side by side share their minutes), the shard
minutes they add up to, and the coverage table (programs per 10,000 per construct):

    python -m gpusem.fuzz.appy.stats DIR OUT.json [--coverage OUT.md] [--meta K=V ...]
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpusem.fuzz.appy.coverage import CONSTRUCTS, features

if TYPE_CHECKING:
    from gpusem.fuzz.appy.strategies import AppyProgram
    from gpusem.fuzz.appy.verdicts import ProgramRun
    from gpusem.fuzz.targets import CheckResult

FLUSH_S = 30.0


class CampaignStats:
    def __init__(self, backend: str, folder: str | None):
        self.backend = backend
        self.folder = folder
        self.t0 = time.time()
        self.last = self.t0
        self.flushed = 0.0
        self.programs = 0
        self.compared = 0
        self.kernels = 0
        self.kernels_compared = 0
        self.status: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.invalid: Counter[str] = Counter()
        self.coverage: Counter[str] = Counter()
        self.causes: dict[str, dict[str, Any]] = {}

    def record(self, prog: AppyProgram, run: ProgramRun | None, res: CheckResult,
               triggers: dict[str, frozenset[str]]) -> bool:
        """Count one program; True when it shows a cause this process had not seen."""
        self.last = time.time()
        self.programs += 1
        self.status[res.status] += 1
        sizes = {k: v for k, v in prog.scalars if isinstance(v, int)}
        dtypes = tuple(sorted({d for _, d, _ in prog.arrays}))
        self.coverage.update(features(prog.fn, sizes, dtypes, len(prog.kernels or (1,))))
        if run is None:
            return False
        if not run.verdict.legal:
            self.invalid[run.verdict.kind] += 1
        self.compared += run.compared
        new = False
        for k in run.kernels:
            self.kernels += 1
            self.kernels_compared += k.compared
            self.outcomes[k.outcome.kind if k.outcome else "-"] += 1
            if k.failed and k.outcome is not None:
                new |= self._cause(k.signature, k.outcome.kind, k.blame,
                                   k.cause.title if k.cause else "", k.source,
                                   k.outcome.detail, sorted(triggers.get(
                                       k.signature, frozenset())))
        if run.interaction and run.whole is not None:
            new |= self._cause(run.interaction, run.whole.kind, "appyc",
                               "kernels agree alone, not together", run.source,
                               run.whole.detail, [])
        return new

    def _cause(self, sig: str, kind: str, blame: str, title: str, source: str,
               detail: str, trigger: list[str]) -> bool:
        c = self.causes.get(sig)
        if c is None:
            self.causes[sig] = {"first_seen": self.last, "count": 1, "kind": kind,
                                "blame": blame, "cause": title, "program": source,
                                "detail": detail[:300], "trigger": trigger}
            return True
        c["count"] += 1
        if len(source) < len(c["program"]):
            c["program"], c["detail"] = source, detail[:300]
        return False

    def as_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "pid": os.getpid(), "t0": self.t0,
                "last": self.last, "programs": self.programs, "compared": self.compared,
                "kernels": self.kernels, "kernels_compared": self.kernels_compared,
                "status": dict(self.status), "outcomes": dict(self.outcomes),
                "invalid": dict(self.invalid), "coverage": dict(self.coverage),
                "causes": self.causes}

    def flush(self, force: bool = False) -> None:
        if not self.folder or (not force and time.time() - self.flushed < FLUSH_S):
            return
        self.flushed = time.time()
        path = Path(self.folder) / f"stats-{os.getpid()}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.as_dict()) + "\n")
        tmp.replace(path)  # atomic: a reader never sees half a file


def merge(folder: str, start: float | None = None) -> dict[str, Any]:
    """The campaign result of every `stats-*.json` under `folder`."""
    parts = [json.loads(p.read_text()) for p in sorted(Path(folder).rglob("stats-*.json"))]
    if not parts:
        raise SystemExit(f"no stats-*.json under {folder}")
    t0 = start if start is not None else min(p["t0"] for p in parts)
    end = max(p["last"] for p in parts)
    total: dict[str, Any] = {k: sum(p[k] for p in parts) for k in (
        "programs", "compared", "kernels", "kernels_compared")}
    for key in ("status", "outcomes", "invalid", "coverage"):
        counts: Counter[str] = Counter()
        for p in parts:
            counts.update(p[key])
        total[key] = dict(sorted(counts.items()))
    causes: dict[str, dict[str, Any]] = {}
    for p in parts:
        for sig, c in p["causes"].items():
            cur = causes.get(sig)
            if cur is None:
                causes[sig] = dict(c)
                continue
            cur["count"] += c["count"]
            cur["first_seen"] = min(cur["first_seen"], c["first_seen"])
            if len(c["program"]) < len(cur["program"]):
                cur["program"], cur["detail"] = c["program"], c["detail"]
    wall_min = max(1, int((end - t0) // 60) + 1)
    by_minute = [0] * wall_min
    for c in causes.values():
        m = min(wall_min - 1, max(0, int((c["first_seen"] - t0) // 60)))
        c["first_seen_minute"] = m
        by_minute[m] += 1
    programs = total["programs"]
    shard_min = sum(p["last"] - p["t0"] for p in parts) / 60
    per10k = {k: round(1e4 * total["coverage"].get(k, 0) / max(programs, 1), 1)
              for k in CONSTRUCTS}
    return {
        "programs": programs,
        "compared_fraction": round(total["compared"] / max(programs, 1), 4),
        "causes": len(causes),
        "new_causes_by_minute": by_minute,
        "minutes": "new_causes_by_minute[m] counts causes first seen in minute m of "
                   "wall time since the campaign began (shards side by side share a "
                   "minute)",
        "wall_minutes": round((end - t0) / 60, 2),
        "shard_minutes": round(shard_min, 2),
        "shards": len(parts),
        "programs_per_wall_minute": round(programs / max((end - t0) / 60, 1e-9), 1),
        "programs_per_shard_minute": round(programs / max(shard_min, 1e-9), 1),
        "kernels": total["kernels"],
        "kernel_compared_fraction": round(total["kernels_compared"] /
                                          max(total["kernels"], 1), 4),
        "status": total["status"], "kernel_outcomes": total["outcomes"],
        "invalid_by_kind": total["invalid"],
        "coverage_per_10k": per10k,
        "constructs_at_zero": [k for k, v in per10k.items() if v == 0],
        "cause_table": dict(sorted(causes.items(), key=lambda kv: kv[1]["first_seen"])),
    }


def coverage_markdown(result: dict[str, Any]) -> str:
    lines = ["# APPy generator coverage", "",
             f"{result['programs']} programs; programs per 10,000 that exercise each "
             "construct (`fuzz/appy/coverage.py`).", "",
             "| construct | per 10,000 | where in the paper |", "|---|---|---|"]
    for k, v in sorted(result["coverage_per_10k"].items(), key=lambda kv: kv[1]):
        lines.append(f"| `{k}` | {v} | {CONSTRUCTS[k]} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    args = [a for a in argv if not a.startswith("--")]
    if len(args) < 2:
        raise SystemExit(__doc__)
    result = merge(args[0])
    meta = {}
    if "--meta" in argv:
        for kv in argv[argv.index("--meta") + 1:]:
            if "=" in kv and not kv.startswith("--"):
                k, _, v = kv.partition("=")
                meta[k] = v
    result = meta | result
    Path(args[1]).write_text(json.dumps(result, indent=1) + "\n")
    if "--coverage" in argv:
        Path(argv[argv.index("--coverage") + 1]).write_text(coverage_markdown(result))


if __name__ == "__main__":
    main(sys.argv[1:])
