"""The compile property's campaign programs, reference outcomes and kernels as hashes:
the pin that a speed-up of generation, the reference or the compiler (issue 31.3)
changes no program, verdict or kernel. For each (seed, round) of `--seeds` x
`--rounds`, the round's programs as the campaign draws them (`generate_round` of the
bundl target's `compile` strategy, rounds of `--round-size`), and per program: its
printed text, the fast reference's outcome (kind, memory with floats as their bits,
the race verdict and its message, whether undecided) and, where the campaign compares
it, the emitted CUDA source or the compiler's error. One hash per round and one over
all, so two trees are compared by running this on each:

  PYTHONPATH=/path/to/main/src python scripts/campaign_hashes.py > main.json
  PYTHONPATH=src python scripts/campaign_hashes.py > here.json; diff main.json here.json

(the earlier cuts hashed 300-600 such programs by hand; this is that check kept).
The rounds are the engine generation mode's (`fuzz/hunt.py`), whatever the campaigns'
default; `--generation direct` hashes the direct mode's (issue 31.3). At ce50a58
(defaults: 2 seeds x 3 rounds of 100): engine d953d2e8a0775906 (as on main before the
modes), direct 925f42a9bef96f19.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
import sys


def _bits(x: object) -> object:
    return struct.pack("<f", x).hex() if isinstance(x, float) else x


def _outcome_text(ref) -> str:
    cells = {} if ref.kind != "terminated" else {
        name: [_bits(x) for x in vals] for name, vals in sorted(ref.globals.items())}
    return repr((ref.kind, cells, ref.racy, ref.why, ref.undecided,
                 ref.outcome.message if ref.kind != "terminated" else ""))


def round_hash(strategy, seed: int, r: int, round_size: int,
               generation: str = "engine") -> tuple[str, int]:
    """The hash of round r of `seed`, and how many programs it drew."""
    from gpusem.calculus.bundl.printer import print_program
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl import compile_property as cp
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round
    from gpusem.interpreter.bundl.reference import fast_reference

    h = hashlib.sha256()
    drawn = generate_round(strategy, round_seed(seed, r), round_size,
                           generation=generation)
    for d in drawn:
        g = as_generated(d.program)
        h.update(print_program(g.program).encode() + b"\0")
        ref = fast_reference(g.program, prove_race_free=not g.race_free_by_construction)
        h.update(_outcome_text(ref).encode() + b"\0")
        if cp._not_compared(ref) is not None:
            continue
        try:
            kernel = compile_program(g.program, CompileOptions(sync_motion=True))
            h.update(kernel.source.encode() + b"\0")
        except Exception as err:  # noqa: BLE001 - an error is an outcome to pin too
            h.update(f"{type(err).__name__}: {err}".encode() + b"\0")
    return h.hexdigest()[:16], len(drawn)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=2, help="seeds 0 .. N-1")
    ap.add_argument("--rounds", type=int, default=3, help="rounds 0 .. N-1 per seed")
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--generation", default="engine", choices=("engine", "direct"))
    args = ap.parse_args(argv)
    from gpusem.fuzz.bundl.target import BundlTarget

    target = BundlTarget(backend="cpu")
    rounds, total, programs = [], hashlib.sha256(), 0
    try:
        strategy = target.strategy("compile")
        for seed in range(args.seeds):
            for r in range(args.rounds):
                digest, n = round_hash(strategy, seed, r, args.round_size,
                                       args.generation)
                rounds.append({"seed": seed, "round": r, "programs": n,
                               "hash": digest})
                total.update(digest.encode())
                programs += n
    finally:
        target.close()
    json.dump({"round_size": args.round_size, "generation": args.generation,
               "programs": programs,
               "hash": total.hexdigest()[:16], "rounds": rounds}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
