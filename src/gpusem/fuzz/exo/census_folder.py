"""A verdict census kept as a folder, so that censuses too long for one run (one
10-minute device call) add up across runs, machines and sessions (issue 26 item 3).

    DIR/meta.json         seed, programs per round, the Exo install (its fingerprint
                          pins the code under test), every run that added rounds
    DIR/rounds/R.json     the tally of round R (census.census_round), written whole
                          (a temporary file renamed) as soon as the round is done
    DIR/census.json       every round's tally merged in round order, summarised

A round is the unit: program k of a census is drawn in round k // 100 from the seed
alone, so a round checked anywhere is the same 100 programs; a run skips the rounds
its folder has. Folders of the same census (the same seed, round size and Exo
sources) merge into one census JSON (`merge_folders`); a round found in two of them
is counted once (the first folder's; `duplicate_rounds` names it, and
`differing_rounds` where the two disagree on a verdict pair: a `hang` depends on
the machine's load). Rounds drawn by another generator (hypothesis's version, the
generator's sources: census_tally.generator_fingerprint) are refused too: they are
other programs. gpusem's own sources are recorded with each run (`gpusem_sources`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from gpusem.calculus.errors import BadInput
from gpusem.fuzz.exo.census_tally import ROUND, merge, summarise

_ROUND_FILE = re.compile(r"^(\d+)\.json$")


class CensusFolder:
    """One branch's census folder (see the module docstring)."""

    def __init__(self, path: str | Path, seed: int, per_round: int = ROUND):
        self.path = Path(path)
        self.seed, self.per_round = seed, per_round
        meta = self.meta()
        if meta and (meta.get("seed"), meta.get("per_round")) != (seed, per_round):
            raise BadInput(f"{self.path}: a census of seed {meta.get('seed')} with "
                           f"{meta.get('per_round')} programs a round, not seed {seed} "
                           f"with {per_round}: use another folder")

    # ---------------------------------------------------------------- reading
    def meta(self) -> dict:
        return _read(self.path / "meta.json") or {}

    def done(self) -> set[int]:
        d = self.path / "rounds"
        if not d.is_dir():
            return set()
        return {int(m[1]) for f in os.listdir(d) if (m := _ROUND_FILE.match(f))}

    def rounds(self) -> list[tuple[int, dict]]:
        return [(r, _read(self.path / "rounds" / f"{r}.json") or {})
                for r in sorted(self.done())]

    # ---------------------------------------------------------------- writing
    def add_round(self, r: int, tally: dict) -> None:
        """Keep round `r`'s tally; the first round fixes the folder's Exo install,
        and a later one from other Exo sources is refused."""
        install = tally.get("install") or {}
        meta = self.meta()
        known = (meta.get("install") or {}).get("fingerprint")
        if known and install.get("fingerprint") != known:
            raise BadInput(f"{self.path}: round {r} was checked by Exo sources "
                           f"{install.get('fingerprint')}, the folder's by {known}")
        if meta.get("generator") and tally.get("generator") != meta["generator"]:
            raise BadInput(f"{self.path}: round {r} was drawn by "
                           f"{tally.get('generator')}, the folder's rounds by "
                           f"{meta['generator']}: not the same programs")
        if not meta:
            self.write_meta({"seed": self.seed, "per_round": self.per_round,
                             "install": install, "generator": tally.get("generator"),
                             "runs": []})
        _write(self.path / "rounds" / f"{r}.json", tally)

    def write_meta(self, meta: dict) -> None:
        _write(self.path / "meta.json", meta)

    def add_run(self, run: dict) -> None:
        meta = self.meta()
        if meta:
            meta.setdefault("runs", []).append(run)
            self.write_meta(meta)

    def census(self) -> dict:
        """Every round merged in round order, summarised; written to census.json."""
        total = merge_rounds([self])
        _write(self.path / "census.json", total)
        return total


def merge_rounds(folders: list[CensusFolder]) -> dict:
    """The census of every round the folders hold (see the module docstring)."""
    seeds = {(f.seed, f.per_round) for f in folders}
    prints = {str((f.meta().get("install") or {}).get("fingerprint"))
              for f in folders if (f.meta().get("install") or {}).get("fingerprint")}
    drawn = {str(f.meta()["generator"]) for f in folders if f.meta().get("generator")}
    if len(seeds) > 1 or len(prints) > 1 or len(drawn) > 1:
        raise BadInput("these census folders are not one census: seeds and round "
                       f"sizes {sorted(seeds)}, Exo sources {sorted(prints)}, "
                       f"generators {sorted(drawn)}")
    seen: dict[int, dict] = {}
    duplicate, differing = [], []
    for f in folders:
        for r, tally in f.rounds():
            if r in seen:
                duplicate.append(r)
                if seen[r].get("by_round") != tally.get("by_round"):
                    differing.append(r)
                continue
            seen[r] = tally
    total: dict = {}
    for r in sorted(seen):
        total = merge(total, seen[r]) if total else seen[r]
    if not total:
        return {"programs": 0, "rounds": []}
    runs = [run for f in folders for run in f.meta().get("runs", [])]
    total = summarise(total, folders[0].seed)
    total.pop("program_verdicts", None)  # per program: in the round files only
    total["rounds"] = _ranges(sorted(seen))
    total["per_round"] = folders[0].per_round
    total["runs"] = runs
    total["seconds"] = round(sum(run.get("seconds", 0.0) for run in runs), 1)
    total["duplicate_rounds"], total["differing_rounds"] = duplicate, differing
    # gpusem's checker may change between runs (its verdicts with it): say so
    total["gpusem_sources"] = sorted({run.get("gpusem_sources", "?") for run in runs})
    return total


@cache
def gpusem_fingerprint() -> str:
    """sha256 over gpusem's Python sources (sorted relative paths and contents): the
    checker that gave a run's gpusem verdicts, recorded with each run."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def merge_folders(paths: Sequence[str | Path]) -> dict:
    """`python -m gpusem.fuzz.exo.census --merge DIR...`: the folders' census."""
    folders = []
    for p in paths:
        meta = _read(Path(p) / "meta.json")
        if meta is None:
            raise BadInput(f"{p}: not a census folder (no meta.json)")
        folders.append(CensusFolder(p, meta["seed"], meta["per_round"]))
    return merge_rounds(folders)


def _ranges(rounds: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8'."""
    out: list[str] = []
    for r in rounds:
        if out and int(out[-1].split("-")[-1]) == r - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ",".join(out)


def _read(path: Path) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise BadInput(f"{path}: unreadable census file: {err}") from None


def _write(path: Path, data: dict) -> None:
    """Whole or not at all: a run killed while writing leaves the old file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True, default=dict)
        f.write("\n")
    os.chmod(tmp, 0o644)  # mkstemp's 0600 would follow the archive to other users
    os.replace(tmp, path)
