"""Direct generation (issue 31.3, "cheaper programs"): a round's programs drawn each
from a ConjectureData of its own, without hypothesis's engine.

`hunt.generate_round` in the `engine` mode runs `given(strategy)` in hypothesis's
generate phase. Of a Bundl program's generation there, 82-85% of the CPU is
hypothesis's (scripts/profile_generation.py), most of it in what the engine adds to
drawing: about four programs in five of a round are *mutants* (hypothesis's mutation
sub-phase copies one span of an earlier example over another of the same label, then
runs the test again), each candidate is first simulated in the data tree, each round
begins with the simplest example (the same program in every round), and the span
groups the mutator picks from are recomputed per example.

Here the k-th candidate of a round is drawn from a fresh
`ConjectureData(random=Random(example_seed(round seed, k)))` with hypothesis's own
provider (the same choice distribution as the engine's generate phase, without the
mutants and the data tree), inside a build context and hypothesis's per-example
seeding of Python's `random` (as `given` runs an example), and its choice sequence
is kept: `hunt.shrink_from` hands it to hypothesis to replay and shrink exactly as it
does an engine-drawn one. A candidate that is invalid (a filter or `assume` that
fails, an overrun) or a choice sequence already drawn in this round (the data tree's
novelty, which the engine also keeps within a round) is skipped for the next k; a
round gives up, short, after `max_candidates(n)` candidates (a strategy that runs
dry, as hypothesis's engine stops too).

Each candidate depends on the round seed and k alone, so the programs are the same in
every process (with `stable_constants`, as for the engine mode) and a round cut by
`stop()` holds the first programs of the whole one. The programs differ from the
engine mode's for the same seed: a campaign records its mode (`generation` in its
manifest, its bundles and its reports), and `--generation engine` draws the old
rounds again.

This module reaches into hypothesis past its public API (ConjectureData and its
choices, BuildContext, StopTest, UnsatisfiedAssumption, choices_key,
deterministic_PRNG: `DIRECT_INTERNALS`, which `reproducible.missing_internals`
checks too).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from random import Random
from typing import Any

# The modes of `hunt.generate_round` (here, not in hunt.py: the campaign's spec names
# them without importing hypothesis)
ENGINE = "engine"  # given(strategy) in hypothesis's generate phase
DIRECT = "direct"  # a fresh ConjectureData per program (this module)
GENERATIONS = (DIRECT, ENGINE)
DEFAULT_GENERATION = ENGINE


def check_generation(generation: str) -> str:
    """`generation` when it names a mode; ValueError otherwise."""
    if generation not in GENERATIONS:
        raise ValueError(f"unknown generation: {generation} "
                         f"(expected {' or '.join(GENERATIONS)})")
    return generation


DIRECT_INTERNALS = (
    ("hypothesis.internal.conjecture.data", "ConjectureData"),
    ("hypothesis.control", "BuildContext"),
    ("hypothesis.errors", "StopTest"),
    ("hypothesis.errors", "UnsatisfiedAssumption"),
    ("hypothesis.internal.conjecture.choice", "choices_key"),
    ("hypothesis.internal.entropy", "deterministic_PRNG"),
)


def example_seed(round_seed: int, k: int) -> int:
    """The random seed of the k-th candidate of the round seeded `round_seed`."""
    digest = hashlib.sha256(f"direct:{round_seed}:{k}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def max_candidates(n: int) -> int:
    """Candidates a round of `n` programs may draw before it gives up short: ten per
    program, as hypothesis's engine gives up after about ten invalid examples per
    valid one (at least 100, for a short round of a strategy that is often
    invalid)."""
    return max(10 * n, 100)


def _no_test() -> None:  # the build context's wrapped test: none runs here
    return None


def direct_round(strategy: Any, seed: int, n: int,
                 stop: Callable[[], bool] | None = None) -> list[tuple[Any, tuple]]:
    """The round's `n` (program, choice sequence) pairs, fewer where the strategy runs
    dry; `stop()`, asked once before each program is kept (as the engine mode asks it:
    a caller may count the calls as programs, `Campaign._generation_stop`), true cuts
    the round there. The caller provides `stable_constants` and the other
    reproducibility contexts (`hunt.generate_round`)."""
    from hypothesis.control import BuildContext
    from hypothesis.errors import StopTest, UnsatisfiedAssumption
    from hypothesis.internal.conjecture.choice import choices_key
    from hypothesis.internal.conjecture.data import ConjectureData
    from hypothesis.internal.entropy import deterministic_PRNG

    out: list[tuple[Any, tuple]] = []
    seen: set[tuple] = set()
    for k in range(max_candidates(n)):
        if len(out) >= n:
            break
        data = ConjectureData(random=Random(example_seed(seed, k)))
        try:
            # as `given` runs an example: Python's `random` seeded alike for each
            # (a strategy that reads it draws the same in every process), and a
            # build context for the strategies that note, event or target
            with deterministic_PRNG(), BuildContext(data, wrapped_test=_no_test):
                program = data.draw(strategy)
        except (StopTest, UnsatisfiedAssumption):  # invalid or overrun: as hypothesis
            continue                               # does, the next candidate
        choices = tuple(data.choices)
        key = choices_key(choices)
        if key in seen:
            continue
        seen.add(key)
        if stop is not None and stop():
            break
        out.append((program, choices))
    return out
