"""A round's programs are the same in every process (issue 19: the Dask engine runs a
shard's rounds on whichever worker is free; `--resume` and `--jobs` rely on it too).

Hypothesis (6.13x on) sometimes draws a constant it found in the *local* modules
imported so far: modules in `sys.modules` whose files are outside site-packages, such as
an editable install of gpusem or a target plugin under development. Which of them are
imported depends on the process's history: a worker that has checked a round has
imported the compiler, the backends and the race analysis, a fresh one has not. So
round r of a seed drew other programs after another round had been checked in the same
process (measured: round 1 of seed 2 differs after round 0 was batch-checked), and a
shard's programs depended on where and after what it ran.

`stable_constants()` empties hypothesis's pool of local constants while a round is
generated or a finding shrunk (hypothesis's built-in constants stay: the distribution
is otherwise unchanged), so the programs depend on the seed alone. It patches one
internal of hypothesis (`providers._get_local_constants`); where a hypothesis version
lacks it, there is nothing to pin and nothing is done (the pinning test then fails,
saying so).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def stable_constants() -> Iterator[bool]:
    """Within: hypothesis draws no constant from local modules. Yields whether there
    was such a pool to empty."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a hypothesis without the module
        yield False
        return
    original: Any = getattr(providers, "_get_local_constants", None)
    cache: Any = getattr(providers, "CONSTANTS_CACHE", None)
    if original is None or not hasattr(providers, "Constants"):
        yield False
        return
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    if cache is not None:  # permitted-constant lists computed with the local pool
        cache.cache.clear()
    try:
        yield True
    finally:
        providers._get_local_constants = original
        if cache is not None:
            cache.cache.clear()
