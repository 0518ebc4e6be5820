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

This module is the one place gpusem reaches into hypothesis past its public API (issue
32.12, with `fuzz/direct.py` and `fuzz/span_groups.py`, whose `DIRECT_INTERNALS` and
`SPAN_GROUP_INTERNALS` are checked here too;
`missing_internals` lists what a hypothesis version lacks, and
tests/fuzz/test_reproducible.py fails loudly, naming it, on an incompatible one): the
local-constant pool above; hypothesis's composite strategy class, drawn from directly
(`composite`, issue 31.3), and what `data.draw` does below the top level, done without
its set-up (`fast_draw`, issue 31.3), a leaf strategy's choice made by the `_draw` call
recorded from its own draw method (`leaf_call`); the choice sequence of the example being drawn
(`current_choices`) and its serialisation (`choices_blob`) with the database's
secondary-corpus key, so a finding is shrunk from the very example that failed; a seed
for a test that keeps its own database (`with_seed`: the public `seed` decorator also
sets `database=None`); and hypothesis's storage folder (`gpusem_storage`), pointed into
gpusem's cache while gpusem generates, so its unicode tables never make a `.hypothesis/`
in the user's working folder.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, partial, wraps
from operator import methodcaller
from types import SimpleNamespace
from typing import Any, TypeVar

from gpusem.compiler.backends.cache import cache_root

# The database key suffix of the secondary corpus, which hypothesis's reuse phase
# reads (hypothesis/internal/conjecture/engine.py: `self.secondary_key`).
SECONDARY_KEY_SUFFIX = b".secondary"

T = TypeVar("T")


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


def current_choices() -> tuple | None:
    """The choice sequence of the example being drawn (inside a hypothesis test);
    None where this hypothesis does not expose it (shrinking then replays by index)."""
    try:
        from hypothesis.control import current_build_context

        return tuple(current_build_context().data.choices)
    except Exception:  # noqa: BLE001 - an internal of hypothesis that may move
        return None


def choices_blob(choices: tuple) -> bytes:
    """`choices` as a database entry, for the reuse phase to replay."""
    from hypothesis.database import choices_to_bytes

    return bytes(choices_to_bytes(choices))


def with_seed(test: Any, seed: int) -> Any:
    """hypothesis.seed(seed)(test), without the database=None that `seed` also sets
    (the one-example database of `hunt.shrink_from` must stay)."""
    test._hypothesis_internal_use_seed = seed
    return test


@contextmanager
def numpy_random_left_alone() -> Iterator[None]:
    """Within: hypothesis does not seed numpy's global random state before each example
    and restore it after (`entropy.deterministic_PRNG`: `get_state` and `set_state`
    copy its 624 words, ~0.1-0.15 ms an example, ~3% of a Bundl program's generation:
    issue 31.3). Nothing gpusem draws reads that state (every choice is hypothesis's),
    and nothing else runs in between, so the examples and the state after are the
    same; Python's `random` stays managed. Where this hypothesis keeps no such
    registry, nothing is done."""
    try:
        from hypothesis.internal import entropy

        registry = entropy.RANDOMS_TO_MANAGE
        wrapper = entropy.NumpyRandomWrapper
    except (ImportError, AttributeError):  # pragma: no cover - missing_internals
        yield
        return
    if entropy.NP_RANDOM is None and "numpy" in sys.modules:
        entropy.get_seeder_and_restorer(0)  # registers numpy's, as a test's first run
    mine = {k: r for k, r in list(registry.items()) if isinstance(r, wrapper)}
    for k in mine:
        registry.pop(k, None)
    try:
        yield
    finally:
        registry.update(mine)


@contextmanager
def gpusem_storage() -> Iterator[None]:
    """Within: hypothesis's storage folder is gpusem's cache (`hypothesis/`), unless
    the user chose one (`HYPOTHESIS_STORAGE_DIRECTORY`, or an earlier
    `set_hypothesis_home_dir`), which is then left alone."""
    import os

    from hypothesis import configuration

    name = "__hypothesis_home_directory"
    before = getattr(configuration, name, None)
    if before is not None or os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    configuration.set_hypothesis_home_dir(cache_root() / "hypothesis")
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(before)


