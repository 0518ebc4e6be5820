"""The perspective algebra of Appendix A.1 (Prism paper, seed 004).

Conventions (paper -> Python):
  h ::= Grid | Block | Thread   -> `Level` (ordered Thread < Block < Grid)
  π = (h, n)                    -> `Perspective(level, n)`: n units of level h share it
  B, T                          -> `MachineShape.blocks`, `.threads`
  i × (h, n) = (h, i·n)         -> `scale(i, π)`
  (h1, n1) / (h2, n2)           -> `divide(π1, π2, shape)`  (a natural number)
  ↓(Block, 1) = (Thread, T)     -> `destruct(π, shape)`
  size(π)                       -> `size(π, shape)`
  n1, n2 align to n             -> `align_to(n1, n2, n)`

The owner of the typing rules decides the readings marked `Note:` below and records them
in proofs_notes/errata.md.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Level(enum.IntEnum):
    THREAD = 0
    BLOCK = 1
    GRID = 2

    @property
    def keyword(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class MachineShape:
    """The constants the algebra is parameterised over: B blocks, T threads per block."""

    blocks: int
    threads: int


@dataclass(frozen=True, slots=True, order=False)
class Perspective:
    level: Level
    n: int

    def __str__(self) -> str:
        return f"{self.level.keyword}[{self.n}]"


GRID1 = Perspective(Level.GRID, 1)
BLOCK1 = Perspective(Level.BLOCK, 1)
THREAD1 = Perspective(Level.THREAD, 1)


def leq(a: Perspective, b: Perspective) -> bool:
    """(h1, n1) <= (h2, n2) iff n1 | n2 and h1 <= h2 (Appendix A.1).

    Note: Section 3.2 and A.1 disagree on this order; see errata.md ("order on
    perspectives"). This is A.1's definition, used by `--rules paper`.
    """
    return b.n % a.n == 0 and a.level <= b.level


def lt(a: Perspective, b: Perspective) -> bool:
    return leq(a, b) and a != b


def scale(i: int, p: Perspective) -> Perspective:
    """i × (h, n) = (h, i·n)."""
    return Perspective(p.level, i * p.n)


def level_ratio(upper: Level, lower: Level, shape: MachineShape) -> int:
    """h1/h2: Grid/Block = B, Block/Thread = T, extended multiplicatively (h/h = 1)."""
    if upper < lower:
        raise ValueError(f"level division {upper.keyword}/{lower.keyword} is undefined")
    ratio = 1
    for level in range(lower + 1, upper + 1):
        ratio *= shape.blocks if level == Level.GRID else shape.threads
    return ratio


def divide(a: Perspective, b: Perspective, shape: MachineShape) -> int:
    """(h1, n1) / (h2, n2) = ((h1/h2) · n1) / n2, a natural number (A.1)."""
    return level_ratio(a.level, b.level, shape) * a.n // b.n


def destruct(p: Perspective, shape: MachineShape) -> Perspective:
    """↓(Block, 1) = (Thread, T) and ↓(Grid, 1) = (Block, B); undefined otherwise."""
    if p.n != 1 or p.level == Level.THREAD:
        raise ValueError(f"destruct of {p} is undefined")
    if p.level == Level.GRID:
        return Perspective(Level.BLOCK, shape.blocks)
    return Perspective(Level.THREAD, shape.threads)


def size(p: Perspective, shape: MachineShape) -> int:
    """The number of threads sharing π (A.3.3): size(Block, n) = n·T, etc."""
    return p.n * level_ratio(p.level, Level.THREAD, shape)


def align_to(n1: int, n2: int, n: int) -> bool:
    """`n1, n2 align to n`.

    Note: the paper's definition is garbled ("(n1 + n2 <= n) and (n1 n) and (n2 n) and
    (n2 n1 + n)": the relation symbols are lost). The reading used here is
    n1 + n2 <= n, n1 | n, n2 | n, and n2 | n1 (the second part starts at a multiple of
    its own size). See errata.md ("align to").
    """
    return (
        n1 > 0 and n2 > 0 and n1 + n2 <= n
        and n % n1 == 0 and n % n2 == 0 and n1 % n2 == 0
    )
