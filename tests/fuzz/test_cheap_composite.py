"""fuzz/reproducible.composite (issue 31.3): `st.composite` without the per-call set-up
(a LazyStrategy, its validation, the label recomputed from the function's source).
It must draw exactly what `st.composite` draws, value for value and choice for choice,
since hypothesis's mutator copies choices between spans of one label: a different
label or span would draw other examples from the third on."""

from __future__ import annotations

from gpusem.fuzz.hunt import generate_round
from gpusem.fuzz.reproducible import composite
from hypothesis import strategies as st


def _pair(draw, n: int) -> tuple:
    return draw(st.integers(0, n)), draw(st.booleans())


def _tree(draw, pair, depth: int) -> list:
    """A nested composite: spans inside spans, labels repeated (the mutator's food)."""
    out = [draw(pair(9))]
    if depth and draw(st.booleans()):
        out.append(draw(TREE[pair](pair, depth - 1)))
    return out


CHEAP_PAIR, HYP_PAIR = composite(_pair), st.composite(_pair)
TREE = {CHEAP_PAIR: composite(_tree), HYP_PAIR: st.composite(_tree)}


def test_the_same_label_as_st_composite() -> None:
    cheap, lazy = CHEAP_PAIR(3), HYP_PAIR(3)
    assert cheap.label == lazy.wrapped_strategy.label
    assert CHEAP_PAIR(5).label == cheap.label  # per function, not per argument


def test_no_lazy_wrapper_and_nothing_to_compute() -> None:
    s = CHEAP_PAIR(3)
    assert type(s).__name__ != "LazyStrategy"
    assert s.is_empty is False and s.has_reusable_values is False


def test_draws_what_st_composite_draws() -> None:
    for seed in (0, 7):
        cheap = generate_round(TREE[CHEAP_PAIR](CHEAP_PAIR, 3), seed, 60)
        hyp = generate_round(TREE[HYP_PAIR](HYP_PAIR, 3), seed, 60)
        assert [d.program for d in cheap] == [d.program for d in hyp]
        assert [d.choices for d in cheap] == [d.choices for d in hyp]
        assert len({repr(d.program) for d in cheap}) > 10  # the mutator had work
