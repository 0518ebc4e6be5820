"""One stage (reference or compile) on the first N programs of a pickled round set, or
generate (round 0 of seed 0, N programs, as the campaign draws it), for counting
instructions under valgrind (issue 31.3): a count does not move with the machine's
load, which on the 2-core dev machine blurred CPU times by up to 40%.

  python scripts/stage_instructions.py draw 4 /tmp/progs.pkl        # rounds 0-3, seed 0
  python scripts/stage_instructions.py compared /tmp/progs.pkl /tmp/compared.pkl
  PYTHONPATH=TREE/src valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
      python scripts/stage_instructions.py compile 200 /tmp/compared.pkl
  ... reference 200 /tmp/progs.pkl, and N = 0 for what the imports cost
  ... generate 100 (no file; N = 1 for what the imports and a round's start cost)

(valgrind's "Collected" line: instructions; a stage's is the count at N less the count
at 0). `compared` keeps the programs whose fast reference the campaign compares, as
`compile` is only asked of those.
"""

from __future__ import annotations

import pickle
import sys


def main(argv: list[str]) -> int:
    what = argv[0]
    if what == "draw":
        import stage_repeat

        stage_repeat.draw(int(argv[1]), argv[2])
        return 0
    if what == "compared":
        from gpusem.fuzz.bundl import compile_property as cp
        from gpusem.interpreter.bundl.reference import fast_reference

        with open(argv[1], "rb") as f:
            gens = pickle.load(f)
        kept = [g for g in gens if cp._not_compared(fast_reference(
            g.program, prove_race_free=not g.race_free_by_construction)) is None]
        with open(argv[2], "wb") as f:
            pickle.dump(kept, f)
        return 0
    if what == "generate":  # the campaign's draw of round 0 of seed 0, N programs
        from gpusem.fuzz.bundl.target import BundlTarget
        from gpusem.fuzz.campaign import round_seed
        from gpusem.fuzz.gc_tuning import campaign_gc
        from gpusem.fuzz.hunt import generate_round

        target = BundlTarget(backend="cpu")
        with campaign_gc():
            generate_round(target.strategy("compile"), round_seed(0, 0), int(argv[1]))
        target.close()
        return 0
    n, path = int(argv[1]), argv[2]
    if what == "compile":
        from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program

        with open(path, "rb") as f:
            gens = pickle.load(f)[:n]
        for g in gens:
            try:
                compile_program(g.program, CompileOptions(sync_motion=True))
            except Exception:  # noqa: BLE001, S110 - a compile error is an outcome
                pass
        return 0
    from gpusem.fuzz.gc_tuning import campaign_gc
    from gpusem.interpreter.bundl.reference import fast_reference
    from gpusem.typing_rules.bundl import race  # noqa: F401 - imported at N = 0 too

    with open(path, "rb") as f:
        gens = pickle.load(f)[:n]
    with campaign_gc():
        for g in gens:
            fast_reference(g.program, prove_race_free=not g.race_free_by_construction)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