@cache
def _composite_class() -> Any:
    """A CompositeStrategy whose label is given, not recomputed (None where this
    hypothesis has no such class: `composite` is then `st.composite`)."""
    try:  # hypothesis's own class, so that drawing is its code, not a copy of it
        from hypothesis.strategies._internal.core import CompositeStrategy
    except ImportError:  # pragma: no cover - missing_internals names it
        return None

    class Composite(CompositeStrategy):
        """What `st.composite(f)(*args)` draws from (same label, same `do_draw`, so
        the same spans and choices), minus the set-up hypothesis repeats for each
        of the ~40 composites a program draws: the LazyStrategy around it and its
        validation, the fixed point of `is_empty` and the label, computed from
        `f`'s source. Here the label is computed once per function, and a composite
        is never empty and has no reusable values, as hypothesis finds for every
        CompositeStrategy (the `calc_is_empty`, `calc_has_reusable_values`
        defaults)."""

        force_is_empty = False
        force_has_reusable_values = False

        def __init__(self, definition: Callable[..., Any], label: int,
                     args: tuple, kwargs: dict) -> None:
            super().__init__(definition, args, kwargs)
            self.fixed_label = label
            # nothing to validate (CompositeStrategy has no do_validate; emptiness
            # and reusability are forced above): drawn by `fast_draw` from the first
            self.__dict__[_READY] = (label, None)

        def calc_label(self) -> int:
            return self.fixed_label

        def do_draw(self, data: Any) -> Any:  # CompositeStrategy's, with `fast_draw`
            return self.definition(partial(fast_draw, data), *self.args, **self.kwargs)

        def __repr__(self) -> str:  # as LazyStrategy shows a composite's call
            shown = [repr(a) for a in self.args]
            shown += [f"{k}={v!r}" for k, v in self.kwargs.items()]
            return f"{self.definition.__name__}({', '.join(shown)})"

    return Composite


def composite(f: Callable[..., T]) -> Callable[..., Any]:
    """`st.composite`, cheaper per call (issue 31.3: 8.2 -> 6.0 CPU ms a program of
    the Bundl compile strategy); the programs drawn are the same
    (tests/fuzz/test_draw_stability.py)."""
    from hypothesis import strategies as st

    cls = _composite_class()
    if cls is None:  # pragma: no cover
        return st.composite(f)
    label = cls.__mro__[1](f, (), {}).label  # hypothesis's own label for f

    @wraps(f)
    def strategy(*args: Any, **kwargs: Any) -> Any:
        return cls(f, label, args, kwargs)

    return strategy



# ---------------------------------------------------------------- fast draws
#
# `data.draw(s)` costs ~3 us around the draw itself (imports, validation, unwrapping,
# the ValueHole test, timing at the top level); a Bundl program makes ~280 draws.
# `fast_draw` is what it does below the top level for a strategy it has validated
# once, and OneOfStrategy's and a fixed-size ListStrategy's inner draws go through
# it too: the same span (label), the same `do_draw`, the same recorded value, hence
# the same choices and spans (tests/fuzz/test_cheap_composite.py compares the span
# records; tests/fuzz/test_draw_stability.py the programs). Leaves (integers, booleans,
# sampled_from) go straight to their choice: see "Leaves" below.

# A validated strategy's (label, handler): handler(data) draws its value; None: its
# own do_draw (not a bound method kept in its own __dict__: a reference cycle, which
# only the garbage collector frees, for each of the ~40 composites a program makes).
_READY = "_gpusem_fast_draw"


def fast_draw(data: Any, strategy: Any, label: int | None = None) -> Any:
    """`data.draw(strategy, label)`, skipping what a validated strategy below the top
    level does not need; anything else (the first draw of a strategy, a label given,
    the depth limit, a ValueHole to invert while shrinking) is data.draw's."""
    ready = strategy.__dict__.get(_READY)
    prefix, hyp = data.prefix, _hyp()
    if (ready is None or label is not None or not 0 < data.depth < hyp.MAX_DEPTH
            or (prefix is not None and data.index < len(prefix)
                and isinstance(prefix[data.index], hyp.ValueHole))):
        value = data.draw(strategy, label)
        if ready is None:
            _make_ready(strategy)
        return value
    label, handler = ready
    record = data._ConjectureData__span_record
    index = record.span_count
    data.start_span(label)
    try:
        value = strategy.do_draw(data) if handler is None else handler(data)
        record.record_value_for_span(index, value)
        return value
    except hyp.FlakyStrategyDefinition as err:  # as data.draw notes it
        err.add_note(f"while drawing from {strategy!r}")
        raise
    finally:
        data.stop_span()


