"""The pin that a speed-up of generate, reference or compile changes no result (issue
31.3): the rounds a campaign of `--seed` draws (`generate_round` of the bundl target's
`compile` strategy, `round_seed(seed, r)`, the campaigns' default generation mode) and,
for each program, hashes of

  program    its printed text and hypothesis's choice sequence
  reference  the campaign's fast reference (`fast_reference`): kind, message, the race
             verdict and every global cell (floats as binary32 bits)
  cuda       the CUDA text `compile_program` emits (or the compile error's type and text)

printed one line per round and one line for all (`--verbose`: one line per program).
Run on two trees and compare (equal lines: the same programs, outcomes and CUDA):

  PYTHONPATH=/tmp/base/src python scripts/stage_fingerprint.py --rounds 5 --round-size 100
  PYTHONPATH=src python scripts/stage_fingerprint.py --rounds 5 --round-size 100
"""

from __future__ import annotations

import argparse
import hashlib
import struct
import sys
from typing import Any


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _cell(x: object) -> str:
    # floats as binary32 bits, as the comparison with a backend reads them
    return struct.pack("<f", x).hex() if isinstance(x, float) else repr(x)


def reference_text(ref: Any) -> str:
    """Everything of a fast reference a verdict can read."""
    cells = ";".join(f"{name}=" + ",".join(_cell(c) for c in cells)
                     for name, cells in sorted(ref.globals.items()))
    return (f"{ref.kind}|{ref.outcome.message}|{ref.racy}|{ref.why}|{ref.fast}|"
            f"{ref.undecided}|{cells}")


def fingerprints(seed: int, rounds: int, round_size: int) -> list[list[tuple[str, ...]]]:
    """Per round, per program: (program, choices, reference, cuda) hashes."""
    from gpusem.calculus.bundl.printer import print_program
    from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
    from gpusem.fuzz.bundl.generated import as_generated
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round
    from gpusem.interpreter.bundl.reference import fast_reference

    target = BundlTarget(backend="cpu")
    out: list[list[tuple[str, ...]]] = []
    try:
        for r in range(rounds):
            drawn = generate_round(target.strategy("compile"), round_seed(seed, r),
                                   round_size)
            row = []
            for d in drawn:
                g = as_generated(d.program)
                prog = g.program
                ref = fast_reference(prog, prove_race_free=not g.race_free_by_construction)
                try:
                    cuda = compile_program(prog, CompileOptions(sync_motion=True)).source
                except Exception as err:  # noqa: BLE001 - a compile failure is a result too
                    cuda = f"error {type(err).__name__}: {err}"
                row.append((_sha(print_program(prog)), _sha(repr(d.choices)),
                            _sha(reference_text(ref)), _sha(cuda)))
            out.append(row)
    finally:
        target.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--round-size", type=int, default=100)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    everything = []
    for r, row in enumerate(fingerprints(args.seed, args.rounds, args.round_size)):
        if args.verbose:
            for n, hashes in enumerate(row):
                print(f"round {r} program {n}: {' '.join(hashes)}")
        columns = ["".join(h[i] for h in row) for i in range(4)]
        print(f"round {r}: {len(row)} programs; program {_sha(columns[0])} choices "
              f"{_sha(columns[1])} reference {_sha(columns[2])} cuda {_sha(columns[3])}")
        everything.extend(columns)
    print(f"all: {_sha(''.join(everything))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
