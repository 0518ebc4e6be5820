"""Do two verdict censuses (python -m gpusem.fuzz.exo.census) give the same verdicts
to the same programs? A census draws program k of round r from the seed alone, so two
runs of one seed check the same programs wherever they run; their verdict pairs must
agree round by round. `LOCAL` has per-round tallies (`by_round`); `OTHER` may hold
totals only (an older census): then the rounds it checked are searched for among the
sets `--rounds` plus at most one of `--one-of` (a census whose deadline stopped its
jobs after their first round, one of them after its second), and the pairs compared.

  python scripts/census_same_verdicts.py LOCAL.json OTHER.json --rounds 0-23 --one-of 24-49
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter


def span(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def pairs_of(by_round: dict, rounds: list[int]) -> Counter:
    total: Counter = Counter()
    for r in rounds:
        total.update({k: n for k, n in by_round[str(r)].items() if k != "unexpressible"})
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("local")
    ap.add_argument("other")
    ap.add_argument("--rounds", default="")
    ap.add_argument("--one-of", default="")
    a = ap.parse_args(argv)
    local, other = (json.load(open(p)) for p in (a.local, a.other))
    if local.get("seed") != other.get("seed"):
        print(f"different seeds: {local.get('seed')} and {other.get('seed')}")
        return 1
    base = span(a.rounds) if a.rounds else []
    extra = [[]] + [[r] for r in (span(a.one_of) if a.one_of else [])]
    missing = [r for r in base + sum(extra, []) if str(r) not in local["by_round"]]
    if missing:
        print(f"{a.local} has no tally for rounds {missing}")
        return 1
    want = Counter(other["pairs"])
    for e in extra:
        rounds = base + e
        if pairs_of(local["by_round"], rounds) == want:
            n = sum(want.values())
            print(f"same verdict pairs on {n} programs (rounds {rounds[0]}-{base[-1]}"
                  f"{' and ' + str(e[0]) if e else ''}): {dict(sorted(want.items()))}")
            return 0
    print("no round set gives the other census's verdict pairs")
    return 1


if __name__ == "__main__":
    sys.exit(main())
