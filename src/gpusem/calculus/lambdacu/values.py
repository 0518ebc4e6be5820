"""lambda-cu values and types (seed 002, Section 6.1, l.566-600).

    b  ::= bool | char | int | float          `Bool`, `Char`, `I32`, `F32`
    bs ::= [b1, .., bn]                       `Arr` (homogeneous, its element type)
    τ  ::= b*                                  a Python tuple of scalars
    γ  ::= a*   (a ::= b | bs)                 a Python tuple of scalars and arrays

Scalars are tagged classes rather than Python's bool/int/float, so that a bool is never
an int (Python's `bool` subclasses `int`) and every value knows its base type. Ints are
kept in the int32 range (wrapping is the primitives' job), floats are exactly binary32
values held in a Python float. "1-tuples are identified with their single element"
(6.1): a tuple value of length 1 is never built; `as_tuple` and `one` convert.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

import numpy as np
from gpusem.calculus.float32_equality import same_float32

BASES = ("bool", "char", "int", "float")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True, slots=True)
class Bool:
    value: bool

    @property
    def base(self) -> str:
        return "bool"


@dataclass(frozen=True, slots=True)
class Char:
    value: int  # an ASCII code, 0..127

    @property
    def base(self) -> str:
        return "char"


@dataclass(frozen=True, slots=True)
class I32:
    value: int

    @property
    def base(self) -> str:
        return "int"


@dataclass(frozen=True, slots=True)
class F32:
    value: float  # exactly representable in binary32

    @property
    def base(self) -> str:
        return "float"

    def same(self, other: F32) -> bool:
        """Bit-for-bit equality, except that every NaN equals every NaN; -0.0 differs
        from 0.0 (calculus/float32_equality.py, errata L13)."""
        return same_float32(self.value, other.value)


Scalar = Union[Bool, Char, I32, F32]


@dataclass(frozen=True, slots=True)
class Arr:
    """bs: an array of one base type (`elem`), possibly empty."""

    elem: str
    items: tuple[Scalar, ...]

    def __len__(self) -> int:
        return len(self.items)


Atom = Union[Scalar, Arr]  # a: a value the CPU can bind
Value = Union[Scalar, Arr, tuple["Value", ...]]


def wrap32(n: int) -> I32:
    """Two's-complement wrap into int32 (the C semantics of the primitive rules)."""
    return I32((n + 2**31) % 2**32 - 2**31)


def f32(x: float) -> F32:
    """The binary32 value nearest to x (overflow goes to an infinity, as in C)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return F32(float(np.float32(x)))


def as_tuple(v: Value) -> tuple[Value, ...]:
    return v if isinstance(v, tuple) else (v,)


def one(vs: tuple[Value, ...]) -> Value:
    """A tuple value; a 1-tuple is its element (6.1)."""
    return vs[0] if len(vs) == 1 else vs


# ------------------------------------------------------------------------- types


@dataclass(frozen=True, slots=True)
class Base:
    name: str  # one of BASES


@dataclass(frozen=True, slots=True)
class ArrayT:
    elem: str  # one of BASES


@dataclass(frozen=True, slots=True)
class TupleT:
    items: tuple[Type, ...]  # never of length 1


Type = Union[Base, ArrayT, TupleT]
BOOL, CHAR, INT, FLOAT = Base("bool"), Base("char"), Base("int"), Base("float")
UNIT = TupleT(())


def tuple_type(items: tuple[Type, ...]) -> Type:
    return items[0] if len(items) == 1 else TupleT(items)


def type_items(t: Type) -> tuple[Type, ...]:
    return t.items if isinstance(t, TupleT) else (t,)


def show_type(t: Type) -> str:
    if isinstance(t, Base):
        return t.name
    if isinstance(t, ArrayT):
        return f"[{t.elem}]"
    return "(" + ", ".join(show_type(x) for x in t.items) + ")"


def type_of(v: Value) -> Type:
    if isinstance(v, tuple):
        return tuple_type(tuple(type_of(x) for x in v))
    if isinstance(v, Arr):
        return ArrayT(v.elem)
    return Base(v.base)


# ------------------------------------------------------------------------ showing


def show_float(x: float) -> str:
    """A float literal that parses back to the same binary32 value."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(x)
    return text if ("." in text or "e" in text) else text + ".0"


def show_scalar(v: Scalar) -> str:
    if isinstance(v, Bool):
        return "true" if v.value else "false"
    if isinstance(v, Char):
        return "'" + (chr(v.value) if 32 <= v.value < 127 and chr(v.value) not in "'\\"
                      else f"\\x{v.value:02x}") + "'"
    if isinstance(v, I32):
        return str(v.value)
    return show_float(v.value)


def show_value(v: Value) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(show_value(x) for x in v) + ")"
    if isinstance(v, Arr):
        return "[" + ", ".join(show_scalar(x) for x in v.items) + "]"
    return show_scalar(v)


def to_json(v: Value) -> object:
    """Ints, bools and chars as JSON; floats as numbers, or "nan"/"inf" strings."""
    if isinstance(v, tuple):
        return [to_json(x) for x in v]
    if isinstance(v, Arr):
        return [to_json(x) for x in v.items]
    if isinstance(v, F32) and not math.isfinite(v.value):
        return show_float(v.value)
    if isinstance(v, Char):
        return chr(v.value)
    return v.value


def same_value(a: Value, b: Value) -> bool:
    """Equality with floats compared bit for bit."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(same_value(x, y) for x, y in zip(a, b)))
    if isinstance(a, Arr) or isinstance(b, Arr):
        return (isinstance(a, Arr) and isinstance(b, Arr) and a.elem == b.elem
                and len(a) == len(b)
                and all(same_value(x, y) for x, y in zip(a.items, b.items)))
    if isinstance(a, F32) and isinstance(b, F32):
        return a.same(b)
    return a == b
