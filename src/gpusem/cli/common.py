"""Argument parsing shared by the verbs (-D definitions) and the one writer of output
files; reading sources is `gpusem.calculus.source`."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from gpusem.calculus import budgets
from gpusem.calculus.errors import BadInput

INT32 = (-(2**31), 2**31 - 1)


def parse_defines(defines: tuple[str, ...]) -> dict[str, int]:
    """`-D N=256 -D M=64` -> {"N": 256, "M": 64}."""
    out: dict[str, int] = {}
    for item in defines:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise BadInput(f"bad definition: -D {item} (expected NAME=INT)")
        digits = value.removeprefix("-")
        if not (digits.isascii() and digits.isdigit()):
            raise BadInput(f"bad definition: -D {item} (value is not an integer)")
        number = budgets.check_int_literal(digits)
        out[name] = -number if value.startswith("-") else number
        if not INT32[0] <= out[name] <= INT32[1]:
            raise BadInput(f"bad definition: -D {item} (out of range: control values "
                           "are 32-bit ints)")
    return out


def write_output(path: str, text: str) -> None:
    """Write a file the user named (-o, --trace, ...); a path that cannot be written is
    one line and exit 2."""
    try:
        Path(path).write_text(text)
    except OSError as err:
        raise BadInput(f"cannot write {path}: {err.strerror or err}") from None



def open_output(path: str) -> TextIO:
    """A file the user named, open for writing (the caller closes it)."""
    try:
        return open(path, "w")
    except OSError as err:
        raise BadInput(f"cannot write {path}: {err.strerror or err}") from None
