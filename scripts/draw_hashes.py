"""The programs a seed draws, as hashes: the pin that generator speed-ups draw the same
programs (issue 31.3). For each (property, seed, round) of `CASES`, the round's programs
as the campaign draws them (`generate_round` of the bundl target's strategy, seeded
with `round_seed`, `round_size` programs), each printed (`print_program`) and hashed,
and the round's hypothesis choice sequences hashed together (stored bundles replay
them).

Run once against main's code to make tests/fuzz/data/draw_hashes.json (the test
tests/fuzz/test_draw_stability.py recomputes the hashes with this tree's code and
compares; it never writes the file):

  PYTHONPATH=/path/to/main/src python scripts/draw_hashes.py > tests/fuzz/data/draw_hashes.json

`--seeds N`: instead, round 0 of each seed 0 .. N-1 (`--round-size`, `--property`)
hashed together, one line: the wider check run on two trees and compared by hand
(`PYTHONPATH=/path/to/main/src python scripts/draw_hashes.py --seeds 2000`, then the
same with this tree's src/).

`--generation direct`: the rounds of the direct generation mode (`fuzz/direct.py`,
issue 31.3) instead of the engine mode's (the default here, whatever the campaigns'
default: tests/fuzz/data/draw_hashes.json pins the engine mode). Its pin was made once,
at the commit that added the mode, with

  PYTHONPATH=src python scripts/draw_hashes.py --generation direct > tests/fuzz/data/draw_hashes_direct.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

ROUND_SIZE = 25  # the campaign's default round size (fuzz/campaign.py)
CASES = (  # (property, seed, round)
    ("compile", 0, 0), ("compile", 0, 1), ("compile", 1, 0), ("compile", 5, 0),
    ("compile", 17, 3), ("determinism", 0, 0), ("soundness", 0, 0), ("soundness", 3, 1),
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def round_hashes(prop: str, seed: int, r: int, generation: str = "engine"
                 ) -> dict[str, Any]:
    """One round's program hashes and its choice sequences' hash."""
    from gpusem.calculus.bundl.printer import print_program
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    target = BundlTarget(backend="cpu")
    try:
        drawn = generate_round(target.strategy(prop), round_seed(seed, r), ROUND_SIZE,
                               generation=generation)
    finally:
        target.close()
    texts = [print_program(getattr(d.program, "program", d.program)) for d in drawn]
    return {"property": prop, "seed": seed, "round": r,
            "programs": [_sha(t) for t in texts],
            "choices": _sha(repr([d.choices for d in drawn]))}


def all_hashes(generation: str = "engine") -> list[dict[str, Any]]:
    return [round_hashes(*case, generation) for case in CASES]


def many_seeds(prop: str, seeds: int, round_size: int, generation: str = "engine"
               ) -> dict[str, Any]:
    """Round 0 of seeds 0 .. seeds-1, every program and choice sequence in one hash."""
    from gpusem.calculus.bundl.printer import print_program
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    target, total, programs = BundlTarget(backend="cpu"), hashlib.sha256(), 0
    try:
        strategy = target.strategy(prop)
        for seed in range(seeds):
            drawn = generate_round(strategy, round_seed(seed, 0), round_size,
                                   generation=generation)
            for d in drawn:
                total.update(print_program(getattr(d.program, "program", d.program))
                             .encode() + b"\0" + repr(d.choices).encode() + b"\0")
            programs += len(drawn)
    finally:
        target.close()
    return {"property": prop, "seeds": seeds, "round_size": round_size,
            "generation": generation, "programs": programs,
            "hash": total.hexdigest()[:16]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, help="round 0 of seeds 0 .. N-1, one hash")
    ap.add_argument("--round-size", type=int, default=ROUND_SIZE)
    ap.add_argument("--property", default="compile")
    ap.add_argument("--generation", default="engine", choices=("engine", "direct"))
    args = ap.parse_args(argv)
    if args.seeds is not None:
        print(json.dumps(many_seeds(args.property, args.seeds, args.round_size,
                                    args.generation)))
        return 0
    pin: dict[str, Any] = {"round_size": ROUND_SIZE}
    if args.generation != "engine":  # the engine's pin predates the key: none there
        pin["generation"] = args.generation
    json.dump(pin | {"rounds": all_hashes(args.generation)}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
