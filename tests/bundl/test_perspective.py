"""The perspective algebra of Appendix A.1, checked against the paper's own examples
(Sections 3.1-3.3, Figures 7-10, A.1, A.3.3) and the algebraic laws it states."""

from __future__ import annotations

import pytest
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    THREAD1,
    Level,
    MachineShape,
    Perspective,
    align_to,
    destruct,
    divide,
    leq,
    level_ratio,
    lt,
    scale,
    size,
)
from hypothesis import given, settings
from hypothesis import strategies as st


def th(n):
    return Perspective(Level.THREAD, n)


def bl(n):
    return Perspective(Level.BLOCK, n)


def gr(n):
    return Perspective(Level.GRID, n)


SHAPE = MachineShape(blocks=4, threads=128)
MODES = ("fixed", "paper")

# ------------------------------------------------------------------------ order


def test_levels_are_ordered_thread_block_grid():
    # Sec 3.1: "Levels are ordered, with thread < block < grid".
    assert Level.THREAD < Level.BLOCK < Level.GRID


@pytest.mark.parametrize("rules", MODES)
def test_order_same_level_is_divisibility(rules):
    # Sec 3.2 (2) and A.1 agree within a level: narrower iff n1 | n2.
    assert leq(th(2), th(4), rules) and lt(th(2), th(4), rules)
    assert not leq(th(3), th(4), rules)
    assert leq(th(4), th(4), rules) and not lt(th(4), th(4), rules)
    # Figure 7, example 2: block[5] is not narrower than block[6] (6 % 5 != 0).
    assert not leq(bl(5), bl(6), rules)


@pytest.mark.parametrize("rules", MODES)
def test_order_figure7_cannot_broaden(rules):
    # Figure 7, example 1: from thread[2], block[1] is broader, so no group reaches it.
    assert not leq(BLOCK1, th(2), rules)
    assert lt(THREAD1, BLOCK1, rules) and lt(BLOCK1, GRID1, rules)


def test_order_fixed_is_lexicographic_section_3_2():
    # Sec 3.2 (1): a lower level is narrower whatever the counts.
    assert lt(th(32), BLOCK1)  # a warp reads a block-uniform variable (read up)
    assert lt(bl(4), GRID1)  # T-Partition-Id premise at block[B] with B = 4
    assert not leq(BLOCK1, th(256))


def test_order_fixed_with_shape_is_alignment_aware():
    small = MachineShape(blocks=4, threads=32)
    assert lt(th(32), BLOCK1, shape=small)  # a warp is inside a block of 32
    assert not leq(th(64), BLOCK1, shape=small)  # 64 threads span two blocks
    assert leq(th(64), BLOCK1)  # Section 3.2 without a shape ignores that
    assert not leq(th(3), BLOCK1, shape=small)  # 3 does not divide 32
    assert lt(bl(2), GRID1, shape=small) and not leq(bl(3), GRID1, shape=small)
    assert leq(th(32), th(64), shape=small) and not leq(th(32), th(48), shape=small)


fitting = st.builds(Perspective, st.sampled_from(list(Level)), st.sampled_from([1, 2, 4]))


@settings(max_examples=150, deadline=None)
@given(a=fitting, b=fitting)
def test_order_sized_agrees_with_section_3_2_on_fitting_perspectives(a, b):
    # With every count dividing its level's ratio (n | T = 128, n | B = 4) the
    # shape-free fallback and the sized order coincide.
    assert leq(a, b, shape=SHAPE) == leq(a, b)


def test_order_paper_is_a1_formula_as_printed():
    # A.1: (h1, n1) <= (h2, n2) iff n1 | n2 and h1 <= h2.
    assert not leq(th(32), BLOCK1, "paper")
    assert not lt(bl(4), GRID1, "paper")
    assert leq(th(2), bl(4), "paper")
    assert not leq(th(3), bl(4), "paper")


def test_order_unknown_mode():
    with pytest.raises(ValueError, match="unknown rules mode"):
        leq(THREAD1, BLOCK1, "loose")


persps = st.builds(
    Perspective, st.sampled_from(list(Level)), st.sampled_from([1, 2, 3, 4, 6, 8, 12])
)


@settings(max_examples=150, deadline=None)
@given(a=persps, b=persps, c=persps, rules=st.sampled_from(MODES),
       shape=st.sampled_from([None, SHAPE]))
def test_order_is_a_partial_order(a, b, c, rules, shape):
    assert leq(a, a, rules, shape)
    if leq(a, b, rules, shape) and leq(b, a, rules, shape):
        # the sized order identifies isomorphic perspectives only across levels
        assert a == b or (shape is not None and size(a, shape) == size(b, shape))
    if leq(a, b, rules, shape) and leq(b, c, rules, shape):
        assert leq(a, c, rules, shape)


