"""Generating a round once, and shrinking a finding from the exact example that showed
it (issue 13: a round is no longer generated twice).

`generate_round` runs hypothesis in its generate phase only and keeps, beside each
program, the *choice sequence* hypothesis drew it from. When a program turns out to be
a finding, `shrink_from` hands exactly that choice sequence to a second hypothesis run
(phases reuse + shrink) through a one-entry example database, so hypothesis replays
that one example and shrinks from it: nothing of the round is generated or checked
again, and the shrinking starts from the same example (with the same random seed) as
when the round ran under hypothesis with shrinking on, so it is as good and as
deterministic.

The entry goes in the database's *secondary* corpus: hypothesis takes an example from
the primary corpus as already shrunk and would not shrink it.

The choice sequence comes from `hypothesis.control.current_build_context()`; where a
hypothesis version does not give it (None), `shrink_from` falls back to re-running the
round's generation with shrinking on and checking only from the failing example's index
on (the other examples are generated again, not checked again).

Two generation modes (issue 31.3; `GENERATIONS`): `engine`, the above, and `direct`
(`fuzz/direct.py`), each program drawn from a ConjectureData of its own without
hypothesis's engine, its choice sequence kept alike (always given), so `shrink_from`
shrinks either mode's finding the same way. They draw different programs from the
same seed: a campaign records its mode, and the engine mode replays older campaigns.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gpusem.fuzz.direct import (
    DEFAULT_GENERATION,
    DIRECT,
    ENGINE,
    GENERATIONS,
    check_generation,
    direct_round,
)
from gpusem.fuzz.reproducible import (
    SECONDARY_KEY_SUFFIX,
    choices_blob,
    current_choices,
    gpusem_storage,
    numpy_random_left_alone,
    stable_constants,
    with_seed,
)
from gpusem.fuzz.span_groups import fast_mutator_groups
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.database import ExampleDatabase


@dataclass
class Drawn:
    program: Any
    choices: tuple | None  # hypothesis's choice sequence, when it tells


__all__ = ["DEFAULT_GENERATION", "DIRECT", "ENGINE", "GENERATIONS", "Drawn",
           "check_generation", "generate_round", "shrink_from"]


class _Enough(Exception):
    """Raised inside the generating test when `stop()` says the round is long enough."""


def generate_round(strategy: Any, seed: int, n: int,
                   stop: Callable[[], bool] | None = None,
                   generation: str = DEFAULT_GENERATION) -> list[Drawn]:
    """The round's `n` programs (fewer if the strategy runs dry), from `seed`, drawn
    the `generation` way (`GENERATIONS`); `stop()`, asked once before each program
    is kept in either mode, true cuts the round short (a campaign's budget spent:
    issue 31.1, where generating a round took seconds; --max-programs reached). A
    cut round holds the first programs of the whole one."""
    if check_generation(generation) == DIRECT:
        # the same programs in every process, as below
        with stable_constants(), gpusem_storage(), numpy_random_left_alone():
            return [Drawn(p, c) for p, c in direct_round(strategy, seed, n, stop)]
    drawn: list[Drawn] = []

    def collect(program: Any) -> None:
        if stop is not None and stop():
            raise _Enough
        drawn.append(Drawn(program, current_choices()))

    test = settings(max_examples=n, database=None, deadline=None,
                    phases=[Phase.generate], report_multiple_bugs=False,
                    verbosity=Verbosity.quiet,
                    suppress_health_check=list(HealthCheck))(given(strategy)(collect))
    # the same programs in every process; numpy's random state, which no draw reads,
    # not saved and reseeded around each example; the mutator's span groups computed
    # in one pass (the same groups: span_groups.py)
    with stable_constants(), gpusem_storage(), numpy_random_left_alone(), \
            fast_mutator_groups():
        try:
            with_seed(test, seed)()
        except _Enough:
            pass
    return drawn


class _OneExample(ExampleDatabase):
    """A database holding one example, in the secondary corpus, handed out once."""

    def __init__(self, blob: bytes) -> None:
        super().__init__()
        self.blob: bytes | None = blob

    def fetch(self, key: bytes) -> Iterable[bytes]:
        if key.endswith(SECONDARY_KEY_SUFFIX) and self.blob is not None:
            blob, self.blob = self.blob, None
            yield blob

    def save(self, key: bytes, value: bytes) -> None:
        pass

    def delete(self, key: bytes, value: bytes) -> None:
        pass

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        pass


class _Found(Exception):
    """Raised inside the hypothesis test for the signature being shrunk."""


class _Stopped(BaseException):
    """Raised inside the hypothesis test once `stop()` holds. A BaseException that
    hypothesis does not count as a failure (core.failure_exceptions_to_catch), so it
    leaves the engine at once: a test that only returned let hypothesis go on
    drawing every remaining shrink candidate in Python for nothing (the lambda-cu
    fault campaigns: ~200 programs, ~16 CPU-s, after a 1 s shrink cap ran out)."""


def shrink_from(strategy: Any, seed: int, example: Drawn, index: int, round_size: int,
                fails: Callable[[Any], bool], stop: Callable[[], bool]) -> Any:
    """The smallest program hypothesis finds, starting from `example` (drawn as the
    `index`-th of a round of `round_size` from `seed`), for which `fails` holds;
    `example.program` itself when shrinking finds nothing smaller. `stop()` true ends
    the shrinking (the smallest so far is returned)."""
    smallest = [example.program]

    def body(program: Any) -> None:
        if stop():
            raise _Stopped
        if fails(program):
            smallest[0] = program
            raise _Found

    if example.choices is not None:
        db = _OneExample(choices_blob(example.choices))
        test = settings(max_examples=round_size, database=db, deadline=None,
                        report_multiple_bugs=False,
                        suppress_health_check=list(HealthCheck),
                        phases=[Phase.reuse, Phase.shrink])(given(strategy)(body))
    else:
        seen = [0]

        def late(program: Any) -> None:  # the examples before `index` passed already
            seen[0] += 1
            if seen[0] >= index + 1:
                body(program)

        test = settings(max_examples=round_size, database=None, deadline=None,
                        report_multiple_bugs=False,
                        suppress_health_check=list(HealthCheck),
                        phases=[Phase.generate, Phase.shrink])(given(strategy)(late))
    try:
        with warnings.catch_warnings():  # hypothesis's "overly large repr" of a big
            warnings.simplefilter("ignore")  # failing program, when it reports it
            with stable_constants(), gpusem_storage():  # the seed alone decides
                with_seed(test, seed)()
    except (_Found, _Stopped):
        pass
    except Exception:  # noqa: BLE001 - hypothesis's Flaky when `stop` cut the replay:
        pass           # the smallest failure so far stands
    return smallest[0]