def _make_ready(strategy: Any) -> None:
    """Mark `strategy`, which data.draw has just validated and found not empty, for
    `fast_draw`. Not a deferred strategy: what it unwraps to may still change.
    Note: hypothesis validates once per thread; a strategy validated in one thread
    is not validated again in another (validation has no effect but its verdict)."""
    from hypothesis.strategies._internal.deferred import DeferredStrategy
    from hypothesis.strategies._internal.lazy import unwrap_strategies

    unwrapped = unwrap_strategies(strategy)
    if isinstance(strategy, DeferredStrategy) or isinstance(unwrapped,
                                                            DeferredStrategy):
        return
    make = _handlers().get(type(unwrapped))
    handler = None if make is None else make(unwrapped)
    if handler is None and unwrapped is not strategy:
        handler = unwrapped.do_draw
    strategy.__dict__[_READY] = (unwrapped.label, handler)


def _one_of(unwrapped: Any) -> Callable[[Any], Any] | None:
    """OneOfStrategy.do_draw, `data.draw(data.draw(self.__branch_sampler))`, with
    `fast_draw`; its own do_draw where it has no sampler (one branch). The sampler is
    made by the first draw, which data.draw has made, and never replaced."""
    sampler = unwrapped.__dict__.get("_OneOfStrategy__branch_sampler")
    if type(sampler) is not _hyp().SampledFromStrategy:
        return None
    return lambda data: fast_draw(data, fast_draw(data, sampler))


def _fixed_list(unwrapped: Any) -> Callable[[Any], Any] | None:
    """ListStrategy.do_draw of a fixed size: what `many` does then (no choice of its
    own: a span per element and one closing span), with `fast_draw` per element."""
    size, element = unwrapped.min_size, unwrapped.element_strategy
    if size != unwrapped.max_size or element.is_empty:
        return None
    label = _hyp().ONE_FROM_MANY_LABEL

    def draw(data: Any) -> Any:
        out = []
        for _ in range(size):
            data.start_span(label)
            out.append(fast_draw(data, element))
            data.stop_span()
        data.start_span(label)  # `many` deciding there is no further element
        data.stop_span()
        return out

    return draw


# Leaves (issue 31.3, fifth cut: about half of a program's choices are the values of
# its arrays, each a one_of of two integer ranges). integers(), booleans() and a
# sampled_from() with no map or filter make one call on `data`, draw_integer or
# draw_boolean, whose arguments do not depend on `data`; that method checks them,
# looks its constraints dict up in hypothesis's pool (a key built from the
# constraints, at every draw) and hands it to `data._draw`, which makes the choice.
# A leaf's handler calls `data._draw` with those constraints directly.
#
# None of it is written down here: the calls are recorded once per strategy, from the
# strategy's own do_draw and then ConjectureData's own draw method, each run against a
# recorder (`_recorded`), so they are this hypothesis's calls, and so are the choice,
# the value, the span and its recorded value (test_cheap_composite compares span
# records with data.draw's, test_draw_stability the programs). Where a recorder is
# not enough (the code reads more of `data`, or draws twice), the strategy keeps its
# own do_draw, or its draw method. The dict is not pooled: the pool only shares equal
# dicts, to save memory.


class _Recorder:
    """Stands in for a ConjectureData: records each call of the `recorded` methods in
    `calls`, answering `answer`; `given`: other methods it has (any other is missing,
    so code that needs more of data fails on it). The methods are closures over
    `calls`, not bound to the recorder: no reference cycle to leave for the garbage
    collector."""

    def __init__(self, recorded: tuple[str, ...], answer: Any,
                 given: dict[str, Callable[..., Any]]) -> None:
        self.calls: list[tuple[str, tuple, dict]] = []
        for name in recorded:
            setattr(self, name, _recording(self.calls, name, answer))
        for name, method in given.items():
            setattr(self, name, method)


