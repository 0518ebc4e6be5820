"""Bundl values and memories: Appendix A.3.1 of the Prism paper (seed 004).

Values v ::= n (int) | f (float) | b (bool) | ⟨l, n⟩ (an array: location and length).
Memories η (thread-local), σ (one per block), Σ (global) map locations to values, each
cell carrying the perspective it lives at (`n ↦^π v`).

Conventions (paper -> Python):
  n : int          -> Python `int` kept in [-2**31, 2**31) by `wrap32`
  f : float        -> `numpy.float32` (every operation rounds to binary32)
  b : bool         -> Python `bool`
  ⟨l, n⟩           -> `Ptr(region, off, length)`: `region` names one allocation, `off`
                      the first cell, `length` the number of cells from `off` on
  η, σ, Σ          -> `Region.space` (Local / Shared / Global) and `Region.owner`
                      (thread id for η, block id for σ, None for Σ); all regions live
                      in one table (`Memory.regions`) indexed by the `region` number
  x ↦^π v          -> `Binding(value, persp, type)` in a thread's environment
  get / update / rename -> `Memory.get`, `Memory.update`, `rename` (below)

Note: the paper lets η, σ and Σ hold both the *names* (x ↦^π ⟨x, n⟩) and the cells.
Here names live in a per-thread environment and cells in regions whose `space` says
which of η, σ, Σ they belong to. A name bound in σ or Σ by `rename` would be visible to
every thread of the block / grid, so two sibling split branches renaming into the same
name would race on the binding itself; see errata.md ("names are thread-local").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, cast

import numpy as np
from gpusem.calculus.bundl.ast import ArrayType, BaseType, MemKind, Type
from gpusem.calculus.bundl.perspective import Perspective
from gpusem.calculus.errors import GpusemError

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
F32 = np.float32


def wrap32(v: int) -> int:
    """Two's-complement wrap to 32 bits (the spec's `int`)."""
    if INT_MIN <= v <= INT_MAX:
        return v
    return ((v + 2**31) & 0xFFFFFFFF) - 2**31


def c_div(a: int, b: int) -> int:
    """C `/` on int32: truncates toward zero; INT_MIN / -1 wraps to INT_MIN.

    The caller has ruled out b == 0 (a trap, see `ops`)."""
    q = abs(a) // abs(b)
    return wrap32(q if (a < 0) == (b < 0) else -q)


def c_rem(a: int, b: int) -> int:
    """C `%` on int32: the sign follows the dividend; INT_MIN % -1 == 0."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


@dataclass(frozen=True, slots=True)
class Ptr:
    """⟨l, n⟩: cells `off .. off+length-1` of region `region`.

    `extent` is the size of the view the program asked for (the whole array, or one
    piece of a partition); `length` is what bounds checks allow (to the array's end).
    """

    region: int
    off: int
    length: int
    extent: int

    def offset(self, i: int) -> Ptr:
        """Pointer + int, the runtime form of S-Partition's `y + c·p`: ⟨l+i, n-i⟩.

        Note: the bounds keep the array's end (lead's decision; errata.md,
        "S-Partition substitution and bounds")."""
        return Ptr(self.region, self.off + i, self.length - i, max(self.extent - i, 0))

    def piece(self, k: int, chunk: int) -> Ptr:
        """Piece k of a partition into chunks of `chunk` cells (S-Partition, fixed)."""
        i = k * chunk
        return Ptr(self.region, self.off + i, self.length - i, chunk)


Value = int | np.float32 | bool | Ptr
PyValue = int | float | bool | list[int]  # a value as plain Python (`to_python`)
GlobalMemory = dict[str, list[PyValue]]  # the global arrays by name, as Python values


@dataclass(frozen=True, slots=True)
class Binding:
    """x ↦^π v: a name's value, the perspective it lives at, and its type."""

    value: Value
    persp: Perspective
    type: Type


class Region:
    """One allocation: the cells of ⟨l, n⟩ and the memory (η, σ or Σ) they live in."""

    __slots__ = ("cells", "elem", "name", "owner", "persp", "space")

    def __init__(self, cells: list[Value], elem: BaseType, space: MemKind,
                 owner: int | None, name: str, persp: Perspective):
        self.cells = cells
        self.elem = elem
        self.space = space
        self.owner = owner
        self.name = name
        self.persp = persp

    def copy(self) -> Region:
        return Region(list(self.cells), self.elem, self.space, self.owner, self.name,
                      self.persp)

    def where(self) -> str:
        """η / σ / Σ with the owner, for error messages."""
        match self.space:
            case MemKind.LOCAL:
                return f"η[t={self.owner}]"
            case MemKind.SHARED:
                return f"σ[b={self.owner}]"
            case _:
                return "Σ"


def zero(elem: BaseType) -> Value:
    match elem:
        case BaseType.INT:
            return 0
        case BaseType.FLOAT:
            return F32(0.0)
        case BaseType.BOOL:
            return False


def convert(elem: BaseType, v: int | float | bool) -> Value:
    """A literal or iota index as a value of type `elem`."""
    match elem:
        case BaseType.INT:
            return wrap32(int(v))
        case BaseType.FLOAT:
            return F32(v)
        case BaseType.BOOL:
            return bool(v)


def to_python(v: Value) -> PyValue:
    """The JSON-friendly form of a value (float32 -> the exact Python float)."""
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, Ptr):
        return [v.region, v.off, v.length]
    return v


def type_of_value(v: Value) -> BaseType | None:
    if isinstance(v, bool):
        return BaseType.BOOL
    if isinstance(v, int):
        return BaseType.INT
    if isinstance(v, np.float32):
        return BaseType.FLOAT
    return None


def array_type(elem: BaseType, mem: MemKind) -> ArrayType:
    return ArrayType(elem, mem)


def show_value(v: Value) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, np.float32):
        return repr(float(v))
    if isinstance(v, Ptr):
        return f"⟨r{v.region}+{v.off}, {v.length}⟩"
    return str(v)


class Located(Protocol):
    """Where a runtime error (Stuck, Trap, Deadlock) happened: the interpreters attach
    the thread (t, b, p), its perspective and the memory cell to the error, and
    `Machine.outcome` reads them back (`getattr`, as not every error has them)."""

    thread: tuple[int, int, int] | None
    persp: Perspective | None
    cell: str | None


def located(err: GpusemError) -> Located:
    """`err`, to attach where it happened (calculus.errors does not declare the
    attributes of `Located`: they exist once set)."""
    return cast(Located, err)
