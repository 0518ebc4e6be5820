"""Cheap draws for the generators (issue 31.3): strategies made once, not per draw.

Hypothesis validates every strategy object the first time it is drawn from
(`validate`, `is_empty`, `recursive_property`), and `st.sampled_from(xs)` and
`st.one_of(...)` are not cached by hypothesis, so a generator that writes
`draw(st.sampled_from(forms))` at every choice point pays that validation ~100 times a
program (10-15% of generation). Here the strategies are made once per argument.

The strategies are the same ones (equal elements, so equal labels), so a seed draws
the same programs (tests/fuzz/test_draw_stability.py). Not an index drawn from
`integers(0, n - 1)` instead of `sampled_from`: hypothesis asks for the same integer,
but the span's label differs, and hypothesis's mutator (which copies choices between
spans of one label) then draws other programs from the third example on.

`composite` is `st.composite` without the set-up hypothesis repeats for every call of
a composite (a new strategy object each time, since the generators pass their
environment dict): the same label and `do_draw`, so again the same programs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, is_dataclass
from functools import cache, lru_cache
from typing import Any, TypeVar

from gpusem.fuzz.reproducible import composite
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

T = TypeVar("T")

BOOLS = st.booleans()

__all__ = ["BOOLS", "composite", "ints", "node_fields", "pick"]


@cache
def ints(lo: int, hi: int) -> SearchStrategy[int]:
    """`st.integers(lo, hi)`, one object per bounds (validated once)."""
    return st.integers(lo, hi)


@lru_cache(maxsize=8192)
def _sampled(options: tuple[Any, ...], types: tuple[type, ...]) -> SearchStrategy[Any]:
    # `types` in the key: 1, 1.0 and True are equal (and hash alike) but draw apart
    return st.sampled_from(options)


def pick(draw: Any, options: Sequence[T]) -> T:
    """`draw(st.sampled_from(options))`, the strategy made once per options."""
    key = tuple(options)
    try:
        strategy = _sampled(key, tuple(map(type, key)))
    except TypeError:  # unhashable options (lists): a strategy of their own
        strategy = st.sampled_from(key)
    return draw(strategy)


_FIELDS: dict[type, tuple[str, ...] | None] = {}


def node_fields(node: object) -> tuple[str, ...] | None:
    """A node's fields but its span (None: not a dataclass), looked up once per class
    (the generators' walks over a program they built ask for every node)."""
    try:
        return _FIELDS[type(node)]
    except KeyError:
        pass
    names = _FIELDS[type(node)] = tuple(
        f.name for f in fields(node) if f.name != "span") if is_dataclass(node) \
        else None
    return names