def _recording(calls: list, name: str, answer: Any) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        calls.append((name, args, kwargs))
        return answer

    return call


def _recorded(run: Callable[[Any], Any], recorded: tuple[str, ...], answer: Any,
              returns: Any = None, **given: Callable[..., Any]
              ) -> tuple[_Recorder, tuple[str, tuple, dict]] | None:
    """The recorder after `run(recorder)`, and the one call of `recorded` run made,
    where it made exactly one and returned `returns` (`answer` where None); None
    otherwise."""
    recorder = _Recorder(recorded, answer, given)
    try:
        value = run(recorder)
    except Exception:  # noqa: BLE001 - it needs more of data than a recorder has
        return None
    if len(recorder.calls) != 1 or value is not (answer if returns is None
                                                 else returns):
        return None
    return recorder, recorder.calls[0]


def leaf_call(unwrapped: Any, answer: Any, returns: Any = None
              ) -> tuple[_Recorder, tuple[str, tuple, dict]] | None:
    """The call on data that makes the one choice of `unwrapped`'s do_draw (see
    `_recorded`): `_draw` with the arguments its draw method (draw_integer, say) gives
    it, or that method's call where a recorder cannot stand for data in the method;
    with the recorder do_draw drew from. None where do_draw does anything else."""
    seen = _recorded(unwrapped.do_draw, ("draw_integer", "draw_boolean"), answer,
                     returns)
    if seen is None:
        return None
    from hypothesis.internal.conjecture.data import ConjectureData

    recorder, (name, args, kwargs) = seen
    method = getattr(ConjectureData, name)
    inner = _recorded(lambda data: method(data, *args, **kwargs), ("_draw",), answer,
                      _pooled_constraints=lambda _type, constraints: constraints)
    return recorder, (inner[1] if inner is not None else (name, args, kwargs))


def _integers(unwrapped: Any) -> Callable[[Any], Any] | None:
    """IntegersStrategy, BooleansStrategy: the choice its one draw makes."""
    seen = leaf_call(unwrapped, object())
    if seen is None:
        return None
    name, args, kwargs = seen[1]
    return methodcaller(name, *args, **kwargs)


def _sampled(unwrapped: Any) -> Callable[[Any], Any] | None:
    """SampledFromStrategy without map or filter: the element at the index its one
    draw chooses. Where the elements are strategies (one_of's branch sampler), do_draw
    also leaves a note on `data` for a test that then fails with a TypeError; it is
    recorded too, and left alike."""
    elements = unwrapped.elements
    if unwrapped._transformations or not elements:
        return None
    seen = leaf_call(unwrapped, 0, returns=elements[0])
    if seen is None:
        return None
    recorder, (name, args, kwargs) = seen
    index = methodcaller(name, *args, **kwargs)
    note = getattr(recorder, _NOTE, None)
    if note is None:
        return lambda data: elements[index(data)]

    def draw(data: Any) -> Any:
        value = elements[index(data)]
        setattr(data, _NOTE, note)
        return value

    return draw


_NOTE = "_sampled_from_all_strategies_elements_message"


@cache
def _handlers() -> dict[type, Callable[[Any], Callable[[Any], Any] | None]]:
    """Per strategy class, what makes a validated strategy's handler (None: its own
    do_draw)."""
    from hypothesis.strategies._internal.collections import ListStrategy
    from hypothesis.strategies._internal.misc import BooleansStrategy
    from hypothesis.strategies._internal.numbers import IntegersStrategy
    from hypothesis.strategies._internal.strategies import (
        OneOfStrategy,
        SampledFromStrategy,
    )

    return {OneOfStrategy: _one_of, ListStrategy: _fixed_list,
            IntegersStrategy: _integers, BooleansStrategy: _integers,
            SampledFromStrategy: _sampled}


