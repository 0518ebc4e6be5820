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


# `fast_draw` (the draw a cheap composite hands its function): the draws of every
# kind the generators make, one_of's and fixed-size lists' inner draws included
WIDE = st.integers(-2**31, 2**31 - 1) | st.integers(-50, 50)  # weights on the first
LEAVES = st.one_of(st.builds(str, st.integers(-9, 9)), st.sampled_from(["t", "b"]))
STRATEGIES = st.sampled_from([st.just(1), st.just(2)])  # leaves a note on data


def _kinds(draw, depth: int) -> list:
    out = [draw(st.lists(WIDE, min_size=3, max_size=3)),  # fixed size: fast_draw's
           draw(st.lists(st.booleans(), max_size=4)),  # variable size: hypothesis's
           draw(LEAVES), draw(st.sampled_from([1, 2, 4])), draw(st.just(7)),
           draw(st.floats(-1.0, 1.0).map(abs)), draw(st.integers(0, 4), label=99),
           # leaves drawn by data._draw; a mapped sample, by its own do_draw
           draw(st.booleans()), draw(st.integers()), draw(st.integers(min_value=3)),
           draw(st.integers(5, 5)), draw(st.sampled_from("ab").map(str.upper)),
           draw(STRATEGIES)]
    if depth and draw(st.booleans()):
        out.append(draw(KINDS[_kinds](depth - 1)))
    return out


CHEAP_KINDS, HYP_KINDS = composite(_kinds), st.composite(_kinds)
KINDS = {_kinds: CHEAP_KINDS}


def _record(strategy, seed: int) -> tuple:
    """What drawing `strategy` leaves behind: the value, the choices, and the span
    record (trail of starts, stops and choices; labels; each span's recorded value)."""
    from random import Random

    from hypothesis.control import BuildContext
    from hypothesis.internal.conjecture.data import ConjectureData

    data = ConjectureData(random=Random(seed))
    with BuildContext(data, wrapped_test=_record):  # `builds` records its calls
        value = data.draw(strategy)
    data.freeze()
    spans = data.spans
    return (value, data.choices, list(spans.trail), list(spans.labels),
            [repr(spans[i].recorded_value) for i in range(len(spans))],
            repr(data._sampled_from_all_strategies_elements_message))


def test_fast_draws_leave_the_spans_data_draw_leaves() -> None:
    """Every span, label and recorded value alike (the mutator picks spans by label,
    the shrinker reads the recorded values), over seeds that reach the nesting."""
    for seed in range(40):
        KINDS[_kinds] = CHEAP_KINDS
        cheap = _record(CHEAP_KINDS(2), seed)
        KINDS[_kinds] = HYP_KINDS
        hyp = _record(HYP_KINDS(2), seed)
        assert cheap == hyp, seed
    assert len(cheap[2]) > 40  # spans were made and compared


def test_fast_draws_draw_the_round_hypothesis_draws() -> None:
    """A whole round (the mutator copying choices between spans of one label)."""
    rounds = []
    for strategy in (CHEAP_KINDS, HYP_KINDS):
        KINDS[_kinds] = strategy
        drawn = generate_round(strategy(2), 3, 60)
        rounds.append(([repr(d.program) for d in drawn], [d.choices for d in drawn]))
    assert rounds[0] == rounds[1]
    assert len(set(rounds[0][0])) > 10


def test_leaves_are_drawn_by_data_draw_itself_not_by_their_draw_methods(
        monkeypatch) -> None:
    """integers(), booleans() and sampled_from() below the top level make their choice
    with the `_draw` call recorded from their draw method (issue 31.3: neither
    the strategy's do_draw nor draw_integer's pooled-constraints look-up each draw)."""
    from random import Random

    from hypothesis.internal.conjecture.data import ConjectureData

    leaves = [st.integers(0, 9), st.integers(-2**31, 2**31 - 1), st.booleans(),
              st.sampled_from("xyz"), STRATEGIES]
    outer = composite(lambda draw: [draw(s) for s in leaves])()

    def drawn(seed: int) -> tuple:
        data = ConjectureData(random=Random(seed))
        return data.draw(outer), data.choices

    drawn(0)  # validates each leaf and makes its handler
    first = drawn(1)
    for name in ("draw_integer", "draw_boolean"):
        monkeypatch.setattr(ConjectureData, name,
                            _refused(name, getattr(ConjectureData, name)))
    assert drawn(1) == first
    assert len({drawn(seed)[1] for seed in range(8)}) > 1  # choices made, and varied


def _refused(name: str, method):
    """`method`, refusing a choice (an unobserved draw is the weighted sampler's own,
    inside `_draw`)."""
    def refuse(self, *args, observe: bool = True, **kwargs):
        if observe:
            raise AssertionError(f"a leaf drawn through {name}")
        return method(self, *args, observe=observe, **kwargs)
    return refuse


def test_a_cheap_composite_is_freed_without_the_garbage_collector() -> None:
    """The fast-draw mark on a composite names no bound method of its own: no
    reference cycle per composite (~40 a program) for the collector to find."""
    import gc
    import weakref

    enabled = gc.isenabled()
    gc.disable()
    try:
        s = CHEAP_PAIR(3)
        ref = weakref.ref(s)
        del s
        assert ref() is None
    finally:
        if enabled:
            gc.enable()
