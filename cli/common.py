"""Argument parsing shared by the verbs (-D definitions); reading sources is
`gpusem.calculus.source`."""

from __future__ import annotations

from gpusem.calculus.errors import BadInput


def parse_defines(defines: tuple[str, ...]) -> dict[str, int]:
    """`-D N=256 -D M=64` -> {"N": 256, "M": 64}."""
    out: dict[str, int] = {}
    for item in defines:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise BadInput(f"bad definition: -D {item} (expected NAME=INT)")
        try:
            out[name] = int(value)
        except ValueError:
            raise BadInput(f"bad definition: -D {item} (value is not an integer)") from None
    return out
