"""The span groups hypothesis's mutator picks from, computed in one pass (issue 31.3).

In the engine generation mode (`hunt.generate_round`) about four programs in five of
a round are mutants: `ConjectureRunner.generate_mutations_from` copies one span of an
earlier example over another span of the same label, and picks the pair from
`data.spans.mutator_groups` (hypothesis/internal/conjecture/data.py), the spans'
(start, end) choice indices grouped by label. Hypothesis computes those groups by
replaying the example's trail through two visitors (`_starts_and_ends`, then
`_mutator_groups`), each a method call per span and per choice, and making a `Span`
object per span to read its start and end: 19% of the CPU samples of a Bundl program's
generation (scripts/profile_generation.py, "mutator span groups"); in one pass, generate
costs 0.761 of the instructions it did (results/scale/instructions_gencost3_dev.json).

`mutator_groups(spans)` is the same list from one loop over the trail: the same groups
(a set of (start, end) per label, a span inside a unique collection left out, as
hypothesis leaves it out), in the same order (the order each label's first span
starts), hence the same `random.choice` of a group, the same pair and the same programs
(tests/fuzz/test_span_groups.py compares it with hypothesis's own visitor on drawn
examples; tests/fuzz/test_draw_stability.py the programs). `fast_mutator_groups()`
puts it in place of hypothesis's while a round is generated and restores hypothesis's
after; where this hypothesis lacks the internals it reads (`SPAN_GROUP_INTERNALS`,
which `reproducible.missing_internals` checks), nothing is replaced.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import Any

SPAN_GROUP_INTERNALS = (
    ("hypothesis.internal.conjecture.data", "Spans"),
    ("hypothesis.internal.conjecture.data", "TrailType"),
    ("hypothesis.internal.conjecture.data", "UNIQUE_COLLECTION_LABEL"),
    ("hypothesis.internal.conjecture.data", "_mutator_groups"),
)

_LOCK = threading.Lock()
_DEPTH = [0]  # rounds generating now (threads): hypothesis's property back at zero
_SAVED: list[Any] = []


def mutator_groups(spans: Any) -> list[set[tuple[int, int]]]:
    """`spans.mutator_groups` as hypothesis's `_mutator_groups(spans).run()` computes
    it: for each span label (in the order its first span starts) the set of its spans'
    (start, end) choice indices, skipping spans nested inside a unique collection (not
    the collection's own span); groups of fewer than two spans dropped."""
    from hypothesis.internal.conjecture.data import UNIQUE_COLLECTION_LABEL, TrailType

    choice = int(TrailType.CHOICE)
    discard, keep = int(TrailType.STOP_SPAN_DISCARD), int(TrailType.STOP_SPAN_NO_DISCARD)
    assert choice > max(discard, keep)  # a span start is any record above CHOICE
    labels = spans.labels
    unique = next((k for k, label in enumerate(labels)
                   if label == UNIQUE_COLLECTION_LABEL), -1)
    n = len(spans)
    starts, ends, label_of = [0] * n, [0] * n, [0] * n
    counted = [True] * n  # not inside a unique collection when it starts
    stack: list[int] = []
    unique_stack: list[int] = []  # the open spans of unique collections
    count = choices = 0
    for record in spans.trail:
        if record > choice:  # a span starts: its label index is record - CHOICE - 1
            i, count = count, count + 1
            label = record - choice - 1
            starts[i], label_of[i], counted[i] = choices, label, not unique_stack
            stack.append(i)
            if label == unique:
                unique_stack.append(i)
        elif record == choice:
            choices += 1
        else:  # a span stops (discarded or not: the groups do not tell them apart)
            i = stack.pop()
            ends[i] = choices
            if unique_stack and unique_stack[-1] == i:
                unique_stack.pop()
    groups: dict[int, set[tuple[int, int]]] = {}
    for i in range(n):
        if counted[i]:
            group = groups.get(label_of[i])
            if group is None:
                group = groups[label_of[i]] = set()
            group.add((starts[i], ends[i]))
    return [g for g in groups.values() if len(g) >= 2]


def _ours(spans_class: type) -> cached_property:
    prop = cached_property(mutator_groups)
    prop.__set_name__(spans_class, "mutator_groups")  # cached as hypothesis's own is
    return prop


@contextmanager
def fast_mutator_groups() -> Iterator[bool]:
    """Within: `Spans.mutator_groups` is `mutator_groups`. Yields whether it was
    replaced (False where this hypothesis lacks what it reads)."""
    try:
        from hypothesis.internal.conjecture import data as D
    except ImportError:  # pragma: no cover - missing_internals names it
        yield False
        return
    spans_class = getattr(D, "Spans", None)
    if spans_class is None or not all(hasattr(D, name) for _, name in
                                      SPAN_GROUP_INTERNALS) or not isinstance(
            spans_class.__dict__.get("mutator_groups"), cached_property):
        yield False
        return
    with _LOCK:
        if _DEPTH[0] == 0:
            _SAVED[:] = [spans_class.__dict__["mutator_groups"]]
            spans_class.mutator_groups = _ours(spans_class)
        _DEPTH[0] += 1
    try:
        yield True
    finally:
        with _LOCK:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0:
                spans_class.mutator_groups = _SAVED.pop()
