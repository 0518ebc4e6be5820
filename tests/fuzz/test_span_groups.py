"""fuzz/span_groups.py: the mutator's span groups in one pass are hypothesis's own
(issue 31.3). Each example's spans are computed both ways: hypothesis's visitor
(`_mutator_groups(spans).run()`) and `mutator_groups`, and compared as lists (the order
of the groups is what the mutator's `random.choice` reads)."""

from __future__ import annotations

from random import Random

from hypothesis import strategies as st
from hypothesis.control import BuildContext
from hypothesis.errors import StopTest, UnsatisfiedAssumption
from hypothesis.internal.conjecture import data as D
from hypothesis.internal.conjecture.data import ConjectureData

from gpusem.fuzz.span_groups import fast_mutator_groups, mutator_groups


def _spans(strategy, seed: int):
    data = ConjectureData(random=Random(seed))
    try:
        with BuildContext(data, wrapped_test=lambda: None):  # as a test's draw has one
            data.draw(strategy)
    except (StopTest, UnsatisfiedAssumption):  # an overrun, a failed filter: spans too
        pass
    data.freeze()
    return data.spans


# nested lists, a unique collection (whose elements' spans are left out of the groups,
# its own span kept) inside and around others, a filter that discards spans, and one
# of the Bundl target's own strategies
STRATEGIES = [
    st.lists(st.lists(st.integers(0, 3), max_size=4), max_size=5),
    st.lists(st.tuples(st.lists(st.integers(0, 9), unique=True, max_size=6),
                       st.lists(st.booleans(), max_size=3)), max_size=4),
    st.lists(st.lists(st.lists(st.integers(), unique=True), unique_by=len), max_size=4),
    st.lists(st.integers(0, 100).filter(lambda x: x % 3 == 0), max_size=8),
]


def _bundl_strategy():
    from gpusem.fuzz.bundl.target import BundlTarget

    target = BundlTarget(backend="cpu")
    try:
        return target.strategy("compile")
    finally:
        target.close()


def test_the_groups_are_hypothesis_groups() -> None:
    compared = nonempty = 0
    for strategy in [*STRATEGIES, _bundl_strategy()]:
        for seed in range(40):
            spans = _spans(strategy, seed)
            theirs = D._mutator_groups(spans).run()
            assert mutator_groups(spans) == theirs, (strategy, seed)
            compared += 1
            nonempty += bool(theirs)
    assert nonempty > compared // 2  # most examples have groups to compare


def test_a_unique_collection_hides_its_elements() -> None:
    """The rule that could be got wrong: the elements of a unique list are not grouped,
    the elements of a plain list are (so the comparison above can tell)."""
    # (unbounded integers: a unique list of a small range is drawn another way, as a
    # sample, with no unique-collection span)
    plain = st.lists(st.integers(), min_size=4, max_size=4)
    unique = st.lists(st.integers(), min_size=4, max_size=4, unique=True)
    a, b = _spans(plain, 0), _spans(unique, 0)
    assert any(len(g) >= 4 for g in mutator_groups(a))
    assert not any(len(g) >= 4 for g in mutator_groups(b))
    assert D.UNIQUE_COLLECTION_LABEL in b.labels
    assert mutator_groups(b) == D._mutator_groups(b).run()


def test_replaced_only_within() -> None:
    before = D.Spans.__dict__["mutator_groups"]
    with fast_mutator_groups() as replaced:
        assert replaced
        spans = _spans(STRATEGIES[1], 3)
        assert spans.mutator_groups == D._mutator_groups(spans).run()
        with fast_mutator_groups():  # nested (another round in another thread)
            pass
        assert D.Spans.__dict__["mutator_groups"] is not before
    assert D.Spans.__dict__["mutator_groups"] is before
