"""Tensors, their views and the two partitioning operators of seed 001 (l.194-198).

A view is an index array into the flat storage of the tensor it was cut from, so every
sub-tensor has "a new compacted, origin-based coordinate system" (l.194) however
scattered its elements are (Fig. 4): reading it is `base[idx]`, writing `base[idx] = v`.

`partition_by_mma` decides what the paper leaves to Fig. 4 (an image) and to PTX:
- operand "C" at PROC=WARP: warp w holds the rows 16w..16w+15 of every 64-row group
  (Fig. 4's colouring, l.198; a tile taller than 64 rows repeats the pattern every 64
  rows), all columns; at PROC=THREAD (on a warp's piece, rows a multiple of 16): lane
  t holds rows t//4 and t//4+8 of every 16-row group and columns 8c+2(t%4), 8c+2(t%4)+1
  of every 8-column group (the swizzle of Fig. 4, repeated across the columns, l.198);
- operand "A": the rows of the C piece, every column (K): the piece of A a C piece
  needs; operand "B": the columns of the C piece, every row (at PROC=WARP all of B).
So C_i += A_i @ B_i holds piece by piece, and the GEMM tree of Fig. 5 computes
C += A @ B. The A and B pieces overlap (they are read-only operands of a Tensor Core
op, held whole in shared memory on the machine). proofs_notes/errata.md, "Cypress
partition_by_mma".
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpusem.calculus.cypress.machine import Processor
from gpusem.calculus.errors import Trap
from gpusem.calculus.span import Span

IntArray = np.ndarray


@dataclass(frozen=True, eq=False)
class View:
    """A (sub-)tensor: `idx` (its shape is the view's) indexes `base`, the flat
    storage of a root tensor named `root`."""

    base: np.ndarray
    idx: IntArray
    root: str

    @property
    def shape(self) -> tuple[int, ...]:
        return self.idx.shape  # already a tuple of Python ints (read per launch)

    def read(self) -> np.ndarray:
        return np.asarray(self.base[self.idx])

    def write(self, values: np.ndarray) -> None:
        self.base[self.idx] = values


def root_view(name: str, data: np.ndarray) -> View:
    """A root tensor: its own storage (a copy of `data`)."""
    flat = np.array(data, copy=True).reshape(-1)
    return View(flat, np.arange(flat.size, dtype=np.int64).reshape(data.shape), name)


@dataclass(frozen=True, eq=False)
class Partition:
    """A partition of `source` over the index space `grid` (l.194)."""

    source: View
    grid: tuple[int, ...]
    piece_of: Callable[[tuple[int, ...]], View]
    kind: str

    def piece(self, index: tuple[int, ...], span: Span) -> View:
        if len(index) != len(self.grid):
            raise Trap(f"bad piece: {len(index)} indices for a {len(self.grid)}-d "
                       f"partition", rule="Seq-Piece", span=span)
        for i, n in zip(index, self.grid):
            if not 0 <= i < n:
                raise Trap(f"out of bounds: piece {index} of a partition over "
                           f"{self.grid}", rule="Seq-Piece", span=span)
        return self.piece_of(index)


def partition_by_blocks(v: View, blocks: tuple[int | None, ...],
                        span: Span) -> Partition:
    """Tiles of the given sizes (l.196); the last tile of a dimension may be short.
    A size `None` (our extension) cuts extent-1 slices and drops the dimension."""
    if len(blocks) != len(v.shape):
        raise Trap(f"bad partition: {len(blocks)} block sizes for a rank-"
                   f"{len(v.shape)} tensor", rule="Seq-Blocks", span=span)
    if any(b is not None and b <= 0 for b in blocks):
        raise Trap(f"bad partition: block sizes {blocks} must be positive",
                   rule="Seq-Blocks", span=span)
    grid = tuple(n if b is None else -(-n // b) for n, b in zip(v.shape, blocks))

    def piece(index: tuple[int, ...]) -> View:
        key = tuple(i if b is None else slice(i * b, (i + 1) * b)
                    for i, b in zip(index, blocks))
        return View(v.base, v.idx[key], v.root)

    return Partition(v, grid, piece, "blocks")


def _c_rows(rows: int, proc: Processor, unit: int) -> list[int]:
    if proc is Processor.WARP:  # 16 rows per warp in every 64-row group
        return [64 * r + 16 * unit + i for r in range(rows // 64) for i in range(16)]
    lane = unit // 4  # THREAD: rows lane and lane+8 of every 16-row group
    return [16 * r + lane + h for r in range(rows // 16) for h in (0, 8)]


def _c_cols(cols: int, proc: Processor, unit: int) -> list[int]:
    if proc is Processor.WARP:
        return list(range(cols))
    return [8 * c + 2 * (unit % 4) + e for c in range(cols // 8) for e in (0, 1)]


@functools.lru_cache(maxsize=4096)
def _mma_ix(shape: tuple[int, ...], proc: Processor, operand: str,
            u: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit u's rows and columns (np.ix_) of an operand of this shape: the same for
    every tile of a GEMM, so built once (a 256 GEMM's reading asks ~57,000 times)."""
    rows = (np.array(_c_rows(shape[0], proc, u)) if operand != "B"
            else np.arange(shape[0]))
    cols = (np.array(_c_cols(shape[1], proc, u)) if operand != "A"
            else np.arange(shape[1]))
    r, c = np.ix_(rows, cols)
    r.flags.writeable = c.flags.writeable = False  # shared between calls
    return r, c


def partition_by_mma(v: View, instr_m: int, proc: Processor, operand: str,
                     span: Span) -> Partition:
    """The Tensor Core partition of Fig. 4 (l.198) for operand A, B or C."""
    if len(v.shape) != 2:
        raise Trap(f"bad partition: partition_by_mma takes a matrix, not shape "
                   f"{v.shape}", rule="Seq-Mma", span=span)
    if proc not in (Processor.WARP, Processor.THREAD):
        raise Trap(f"bad partition: partition_by_mma over {proc.name} (WARP: the 4 "
                   "warps of a warpgroup, THREAD: the 32 lanes of a warp)",
                   rule="Seq-Mma", span=span)
    group = 64 if proc is Processor.WARP else 16
    if instr_m != 64:
        raise Trap(f"bad partition: WGMMA instructions have M = 64, not {instr_m}",
                   rule="Seq-Mma", span=span)
    c_rows = v.shape[0] if operand in ("A", "C") else None
    c_cols = v.shape[1] if operand in ("B", "C") else None
    if c_rows is not None and c_rows % group:
        raise Trap(f"bad partition: operand {operand} over {proc.name} needs rows a "
                   f"multiple of {group}, has {c_rows}", rule="Seq-Mma", span=span)
    if c_cols is not None and c_cols % 8:
        raise Trap(f"bad partition: operand {operand} needs columns a multiple of 8, "
                   f"has {c_cols}", rule="Seq-Mma", span=span)
    units = 4 if proc is Processor.WARP else 32

    def piece(index: tuple[int, ...]) -> View:
        (u,) = index
        return View(v.base, v.idx[_mma_ix(v.shape, proc, operand, u)], v.root)

    return Partition(v, (units,), piece, f"mma-{operand}")


def points(grid: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The iteration space of a range, in sequential (lexicographic) order."""
    return list(itertools.product(*(range(n) for n in grid)))
