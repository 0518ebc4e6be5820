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

The readings marked `Note:` below (the order, "align to") are recorded in
proofs_notes/errata.md; `leq`/`lt` take `rules="fixed" | "paper"` and an optional
machine shape (the alignment-aware order).
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


RULES = ("fixed", "paper")


def leq(
    a: Perspective, b: Perspective, rules: str = "fixed",
    shape: MachineShape | None = None,
) -> bool:
    """a <= b: `a` is at most as broad as `b` (`b` is broader, `a` narrower).

    fixed (what the type checker and the interpreter use): Section 3.2, and A.1's
      words "lexicographically ordered": h1 < h2, or h1 = h2 and n1 | n2.
    fixed with `shape`: the alignment-aware variant h1 <= h2 and size(π1) | size(π2)
      (one aligned unit of `a` inside one unit of `b`). It agrees with the level-first
      order on every perspective that fits its level (thread[n] with n | T, block[n]
      with n | B), so on every code perspective reachable from grid[1].
    paper: A.1's formula as printed: n1 | n2 and h1 <= h2.

    Note: A.1's formula rejects thread[32] <= block[1] (32 does not divide 1), so warp
    code could not read a block-uniform variable, and block[B] < grid[1] fails for
    B > 1, so T-Partition-Id could never give a block its id. Section 3.2 alone calls
    thread[64] narrower than block[1] even when T = 32 (a unit spanning two blocks).
    See errata.md ("order on perspectives"); pinned by tests/bundl/test_perspective.py.
    """
    _check_rules(rules)
    if rules == "paper":
        return b.n % a.n == 0 and a.level <= b.level
    if shape is not None:
        return a.level <= b.level and size(b, shape) % size(a, shape) == 0
    return a.level < b.level or (a.level == b.level and b.n % a.n == 0)


def lt(
    a: Perspective, b: Perspective, rules: str = "fixed",
    shape: MachineShape | None = None,
) -> bool:
    """a < b: a <= b and a != b (strictly narrower)."""
    return leq(a, b, rules, shape) and a != b


def _check_rules(rules: str) -> None:
    if rules not in RULES:
        raise ValueError(f"unknown rules mode: {rules!r} (expected one of {RULES})")


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
    """(h1, n1) / (h2, n2) = ((h1/h2) · n1) / n2, a natural number (A.1).

    Undefined (ValueError) when h1 < h2. Where n2 does not divide (h1/h2)·n1 the
    paper gives no value; this floors (the typing rules only divide exactly).
    """
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
    """`n1, n2 align to n` (T-Split, S-Split-*): both arms fit in n and stay aligned.

    Note: the paper prints "(n1 + n2 <= n) and (n1 n) and (n2 n) and (n2 n1 + n)": the
    divides symbols are lost (as elsewhere in the extraction). Restoring `|` gives
    n1 + n2 <= n, n1 | n, n2 | n and n2 | n1 + n; given n2 | n the last is n2 | n1.
    This is exactly alignment: a group of size n starts at a multiple k·n, so the left
    arm [k·n, k·n + n1) is aligned to n1 for every k iff n1 | n, and the right arm,
    starting at k·n + n1, is aligned to n2 for every k iff n2 | n and n2 | n1 (Sec 3.2:
    "a perspective of size n is aligned to n"; Figure 10 fails the last condition).
    Zero-sized arms are rejected (0 divides nothing but 0). Both rules modes use this
    reading. See errata.md ("align to").
    """
    return (
        n1 > 0 and n2 > 0 and n1 + n2 <= n
        and n % n1 == 0 and n % n2 == 0 and n1 % n2 == 0
    )