@settings(max_examples=150, deadline=None)
@given(a=persps, b=persps)
def test_order_paper_is_finer_than_fixed(a, b):
    # Every pair A.1's formula relates, Section 3.2 relates too.
    if leq(a, b, "paper"):
        assert leq(a, b, "fixed")


# -------------------------------------------------------- scale, divide, size


def test_scale():
    assert scale(3, th(2)) == th(6)
    assert scale(1, GRID1) == GRID1


def test_level_division():
    # A.1: Grid/Block = B, Block/Thread = T, lifted multiplicatively.
    assert level_ratio(Level.GRID, Level.BLOCK, SHAPE) == 4
    assert level_ratio(Level.BLOCK, Level.THREAD, SHAPE) == 128
    assert level_ratio(Level.GRID, Level.THREAD, SHAPE) == 4 * 128
    assert level_ratio(Level.BLOCK, Level.BLOCK, SHAPE) == 1
    with pytest.raises(ValueError):
        level_ratio(Level.THREAD, Level.BLOCK, SHAPE)


def test_divide_perspectives():
    # (h1, n1) / (h2, n2) = ((h1/h2)·n1)/n2
    assert divide(BLOCK1, THREAD1, SHAPE) == 128
    assert divide(GRID1, bl(2), SHAPE) == 2
    assert divide(th(8), th(2), SHAPE) == 4  # (h, n)/c = (h, n)/(h, c)
    assert divide(bl(2), th(32), SHAPE) == 8


def test_divide_undefined_upwards():
    with pytest.raises(ValueError):
        divide(THREAD1, BLOCK1, SHAPE)


def test_size_a33():
    assert size(th(5), SHAPE) == 5
    assert size(bl(2), SHAPE) == 2 * 128
    assert size(gr(1), SHAPE) == 4 * 128


@settings(max_examples=100, deadline=None)
@given(a=persps, b=persps)
def test_size_respects_same_level_order(a, b):
    if a.level == b.level and leq(a, b):
        assert size(b, SHAPE) % size(a, SHAPE) == 0


# ------------------------------------------------------------------ destruct


def test_destruct_isomorphisms():
    # (Block, 1) ≅ (Thread, T) and (Grid, 1) ≅ (Block, B)
    assert destruct(BLOCK1, SHAPE) == th(128)
    assert destruct(GRID1, SHAPE) == bl(4)
    for p in (BLOCK1, GRID1):
        assert size(destruct(p, SHAPE), SHAPE) == size(p, SHAPE)


@pytest.mark.parametrize("p", [THREAD1, th(4), bl(2), gr(2)])
def test_destruct_is_partial(p):
    with pytest.raises(ValueError, match="undefined"):
        destruct(p, SHAPE)


def test_grid_to_thread_chain_section_3_3():
    # grid[1] -destruct-> block[B] -group B-> block[1] -destruct-> thread[T]
    # -group T-> thread[1]; T-Group: the outer perspective is q × the inner one.
    p = destruct(GRID1, SHAPE)
    assert p == scale(4, BLOCK1)
    assert destruct(BLOCK1, SHAPE) == scale(128, THREAD1)


# ------------------------------------------------------------------ align to


def test_align_figure8_split_2_1_1():
    # thread[4] -> 2, 1, 1 as split(2, 2){..}{split(1, 1){..}{..}}, or 2 + 1 leaving 1.
    assert align_to(2, 2, 4) and align_to(1, 1, 2)
    assert align_to(2, 1, 4)


def test_align_figure9_exceeds():
    assert not align_to(4, 1, 4)


def test_align_figure10_misaligned():
    # thread[3] -> 1, 2: the second arm starts at 1, not a multiple of 2.
    assert not align_to(1, 2, 3)


def test_align_masking_and_warp_specialisation():
    assert align_to(32, 32, 128)  # first two warps; the rest masked off (S-Split-None)
    assert align_to(64, 32, 128)
    assert not align_to(96, 32, 128)  # 96 does not divide 128
    assert not align_to(32, 64, 128)  # the second arm would start at 32
    assert not align_to(0, 4, 4) and not align_to(4, 0, 4)


@settings(max_examples=300, deadline=None)
@given(n1=st.integers(0, 16), n2=st.integers(0, 16), n=st.integers(1, 32))
def test_align_iff_both_arms_aligned_for_every_start(n1, n2, n):
    # The reading as alignment (errata "align to"): the group of n starts at some k·n;
    # the left arm [k·n, k·n + n1) must start at a multiple of n1 and the right arm at
    # a multiple of n2, for every k (k = 0, 1 already decide it: the conditions are
    # linear in k).
    brute = (
        n1 > 0 and n2 > 0 and n1 + n2 <= n
        and all((k * n) % n1 == 0 and (k * n + n1) % n2 == 0 for k in range(4))
    )
    assert align_to(n1, n2, n) == brute
