"""The robustness campaign (issue 15): `n` hypothesis-generated inputs
(`inputs.inputs`) through `gpusem` in this process (`harness.run_one`), tallied. The
CI sample and the slow run are tests/robust/test_campaign.py; the committed run with
its figures is scripts/robust_campaign.py, which runs this module as worker processes:

    python -m tests.robust.campaign --inputs N --seed S --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings

from .harness import Input, Tally, describe, run_one
from .inputs import inputs

DEADLINE_S = 60.0


def run_campaign(n: int, rng_seed: int = 0, deadline_s: float = DEADLINE_S,
                 workdir: Path | None = None, progress: Path | None = None,
                 checkpoint: Path | None = None, every: int = 200) -> Tally:
    """Run `n` generated inputs; the tally of what happened. `progress`: a file
    rewritten before each input with that input (what the driver reports if the
    process must be killed) and the count so far; `checkpoint`: the tally so far,
    written every `every` inputs (what a killed worker leaves)."""
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="gpusem-robust-") as tmp:
        work = workdir or Path(tmp)
        os.environ["GPUSEM_ROBUST_DIR"] = str(work)

        @seed(rng_seed)
        @settings(max_examples=n, deadline=None, database=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(inputs())
        def one(inp: Input) -> None:
            if progress is not None:
                progress.write_text(json.dumps(
                    {"done": tally.runs, "input": describe(inp, _NOTHING)}))
            tally.add(inp, run_one(inp, work, deadline_s))
            if checkpoint is not None and tally.runs % every == 0:
                write_json(checkpoint, tally.as_dict())

        one()
    return tally


def write_json(path: Path, doc: dict) -> None:
    """Atomically: a reader never sees half a file."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(path)


class _Nothing:
    failure, code, stderr, detail = "", None, "", ""


_NOTHING = _Nothing()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--progress", type=Path)
    ap.add_argument("--deadline", type=float, default=DEADLINE_S)
    args = ap.parse_args()
    start = time.perf_counter()
    tally = run_campaign(args.inputs, args.seed, args.deadline, progress=args.progress,
                         checkpoint=args.out)
    doc = tally.as_dict()
    doc["wall_s"] = round(time.perf_counter() - start, 1)
    write_json(args.out, doc)


if __name__ == "__main__":
    main()
