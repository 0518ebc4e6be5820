"""A verdict census: many generated programs through both checkers, every verdict
tallied (issue 16, item 5: "at least 5,000 programs checked by both checkers"). Where
`gpusem fuzz --target exo` hunts and shrinks each new finding, the census counts: how
often each checker accepts, how often they agree under each rule set, which mutation
is rejected by whom, and the first program of every finding signature (the campaign's
bundles hold the shrunk ones). The tallies: census_tally.py.

  python -m gpusem.fuzz.exo.census --programs 5000 --jobs 2 --out FILE.json
  python -m gpusem.fuzz.exo.census --programs 5000 --jobs 16 --seconds 420 --dir DIR
  python -m gpusem.fuzz.exo.census --programs 5000 --jobs 16 --seconds 420 \
      --dir ROOT --branch pldi26=PY1 --branch endgame=PY2
  python -m gpusem.fuzz.exo.census --merge DIR [DIR ...] --out FILE.json

`--exo-python` or GPUSEM_EXO_PYTHON picks the Exo; `--branch LABEL=PYTHON` (repeated)
runs several branches' censuses at once on the same jobs, each in ROOT/LABEL.
Deterministic from `--seed`: program k is drawn in round k // 100 with seed
hash(seed, round). `--dir`: a census folder (census_folder.py) that keeps every
finished round, so a run stopped by `--seconds` or from outside is resumed by the
next run of the same command, on any machine; `--merge` sums folders (several calls'
archives) into one census JSON. `--rounds A-B` picks the rounds (default: the first
ceil(programs / 100)).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from gpusem.fuzz.exo.census_tally import ROUND


def common_arguments(ap: argparse.ArgumentParser, out_required: bool = True) -> None:
    """The options the verdict census and the compile census share."""
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--exo-python")
    ap.add_argument("--seconds", type=float, default=1e9,
                    help="start no new round after this long")
    ap.add_argument("--out", required=out_required)


def require_exo(exo_python: str | None) -> None:
    """Point the driver at `exo_python` (else GPUSEM_EXO_PYTHON); where no Exo-GPU is
    installed, one line and exit 2, before any job starts."""
    if exo_python:
        os.environ["GPUSEM_EXO_PYTHON"] = exo_python
    from gpusem.calculus.errors import GpusemError
    from gpusem.compiler.gpuir_exo.driver import ExoDriver

    try:
        ExoDriver().close()
    except GpusemError as err:
        print(f"gpusem: {err.one_line()}", file=sys.stderr)
        raise SystemExit(2) from None


def write_json(total: dict, out: str) -> None:
    with open(out, "w") as f:
        json.dump(total, f, indent=1, sort_keys=True, default=dict)
        f.write("\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--dir", help="the census folder (ROOT with --branch)")
    ap.add_argument("--branch", action="append", default=[], metavar="LABEL=PYTHON")
    ap.add_argument("--rounds", help="A-B: the rounds to check")
    ap.add_argument("--merge", nargs="+", metavar="DIR",
                    help="merge these census folders into --out; check nothing")
    common_arguments(ap, out_required=False)
    a = ap.parse_args(argv)
    if not (a.out or a.dir):
        ap.error("--out or --dir is required")
    from gpusem.calculus.errors import GpusemError

    try:
        if a.merge:
            if not a.out:
                ap.error("--merge needs --out")
            _merge(a.merge, a.out)
        else:
            _census(a)
    except GpusemError as err:
        print(f"gpusem: {err.one_line()}", file=sys.stderr)
        raise SystemExit(2) from None


def _merge(dirs: list[str], out: str) -> None:
    from gpusem.fuzz.exo.census_folder import merge_folders

    total = merge_folders(dirs)
    write_json(total, out)
    print(f"{total['programs']} programs (rounds {total['rounds']}) from {len(dirs)} "
          f"folders -> {out}")


def _census(a: argparse.Namespace) -> None:
    from gpusem.calculus.errors import BadInput
    from gpusem.fuzz.exo.census_jobs import run_census

    branches: dict[str, str | None] = {}
    for item in a.branch:
        label, sep, python = item.partition("=")
        if not (sep and label and python) or "/" in label:
            raise BadInput(f"--branch {item}: expected LABEL=PYTHON")
        branches[label] = python
    for python in branches.values() or [a.exo_python]:
        require_exo(python)
    if a.rounds:
        lo, _, hi = a.rounds.partition("-")
        if not (lo.isdigit() and (hi or lo).isdigit()):
            raise BadInput(f"--rounds {a.rounds}: expected A-B")
        rounds = list(range(int(lo), int(hi or lo) + 1))
    else:
        rounds = list(range(-(-a.programs // ROUND)))
    if not branches:
        branches = {"exo": None}
    if a.dir:
        root = Path(a.dir)
        folders = {b: root / b if a.branch else root for b in branches}
        totals = run_census(branches, folders, a.seed, rounds, a.jobs, a.seconds)
    else:
        with tempfile.TemporaryDirectory(prefix="gpusem-census-") as tmp:
            totals = run_census(branches, {"exo": Path(tmp)}, a.seed, rounds, a.jobs,
                                a.seconds)
    for b, total in totals.items():
        if a.out and len(totals) == 1:
            write_json(total, a.out)
        print(f"{b}: {total.get('checked_by_both', 0)} programs checked by both "
              f"checkers, {total['programs']} in all (rounds {total['rounds'] or '-'}"
              f"); agreement {total.get('agreement')}; "
              f"{len(total.get('findings', {}))} finding signatures"
              f"{' -> ' + str(folders[b]) if a.dir else ''}")


if __name__ == "__main__":
    main()