# The names fast_draw takes from hypothesis's internals, imported once on first use
# (`_hyp()`); `missing_internals` checks the same table.
FAST_DRAW_INTERNALS = (
    ("hypothesis.internal.conjecture.data", "MAX_DEPTH"),
    ("hypothesis.internal.conjecture.choice", "ValueHole"),
    ("hypothesis.internal.conjecture.utils", "ONE_FROM_MANY_LABEL"),
    ("hypothesis.errors", "FlakyStrategyDefinition"),
    ("hypothesis.strategies._internal.strategies", "SampledFromStrategy"),
)


@cache
def _hyp() -> SimpleNamespace:
    import importlib

    return SimpleNamespace(**{name: getattr(importlib.import_module(module), name)
                              for module, name in FAST_DRAW_INTERNALS})


def missing_internals() -> list[str]:
    """What gpusem uses of hypothesis's internals and this hypothesis lacks."""
    import importlib

    from gpusem.fuzz.direct import DIRECT_INTERNALS
    from gpusem.fuzz.span_groups import SPAN_GROUP_INTERNALS

    wanted = [("hypothesis.internal.conjecture.providers", "_get_local_constants"),
              ("hypothesis.internal.conjecture.providers", "Constants"),
              ("hypothesis.control", "current_build_context"),
              ("hypothesis.database", "choices_to_bytes"),
              ("hypothesis.configuration", "set_hypothesis_home_dir"),
              ("hypothesis.configuration", "__hypothesis_home_directory"),
              ("hypothesis.internal.conjecture.data", "ConjectureData"),
              ("hypothesis.internal.entropy", "RANDOMS_TO_MANAGE"),
              ("hypothesis.internal.entropy", "NumpyRandomWrapper"),
              ("hypothesis.internal.entropy", "NP_RANDOM"),
              ("hypothesis.internal.entropy", "get_seeder_and_restorer"),
              ("hypothesis.strategies._internal.core", "CompositeStrategy"),
              *FAST_DRAW_INTERNALS, *DIRECT_INTERNALS, *SPAN_GROUP_INTERNALS,
              ("hypothesis.strategies._internal.lazy", "unwrap_strategies"),
              ("hypothesis.strategies._internal.deferred", "DeferredStrategy"),
              ("hypothesis.strategies._internal.collections", "ListStrategy"),
              ("hypothesis.strategies._internal.strategies", "OneOfStrategy"),
              ("hypothesis.strategies._internal.numbers", "IntegersStrategy"),
              ("hypothesis.strategies._internal.misc", "BooleansStrategy")]
    missing = []
    for module, attr in wanted:
        try:
            found = hasattr(importlib.import_module(module), attr)
        except ImportError:
            found = False
        if not found:
            missing.append(f"{module}.{attr}")
    from hypothesis.internal.conjecture.data import ConjectureData

    if "choices" not in dir(ConjectureData):
        missing.append("ConjectureData.choices")
    missing += _fast_draw_attributes()
    from hypothesis import seed

    probe = seed(1)(lambda: None)
    if getattr(probe, "_hypothesis_internal_use_seed", None) != 1:
        missing.append("the test attribute _hypothesis_internal_use_seed")
    return missing


def _fast_draw_attributes() -> list[str]:
    """The private attributes `fast_draw` reads, where this hypothesis lacks them."""
    from random import Random

    from hypothesis import strategies as st
    from hypothesis.internal.conjecture.data import ConjectureData
    from hypothesis.strategies._internal.lazy import unwrap_strategies

    missing = []
    data = ConjectureData(random=Random(0))
    if not hasattr(data, "_ConjectureData__span_record"):
        missing.append("ConjectureData.__span_record")
    one_of = unwrap_strategies(st.integers(0, 1) | st.booleans())
    data.draw(one_of)
    if type(one_of.__dict__.get("_OneOfStrategy__branch_sampler")) is not (
            _hyp().SampledFromStrategy):
        missing.append("OneOfStrategy.__branch_sampler")
    for leaf in (st.integers(0, 1), st.integers(-2**31, 2**31 - 1), st.booleans()):
        seen = leaf_call(unwrap_strategies(leaf), object())
        if seen is None or seen[1][0] != "_draw":
            missing.append(f"{leaf!r}: one data._draw call, through draw_integer or "
                           "draw_boolean and _pooled_constraints")
    return missing
