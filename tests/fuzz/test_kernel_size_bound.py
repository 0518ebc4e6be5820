"""The kernel generator bounds a kernel's size by construction (issue 31.3, "cheaper
programs"): the output cells one thread's code writes, counting each time an enclosing
loop runs it (NVVM unrolls those loops: the code is there that many times over), never
exceed `max_cells`. Unbounded, a claim at 1 of thread[128] wrote 256 cells: ~30 KB of
CUDA that NVRTC spent ~0.3 s on, the heavy tail of the campaign's build
(results/scale/progsize/)."""

from __future__ import annotations

import functools

import pytest
from gpusem.calculus.bundl import ast as A
from gpusem.calculus.bundl.walk import child_stmts
from gpusem.fuzz.bundl.sample import draw
from gpusem.fuzz.bundl.strategies.kernels import MAX_CELLS, MIN_CELLS, kernels


def _trips(s: A.While) -> int:
    """A generated loop's trip count: `while x < n` from x = 0."""
    cond = s.cond
    assert isinstance(cond, A.BinOp) and isinstance(cond.right, A.IntLit), cond
    return cond.right.value


def cells_per_thread(s: A.Stmt, times: int = 1) -> int:
    """The most cells of an output view `o` one thread writes, times the trip counts
    of the loops around the writes (the statement that writes them: `o[j] = ...`)."""
    if isinstance(s, A.Partition) and s.target == "o":
        written = set()
        stack = [s.body]
        while stack:
            x = stack.pop()
            if isinstance(x, A.ArrAssign) and x.array == A.Var("o"):
                written.add(x.index)
            stack.extend(child_stmts(x))
        return len(written) * times
    if isinstance(s, A.While):
        times *= max(_trips(s), 1)
    return max((cells_per_thread(c, times) for c in child_stmts(s)), default=0)


@functools.cache
def drawn(max_cells: int) -> tuple:
    return tuple(draw(kernels(max_blocks=4, max_threads=128, max_cells=max_cells),
                      200, 3))


@pytest.mark.parametrize("max_cells", sorted({MAX_CELLS, MIN_CELLS}))
def test_no_kernel_writes_past_the_bound(max_cells):
    sizes = [cells_per_thread(p.main) for p in drawn(max_cells)]
    assert max(sizes) <= max_cells, sorted(sizes)[-10:]
    # the bound is reached, not merely respected by small draws
    assert max(sizes) == max_cells, sorted(sizes)[-10:]


def test_unbounded_kernels_go_past_it():
    """What the bound cuts: the same strategy with no effective bound draws kernels
    past it (else the test above could not fail)."""
    sizes = [cells_per_thread(p.main) for p in drawn(1 << 12)]
    assert max(sizes) > MIN_CELLS, sorted(sizes)[-10:]


def test_the_campaign_bound_is_a_setting(monkeypatch):
    from gpusem.calculus.errors import BadInput
    from gpusem.fuzz.bundl.target import MAX_CELLS_ENV, kernel_max_cells

    monkeypatch.delenv(MAX_CELLS_ENV, raising=False)
    assert kernel_max_cells() == MAX_CELLS
    monkeypatch.setenv(MAX_CELLS_ENV, "64")
    assert kernel_max_cells() == 64
    for bad in ("3", "eight", "-1"):
        monkeypatch.setenv(MAX_CELLS_ENV, bad)
        with pytest.raises(BadInput, match=MAX_CELLS_ENV):
            kernel_max_cells()
