"""Deterministic samples of a hypothesis strategy, outside a test: what the measuring
scripts (race exclusion, coverage, the soundness run) and the coverage tests draw.

`draw(strategy, n, seed)` runs the strategy in rounds of `ROUND` examples, round r
seeded by hash(seed, r) exactly as a campaign seeds its rounds (fuzz/campaign.py), with
generation only (no shrinking, no database), until it has n values: the same seed gives
the same programs on every machine with the same hypothesis version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from gpusem.fuzz.reproducible import gpusem_storage, stable_constants
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hseed

ROUND = 100


def round_seed(seed: int, r: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{r}".encode()).digest()[:8], "little")


def draw_round(strategy: Any, seed: int, r: int, size: int = ROUND) -> list[Any]:
    """Round r of a run seeded `seed`: up to `size` values."""
    got: list[Any] = []

    def collect(value: Any) -> None:
        got.append(value)

    test = settings(max_examples=size, database=None, deadline=None,
                    phases=[Phase.generate],
                    suppress_health_check=list(HealthCheck))(given(strategy)(collect))
    with stable_constants(), gpusem_storage():  # as a campaign's rounds: the seed
        hseed(round_seed(seed, r))(test)()
    return got


def rounds(strategy: Any, seed: int, size: int = ROUND) -> Iterator[list[Any]]:
    """Round after round of drawn values (each round up to `size` values)."""
    r = 0
    while True:
        yield draw_round(strategy, seed, r, size)
        r += 1


def draw(strategy: Any, n: int, seed: int = 0) -> list[Any]:
    """`n` values of `strategy`, deterministic from `seed`."""
    out: list[Any] = []
    for got in rounds(strategy, seed):
        out.extend(got[: n - len(out)])
        if len(out) >= n:
            return out
    raise AssertionError("unreachable: rounds() never ends")
